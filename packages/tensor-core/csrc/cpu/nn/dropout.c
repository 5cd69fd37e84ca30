/* Dropout: a Bernoulli keep-mask from the Philox stream and the masked scaling
 * that applies it (forward) or routes the gradient through it (backward). */
#include "nn.h"

#define DEFINE_MASKED(T, sfx)                                                              \
    static void masked_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) {      \
        T sc = (T)prm->p0;                                                                 \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 1) {                         \
            T* o = (T*)p[0];                                                               \
            const T* xp = (const T*)p[1];                                                  \
            const uint8_t* k = (const uint8_t*)p[2];                                       \
            for (int64_t i = 0; i < n; i++) o[i] = k[i] ? xp[i] * sc : (T)0;               \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            T v = *(const T*)(p[1] + i * s[1]);                                            \
            *(T*)(p[0] + i * s[0]) = *(const uint8_t*)(p[2] + i * s[2]) ? v * sc : (T)0;   \
        }                                                                                  \
    }
DEFINE_MASKED(float, f32)
DEFINE_MASKED(double, f64)

int ec_masked_scale(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x, ec_ptr keep,
                    double scale) {
    int slot = nn_slot(dtype);
    if (slot < 0) return ec_fail(EC_ERR_DTYPE, "masked_scale: no kernel for dtype %d", dtype);
    int isz[3] = {ec_itemsize[dtype], ec_itemsize[dtype], 1};
    char* base[3] = {(char*)out, (char*)x, (char*)keep};
    ec_params prm = {scale, 0, 0, 0, EC_OK};
    return ec_iterate(3, ndim, layout, isz, base, slot ? masked_f64 : masked_f32, &prm);
}

int ec_dropout(int dtype, int64_t n, double p, ec_ptr out, ec_ptr keep, ec_ptr x, uint64_t seed,
               uint64_t offset) {
    if (n < 0) return ec_fail(EC_ERR_INVALID, "dropout: negative size");
    int slot = nn_slot(dtype);
    if (slot < 0) return ec_fail(EC_ERR_DTYPE, "dropout: no kernel for dtype %d", dtype);
    int st = ec_random(EC_RNG_BERNOULLI, EC_BOOL, n, keep, seed, offset, 1.0 - p, 0, 0, 0);
    if (st) return st;
    int64_t layout[4] = {n, 1, 1, 1};
    return ec_masked_scale(dtype, 1, layout, out, x, keep, p < 1 ? 1.0 / (1.0 - p) : 0.0);
}
