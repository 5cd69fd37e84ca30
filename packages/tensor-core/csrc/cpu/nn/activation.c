/* Activations: hardshrink/softshrink forward and the fused backward of the
 * activation family (ec_activation*), expanded from the expression lists of
 * activation_ops.h (shared with the CUDA kernels of cuda/nn_act.cuh).  Loops
 * run through ec_iterate, so any strides work and large tensors split across
 * threads. */
#include "nn.h"

#define P0 ((CT)prm->p0)
#define P1 ((CT)prm->p1)

#include "activation_ops.h"

#define DEFINE_FWD(KIND, EXPR)                                                             \
    static void fwd_##KIND##_f32(int64_t n, char** p, const int64_t* s, ec_params* prm) {  \
        typedef float CT;                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            CT x = *(const float*)(p[1] + i * s[1]);                                       \
            *(float*)(p[0] + i * s[0]) = (EXPR);                                           \
        }                                                                                  \
    }                                                                                      \
    static void fwd_##KIND##_f64(int64_t n, char** p, const int64_t* s, ec_params* prm) {  \
        typedef double CT;                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                  \
            CT x = *(const double*)(p[1] + i * s[1]);                                      \
            *(double*)(p[0] + i * s[0]) = (EXPR);                                          \
        }                                                                                  \
    }
ACT_FORWARD_LIST(DEFINE_FWD)

/* Backward loops: a contiguous fast path the compiler vectorises, else strided. */
#define DEFINE_BWD_T(KIND, EXPR, T, sfx)                                                   \
    static void bwd_##KIND##_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) { \
        typedef T CT;                                                                      \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                \
            T* o = (T*)p[0];                                                               \
            const T* gp = (const T*)p[1];                                                  \
            const T* xp = (const T*)p[2];                                                  \
            for (int64_t i = 0; i < n; i++) {                                              \
                CT g = gp[i], x = xp[i];                                                   \
                o[i] = (EXPR);                                                             \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            CT g = *(const T*)(p[1] + i * s[1]);                                           \
            CT x = *(const T*)(p[2] + i * s[2]);                                           \
            *(T*)(p[0] + i * s[0]) = (EXPR);                                               \
        }                                                                                  \
    }
#define DEFINE_BWD(KIND, EXPR) DEFINE_BWD_T(KIND, EXPR, float, f32) DEFINE_BWD_T(KIND, EXPR, double, f64)
ACT_BACKWARD_LIST(DEFINE_BWD)

#define FWD_ENTRY(KIND, EXPR) [EC_ACT_##KIND] = {fwd_##KIND##_f32, fwd_##KIND##_f64},
#define BWD_ENTRY(KIND, EXPR) [EC_ACT_##KIND] = {bwd_##KIND##_f32, bwd_##KIND##_f64},
static const ec_loop fwd_table[EC_NUM_ACT][2] = {ACT_FORWARD_LIST(FWD_ENTRY)};
static const ec_loop bwd_table[EC_NUM_ACT][2] = {ACT_BACKWARD_LIST(BWD_ENTRY)};

int ec_activation(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                  double p0, double p1) {
    int slot = nn_slot(dtype);
    if (kind < 0 || kind >= EC_NUM_ACT || slot < 0 || !fwd_table[kind][slot])
        return ec_fail(EC_ERR_DTYPE, "activation: no kernel for kind %d, dtype %d", kind, dtype);
    int isz[2] = {ec_itemsize[dtype], ec_itemsize[dtype]};
    char* base[2] = {(char*)out, (char*)x};
    ec_params prm = {p0, p1, 0, 0, EC_OK};
    return ec_iterate(2, ndim, layout, isz, base, fwd_table[kind][slot], &prm);
}

int ec_activation_backward(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr grad_in,
                           ec_ptr grad, ec_ptr x, double p0, double p1) {
    int slot = nn_slot(dtype);
    if (kind < 0 || kind >= EC_NUM_ACT || slot < 0 || !bwd_table[kind][slot])
        return ec_fail(EC_ERR_DTYPE, "activation backward: no kernel for kind %d, dtype %d", kind,
                       dtype);
    int isz[3] = {ec_itemsize[dtype], ec_itemsize[dtype], ec_itemsize[dtype]};
    char* base[3] = {(char*)grad_in, (char*)grad, (char*)x};
    ec_params prm = {p0, p1, 0, 0, EC_OK};
    return ec_iterate(3, ndim, layout, isz, base, bwd_table[kind][slot], &prm);
}
