/* Vectorised float32 exp and the activations built on it (sigmoid, silu).
 *
 * Note [Fast float32 exp]: glibc's expf is scalar, so a loop calling it runs at
 * a fraction of NumPy's SIMD speed.  v8_expf is Cephes' expf (range reduction
 * by ln 2, a degree-6 polynomial, 2^n built from its exponent bits; within 1
 * ulp of the true value) written with GCC vector extensions, eight lanes at a
 * time.  The loops are compiled twice (target_clones): for AVX2+FMA CPUs and
 * for the portable baseline (SSE2), chosen when the library loads.  The
 * polynomial is exact only for x in [EXP_LO, EXP_HI] (no overflow, no
 * subnormal scale): lanes are clamped into it, and a chunk holding any other
 * value (NaN, huge, tiny) has those elements redone with expf.
 */
#include "core.h"

/* the 8-lane helpers are always inlined, so their (non-AVX) calling convention never matters */
#pragma GCC diagnostic ignored "-Wpsabi"

#define EXP_LO -87.3f
#define EXP_HI 88.0f

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) v8f v8_load(const float* p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) void v8_store(float* p, v8f v) { memcpy(p, &v, sizeof v); }

static inline __attribute__((always_inline)) v8f v8_select(v8i mask, v8f a, v8f b) {
    return (v8f)((mask & (v8i)a) | (~mask & (v8i)b));
}

/* exp of lanes already inside [EXP_LO, EXP_HI] */
static inline __attribute__((always_inline)) v8f v8_expf(v8f x) {
    v8f fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(x / ln 2) */
    v8f r = x - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    v8f p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    v8i bits = (__builtin_convertvector(fn, v8i) + 127) << 23;
    return p * (v8f)bits;
}

/* The same polynomial for one float, and expf outside its range: tails and
 * strided loops use it so that a value does not depend on the layout. */
static inline float s_expf(float x) {
    if (!(x >= EXP_LO && x <= EXP_HI)) return expf(x);
    float fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)fn + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* Lanes outside the polynomial's range (NaN included): -1 in those lanes. */
static inline __attribute__((always_inline)) v8i v8_outside(v8f x) {
    return ~((x >= EXP_LO) & (x <= EXP_HI));
}

static inline __attribute__((always_inline)) v8f v8_clamp(v8f x) {
    const v8f lo = {EXP_LO, EXP_LO, EXP_LO, EXP_LO, EXP_LO, EXP_LO, EXP_LO, EXP_LO};
    const v8f hi = {EXP_HI, EXP_HI, EXP_HI, EXP_HI, EXP_HI, EXP_HI, EXP_HI, EXP_HI};
    x = v8_select(x < lo, lo, x);
    return v8_select(x > hi, hi, x);
}

/* FN(x) for the vector body, SCALAR(x) for the tail and fix-ups, ARG(x) the
 * argument whose range decides (x for exp, -x for sigmoid and silu). */
#define CHUNK 256

#define FAST_LOOP(NAME, FN, SCALAR, ARG)                                                     \
    __attribute__((target_clones("avx2", "default"))) static void NAME##_contig(      \
        int64_t n, float* o, const float* in) {                                               \
        float tmp[CHUNK]; /* in place, a chunk's inputs are kept for the fix-ups */           \
        int64_t i = 0;                                                                        \
        while (i + 8 <= n) {                                                                  \
            int64_t m = n - i >= CHUNK ? CHUNK : (n - i) - (n - i) % 8;                       \
            const float* src = in + i;                                                        \
            float* dst = o + i;                                                               \
            if (o == in) {                                                                    \
                memcpy(tmp, src, (size_t)m * sizeof(float));                                  \
                src = tmp;                                                                    \
            }                                                                                 \
            v8i bad = {0};                                                                    \
            for (int64_t j = 0; j < m; j += 8) {                                              \
                v8f x = v8_load(src + j);                                                     \
                v8f a = ARG(x);                                                               \
                bad |= v8_outside(a);                                                         \
                v8_store(dst + j, FN(x, v8_expf(v8_clamp(a))));                               \
            }                                                                                 \
            int any = 0;                                                                      \
            for (int k = 0; k < 8; k++) any |= bad[k];                                        \
            if (any) /* rare: redo the chunk's out-of-range elements exactly */                \
                for (int64_t j = 0; j < m; j++) {                                             \
                    float a = ARG(src[j]);                                                    \
                    if (!(a >= EXP_LO && a <= EXP_HI)) dst[j] = SCALAR(src[j]);               \
                }                                                                             \
            i += m;                                                                           \
        }                                                                                     \
        for (; i < n; i++) o[i] = SCALAR(in[i]);                                              \
    }                                                                                         \
    void NAME(int64_t n, char** p, const int64_t* s, ec_params* prm) {                        \
        (void)prm;                                                                            \
        if (s[0] == 4 && s[1] == 4 && (p[0] == p[1] || p[0] + 4 * n <= p[1] ||               \
                                       p[1] + 4 * n <= p[0])) {                               \
            NAME##_contig(n, (float*)p[0], (const float*)p[1]);                               \
            return;                                                                           \
        }                                                                                     \
        for (int64_t i = 0; i < n; i++)                                                       \
            *(float*)(p[0] + i * s[0]) = SCALAR(*(const float*)(p[1] + i * s[1]));            \
    }

#define ARG_X(x) (x)
#define ARG_NEG(x) (-(x))
#define EXP_OF(x, e) (e)
#define SIGMOID_OF(x, e) (1.0f / (1.0f + (e)))
#define SILU_OF(x, e) ((x) / (1.0f + (e)))
#define EXP_SCALAR(x) s_expf(x)
#define SIGMOID_SCALAR(x) (1.0f / (1.0f + s_expf(-(x))))
#define SILU_SCALAR(x) ((x) / (1.0f + s_expf(-(x))))

FAST_LOOP(ec_loop_exp_f32, EXP_OF, EXP_SCALAR, ARG_X)
FAST_LOOP(ec_loop_sigmoid_f32, SIGMOID_OF, SIGMOID_SCALAR, ARG_NEG)
FAST_LOOP(ec_loop_silu_f32, SILU_OF, SILU_SCALAR, ARG_NEG)
