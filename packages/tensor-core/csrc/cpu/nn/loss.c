/* Negative log likelihood over class dim 1 of (n, c, s) log-probabilities and
 * its backward (ec_nll_loss*), and the fused cross entropy of 2-D logits
 * (ec_cross_entropy*, cross_entropy.inc).  The pointwise losses are
 * compositions of elementwise ops. */
#include "nn.h"

#define T float
#define SFX _f32
#define EXP nn_expf
#define LOG logf
#include "cross_entropy.inc"
#undef T
#undef SFX
#undef EXP
#undef LOG

#define T double
#define SFX _f64
#define EXP exp
#define LOG log
#include "cross_entropy.inc"
#undef T
#undef SFX
#undef EXP
#undef LOG

/* The class of target element k, or -1 when ignored; -2 when out of range. */
static inline int64_t nll_class(const int64_t* target, int64_t k, int64_t c, int64_t ignore) {
    int64_t t = target[k];
    if (t == ignore) return -1;
    if (t < 0 || t >= c) return -2;
    return t;
}

static int bad_target(const int64_t* target, int64_t n_targets, int64_t c, int64_t ignore) {
    for (int64_t k = 0; k < n_targets; k++)
        if (nll_class(target, k, c, ignore) == -2)
            return ec_fail(EC_ERR_INDEX, "Target %lld is out of bounds.", (long long)target[k]);
    return EC_OK;
}

#define NLL_BODY(T)                                                                        \
    {                                                                                      \
        const T* xp = (const T*)x;                                                         \
        const T* wp = (const T*)weight;                                                    \
        T* op = (T*)out;                                                                   \
        if (reduction == 0) {                                                              \
            for (int64_t i = 0; i < n; i++)                                                \
                for (int64_t j = 0; j < s; j++) {                                          \
                    int64_t t = nll_class(tp, i * s + j, c, ignore_index);                 \
                    op[i * s + j] = t < 0 ? (T)0                                           \
                                          : -xp[(i * c + t) * s + j] * (wp ? wp[t] : (T)1); \
                }                                                                          \
            return EC_OK;                                                                  \
        }                                                                                  \
        double total = 0, tw = 0;                                                          \
        for (int64_t i = 0; i < n; i++)                                                    \
            for (int64_t j = 0; j < s; j++) {                                              \
                int64_t t = nll_class(tp, i * s + j, c, ignore_index);                     \
                if (t < 0) continue;                                                       \
                double wt = wp ? (double)wp[t] : 1.0;                                      \
                total -= (double)xp[(i * c + t) * s + j] * wt;                             \
                tw += wt;                                                                  \
            }                                                                              \
        op[0] = (T)(reduction == 1 ? total / tw : total);                                  \
        ((T*)total_weight)[0] = (T)tw;                                                     \
        return EC_OK;                                                                      \
    }

int ec_nll_loss(int dtype, int64_t n, int64_t c, int64_t s, int reduction, int64_t ignore_index,
                ec_ptr out, ec_ptr total_weight, ec_ptr x, ec_ptr target, ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0) return ec_fail(EC_ERR_INVALID, "nll_loss: negative size");
    const int64_t* tp = (const int64_t*)target;
    int st = bad_target(tp, n * s, c, ignore_index);
    if (st) return st;
    if (dtype == EC_FLOAT32) NLL_BODY(float)
    if (dtype == EC_FLOAT64) NLL_BODY(double)
    return ec_fail(EC_ERR_DTYPE, "nll_loss: no kernel for dtype %d", dtype);
}

#define NLL_BACK_BODY(T)                                                                   \
    {                                                                                      \
        T* gi = (T*)grad_in;                                                               \
        const T* gp = (const T*)grad;                                                      \
        const T* wp = (const T*)weight;                                                    \
        memset(gi, 0, sizeof(T) * (size_t)(n * c * s));                                    \
        double scale = 1.0;                                                                \
        if (reduction == 1) {                                                              \
            double tw = 0;                                                                 \
            for (int64_t k = 0; k < n * s; k++) {                                          \
                int64_t t = nll_class(tp, k, c, ignore_index);                             \
                if (t >= 0) tw += wp ? (double)wp[t] : 1.0;                                \
            }                                                                              \
            scale = 1.0 / tw;                                                              \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++)                                                    \
            for (int64_t j = 0; j < s; j++) {                                              \
                int64_t t = nll_class(tp, i * s + j, c, ignore_index);                     \
                if (t < 0) continue;                                                       \
                double gv = reduction == 0 ? (double)gp[i * s + j] : (double)gp[0] * scale;  \
                gi[(i * c + t) * s + j] = (T)(-gv * (wp ? (double)wp[t] : 1.0));           \
            }                                                                              \
        return EC_OK;                                                                      \
    }

int ec_nll_loss_backward(int dtype, int64_t n, int64_t c, int64_t s, int reduction,
                         int64_t ignore_index, ec_ptr grad_in, ec_ptr grad, ec_ptr target,
                         ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0) return ec_fail(EC_ERR_INVALID, "nll_loss backward: negative size");
    const int64_t* tp = (const int64_t*)target;
    int st = bad_target(tp, n * s, c, ignore_index);
    if (st) return st;
    if (dtype == EC_FLOAT32) NLL_BACK_BODY(float)
    if (dtype == EC_FLOAT64) NLL_BACK_BODY(double)
    return ec_fail(EC_ERR_DTYPE, "nll_loss backward: no kernel for dtype %d", dtype);
}

int ec_cross_entropy(int dtype, int64_t n, int64_t c, int reduction, int64_t ignore_index,
                     ec_ptr out, ec_ptr total_weight, ec_ptr lse, ec_ptr x, ec_ptr target,
                     ec_ptr weight) {
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "cross_entropy: negative size");
    const int64_t* tp = (const int64_t*)target;
    int st = bad_target(tp, n, c, ignore_index);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return cross_entropy_f32(n, c, reduction, ignore_index, (float*)out, (float*)total_weight,
                                 (float*)lse, (const float*)x, tp, (const float*)weight);
    if (dtype == EC_FLOAT64)
        return cross_entropy_f64(n, c, reduction, ignore_index, (double*)out,
                                 (double*)total_weight, (double*)lse, (const double*)x, tp,
                                 (const double*)weight);
    return ec_fail(EC_ERR_DTYPE, "cross_entropy: no kernel for dtype %d", dtype);
}

int ec_cross_entropy_backward(int dtype, int64_t n, int64_t c, int reduction, int64_t ignore_index,
                              ec_ptr grad_in, ec_ptr grad, ec_ptr lse, ec_ptr x, ec_ptr target,
                              ec_ptr weight) {
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "cross_entropy backward: negative size");
    const int64_t* tp = (const int64_t*)target;
    int st = bad_target(tp, n, c, ignore_index);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return cross_entropy_backward_f32(n, c, reduction, ignore_index, (float*)grad_in,
                                          (const float*)grad, (const float*)lse, (const float*)x,
                                          tp, (const float*)weight);
    if (dtype == EC_FLOAT64)
        return cross_entropy_backward_f64(n, c, reduction, ignore_index, (double*)grad_in,
                                          (const double*)grad, (const double*)lse,
                                          (const double*)x, tp, (const double*)weight);
    return ec_fail(EC_ERR_DTYPE, "cross_entropy backward: no kernel for dtype %d", dtype);
}
