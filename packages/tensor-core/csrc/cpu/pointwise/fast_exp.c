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

/* Note [Fast float32 tanh and erf]
 * tanh, erf and the exact and tanh-approximated GELU of float32, like exp
 * above: eight lanes at a time with GCC vector extensions, compiled for
 * AVX2+FMA and the baseline.  libm's
 * tanhf and erff are scalar and cost five to ten times NumPy's or PyTorch's
 * SIMD loops -- the activations of character-level models and LSTMs.
 *   tanh  |x| < 0.625: Cephes' tanhf polynomial, x + x^3 P(x^2); else
 *         (1 - e) / (1 + e) with e = exp(-2|x|), the sign of x.
 *   erf   |x| < 1: Cephes' erff polynomial, x T(x^2); else 1 - erfc(|x|),
 *         the sign of x, with erfc(z) = t exp(-z^2 + R(t)), t = 1 / (1 + z/2)
 *         (the Chebyshev fit of Numerical Recipes' erfcc, relative error
 *         below 1.2e-7).
 * exp's argument is clamped into the polynomial's range: where it would leave
 * it, the clamped exp is below 1e-37 and changes no result.  NaN propagates.
 * Tails and strided loops use the same formulas one element at a time, so a
 * value never depends on the layout. */

#define TANH_SMALL 0.625f

static inline __attribute__((always_inline)) v8f v8_abs(v8f x) {
    return (v8f)((v8i)x & 0x7fffffff);
}

static inline __attribute__((always_inline)) v8f v8_with_sign(v8f mag, v8f x) {
    return (v8f)((v8i)mag | ((v8i)x & (int32_t)0x80000000));
}

static inline __attribute__((always_inline)) v8f v8_tanhf(v8f x) {
    v8f ax = v8_abs(x);
    v8f z = x * x;
    v8f p = (((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
             1.33314422036e-1f) * z - 3.33332819422e-1f;
    v8f small = p * z * x + x;
    v8f e = v8_expf(v8_clamp(-2.0f * ax));
    v8f big = v8_with_sign((1.0f - e) / (1.0f + e), x);
    return v8_select(ax < TANH_SMALL, small, big);
}

static inline __attribute__((always_inline)) v8f v8_erff(v8f x) {
    v8f ax = v8_abs(x);
    v8f z = x * x;
    v8f p = ((((((7.853861353153693e-5f * z - 8.010193625184903e-4f) * z +
                 5.188327685732524e-3f) * z - 2.685381193529856e-2f) * z +
               1.128358514861418e-1f) * z - 3.761262582423300e-1f) * z +
             1.128379165726710f);
    v8f small = x * p;
    v8f t = 1.0f / (1.0f + 0.5f * ax);
    v8f r = -1.26551223f +
            t * (1.00002368f +
                 t * (0.37409196f +
                      t * (0.09678418f +
                           t * (-0.18628806f +
                                t * (0.27886807f +
                                     t * (-1.13520398f +
                                          t * (1.48851587f +
                                               t * (-0.82215223f + t * 0.17087277f))))))));
    v8f erfc = t * v8_expf(v8_clamp(r - z));
    v8f big = v8_with_sign(1.0f - erfc, x);
    return v8_select(ax < 1.0f, small, big);
}

static inline float s_clampf(float a) { return a < EXP_LO ? EXP_LO : a > EXP_HI ? EXP_HI : a; }

static inline float s_tanhf(float x) {
    float ax = fabsf(x);
    if (ax < TANH_SMALL) {
        float z = x * x;
        float p = (((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                   1.33314422036e-1f) * z - 3.33332819422e-1f;
        return p * z * x + x;
    }
    float a = -2.0f * ax;
    float e = a == a ? s_expf(s_clampf(a)) : a;
    return copysignf((1.0f - e) / (1.0f + e), x);
}

static inline float s_erff(float x) {
    float ax = fabsf(x);
    float z = x * x;
    if (ax < 1.0f) {
        float p = ((((((7.853861353153693e-5f * z - 8.010193625184903e-4f) * z +
                       5.188327685732524e-3f) * z - 2.685381193529856e-2f) * z +
                     1.128358514861418e-1f) * z - 3.761262582423300e-1f) * z +
                   1.128379165726710f);
        return x * p;
    }
    float t = 1.0f / (1.0f + 0.5f * ax);
    float r = -1.26551223f +
              t * (1.00002368f +
                   t * (0.37409196f +
                        t * (0.09678418f +
                             t * (-0.18628806f +
                                  t * (0.27886807f +
                                       t * (-1.13520398f +
                                            t * (1.48851587f +
                                                 t * (-0.82215223f + t * 0.17087277f))))))));
    float a = r - z;
    float erfc = t * (a == a ? s_expf(s_clampf(a)) : a);
    return copysignf(1.0f - erfc, x);
}

#define GELU_K 0.79788456080286535587989211986876f  /* sqrt(2 / pi) */
#define GELU_C 0.044715f
#define SQRT1_2 0.70710678118654752440084436210485f

/* The loops: V(x) on vectors, S(x) on one float; `approx` is GELU's tanh flag. */
#define MATH_LOOP(NAME, V, S)                                                                 \
    __attribute__((target_clones("avx2", "default"))) static void NAME##_contig(             \
        int64_t n, float* o, const float* in, int approx) {                                  \
        int64_t i = 0;                                                                       \
        for (; i + 8 <= n; i += 8) v8_store(o + i, V(v8_load(in + i)));                      \
        for (; i < n; i++) o[i] = S(in[i]);                                                  \
    }                                                                                        \
    void NAME(int64_t n, char** p, const int64_t* s, ec_params* prm) {                       \
        int approx = prm != NULL && prm->p0 != 0;                                            \
        if (s[0] == 4 && s[1] == 4 && (p[0] == p[1] || p[0] + 4 * n <= p[1] ||              \
                                       p[1] + 4 * n <= p[0])) {                              \
            NAME##_contig(n, (float*)p[0], (const float*)p[1], approx);                      \
            return;                                                                          \
        }                                                                                    \
        for (int64_t i = 0; i < n; i++)                                                      \
            *(float*)(p[0] + i * s[0]) = S(*(const float*)(p[1] + i * s[1]));                \
    }

#define V_GELU(x)                                                                       \
    (approx ? 0.5f * (x) * (1.0f + v8_tanhf(GELU_K * ((x) + GELU_C * (x) * (x) * (x)))) \
            : 0.5f * (x) * (1.0f + v8_erff((x) * SQRT1_2)))
#define S_GELU(x)                                                                       \
    (approx ? 0.5f * (x) * (1.0f + s_tanhf(GELU_K * ((x) + GELU_C * (x) * (x) * (x)))) \
            : 0.5f * (x) * (1.0f + s_erff((x) * SQRT1_2)))

#define V_TANH(x) v8_tanhf(x)
#define S_TANH(x) s_tanhf(x)
#define V_ERF(x) v8_erff(x)
#define S_ERF(x) s_erff(x)

MATH_LOOP(ec_loop_tanh_f32, V_TANH, S_TANH)
MATH_LOOP(ec_loop_erf_f32, V_ERF, S_ERF)
MATH_LOOP(ec_loop_gelu_f32, V_GELU, S_GELU)
