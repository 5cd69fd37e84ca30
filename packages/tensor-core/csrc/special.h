/* Scalar helper functions used by the elementwise and reduction kernels.
 * Float helpers come in _float and _double forms (named after the compute type);
 * integer helpers work on int64 values (every integer dtype's values fit). */
#ifndef EMBER_CORE_SPECIAL_H
#define EMBER_CORE_SPECIAL_H

/* This header compiles as C for the CPU kernels and as CUDA C++ for NVRTC (the
 * CUDA prelude defines the fixed-width types, INFINITY and NAN there): EC_FN
 * marks a helper for either. */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EC_FN static __device__ __forceinline__
#define EC_FLOAT_BITS(x) ((uint32_t)__float_as_uint(x))
#define EC_DOUBLE_BITS(x) ((uint64_t)__double_as_longlong(x))
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#define EC_FN static inline
static inline uint32_t ec_float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline uint64_t ec_double_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
#define EC_FLOAT_BITS(x) ec_float_bits(x)
#define EC_DOUBLE_BITS(x) ec_double_bits(x)
#endif

#define EC_FLOAT_HELPERS(C, SUF)                                                       \
    /* NaN in x or in a bound gives NaN, as PyTorch; no bound is +-inf */             \
    EC_FN C ec_clamp_##C(C x, C lo, C hi) {                                            \
        if (x != x) return x;                                                          \
        if (lo != lo) return lo;                                                       \
        if (hi != hi) return hi;                                                       \
        if (x < lo) x = lo;                                                            \
        if (x > hi) x = hi;                                                            \
        return x;                                                                      \
    }                                                                                  \
    EC_FN C ec_softplus_##C(C x) { return x > 20 ? x : log1p##SUF(exp##SUF(x)); } \
    EC_FN C ec_gelu_##C(C x, int approx) {                                     \
        if (approx) {                                                                  \
            const C k = (C)0.79788456080286535587989211986876; /* sqrt(2/pi) */        \
            return (C)0.5 * x * ((C)1 + tanh##SUF(k * (x + (C)0.044715 * x * x * x)));  \
        }                                                                              \
        return (C)0.5 * x * ((C)1 + erf##SUF(x * (C)0.70710678118654752440084436210485)); \
    }                                                                                  \
    EC_FN C ec_gelu_grad_##C(C x, int approx) {                                \
        if (approx) {                                                                  \
            const C k = (C)0.79788456080286535587989211986876;                         \
            C inner = k * (x + (C)0.044715 * x * x * x);                               \
            C t = tanh##SUF(inner);                                                    \
            C dinner = k * ((C)1 + (C)3 * (C)0.044715 * x * x);                        \
            return (C)0.5 * ((C)1 + t) + (C)0.5 * x * ((C)1 - t * t) * dinner;         \
        }                                                                              \
        C cdf = (C)0.5 * ((C)1 + erf##SUF(x * (C)0.70710678118654752440084436210485)); \
        C pdf = exp##SUF((C)-0.5 * x * x) * (C)0.39894228040143267793994605993438;     \
        return cdf + x * pdf;                                                          \
    }                                                                                  \
    EC_FN C ec_pow_##C(C x, C e) {                                             \
        if (e == 2) return x * x;                                                      \
        if (e == 1) return x;                                                          \
        if (e == 3) return x * x * x;                                                  \
        if (e == (C)0.5) return sqrt##SUF(x);                                          \
        if (e == -1) return (C)1 / x;                                                  \
        if (e == -2) return (C)1 / (x * x);                                            \
        return pow##SUF(x, e);                                                         \
    }                                                                                  \
    EC_FN C ec_sinc_##C(C x) {                                                 \
        if (x == 0) return 1;                                                          \
        C px = x * (C)3.14159265358979323846264338327950;                              \
        return sin##SUF(px) / px;                                                      \
    }                                                                                  \
    /* Python's float % and //: the remainder takes the divisor's sign. */             \
    EC_FN C ec_remainder_##C(C a, C b) {                                       \
        C m = fmod##SUF(a, b);                                                         \
        if (m != 0 && ((b < 0) != (m < 0))) m += b;                                    \
        return m;                                                                      \
    }                                                                                  \
    EC_FN C ec_floordiv_##C(C a, C b) {                                        \
        if (b == 0) return a / b;                                                      \
        C m = fmod##SUF(a, b);                                                         \
        C d = (a - m) / b;                                                             \
        if (m != 0 && ((b < 0) != (m < 0))) d -= 1;                                    \
        if (d == 0) return copysign##SUF((C)0, a / b);                                 \
        C f = floor##SUF(d);                                                           \
        if (d - f > (C)0.5) f += 1;                                                    \
        return f;                                                                      \
    }                                                                                  \
    EC_FN C ec_logaddexp_##C(C a, C b) {                                       \
        if (a == b && isinf(a)) return a;                                              \
        C m = a > b ? a : b;                                                           \
        if (m != m) return m;                                                          \
        return m + log1p##SUF(exp##SUF(-fabs##SUF(a - b)));                            \
    }                                                                                  \
    EC_FN C ec_logaddexp2_##C(C a, C b) {                                              \
        if (a == b && isinf(a)) return a;                                              \
        C m = a > b ? a : b;                                                           \
        if (m != m) return m;                                                          \
        return m + log1p##SUF(exp2##SUF(-fabs##SUF(a - b))) /                          \
                       (C)0.69314718055994530941723212145818;                          \
    }

/* signbit through the bits (gcc 12's vectoriser crashes on __builtin_signbit). */
EC_FN int ec_signbit_float(float x) { return (int)(EC_FLOAT_BITS(x) >> 31); }
EC_FN int ec_signbit_double(double x) { return (int)(EC_DOUBLE_BITS(x) >> 63); }

EC_FLOAT_HELPERS(float, f)
EC_FLOAT_HELPERS(double, )

/* Inverse error function: a rational initial guess refined by Newton steps. */
EC_FN double ec_erfinv(double y) {
    if (y <= -1) return y == -1 ? -INFINITY : NAN;
    if (y >= 1) return y == 1 ? INFINITY : NAN;
    if (y != y) return y;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        x = 2.81022636e-08;
        x = 3.43273939e-07 + x * w;
        x = -3.5233877e-06 + x * w;
        x = -4.39150654e-06 + x * w;
        x = 0.00021858087 + x * w;
        x = -0.00125372503 + x * w;
        x = -0.00417768164 + x * w;
        x = 0.246640727 + x * w;
        x = 1.50140941 + x * w;
    } else {
        w = sqrt(w) - 3.0;
        x = -0.000200214257;
        x = 0.000100950558 + x * w;
        x = 0.00134934322 + x * w;
        x = -0.00367342844 + x * w;
        x = 0.00573950773 + x * w;
        x = -0.0076224613 + x * w;
        x = 0.00943887047 + x * w;
        x = 1.00167406 + x * w;
        x = 2.83297682 + x * w;
    }
    x *= y;
    for (int i = 0; i < 2; i++) { /* Newton on erf(x) - y */
        double err = erf(x) - y;
        x -= err / (1.1283791670955126 * exp(-x * x));
    }
    return x;
}

/* Digamma: recurrence up to x >= 6, then the asymptotic series; negative x by
 * reflection, psi(x) = psi(1-x) - pi cot(pi x) (no recursion: CUDA kernels use
 * this too and want a static stack size). */
EC_FN double ec_digamma(double x) {
    if (x != x || x == -INFINITY) return NAN;
    if (x == 0) return copysign(INFINITY, -x);
    double reflection = 0;
    if (x < 0) {
        if (x == floor(x)) return NAN;
        reflection = -(3.14159265358979323846 / tan(3.14159265358979323846 * x));
        x = 1.0 - x;
    }
    double r = 0;
    while (x < 6) {
        r -= 1 / x;
        x += 1;
    }
    double f = 1 / (x * x);
    double t = f * (-1.0 / 12 + f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 + f * (-1.0 / 132)))));
    return (r + log(x) - 0.5 / x + t) + reflection;
}

/* ---------------------------------------------------------------- integers */

/* min(max(x, lo), hi): with lo > hi every value becomes hi, as in PyTorch. */
EC_FN int64_t ec_clamp_i64(int64_t x, int64_t lo, int64_t hi) {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

/* Wrapping integer power by squaring; a negative b gives 1/a^-b truncated to an
 * integer (0 unless a is 1 or -1), as in PyTorch. */
EC_FN int64_t ec_ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    uint64_t result = 1, base = (uint64_t)a;
    while (b) {
        if (b & 1) result *= base;
        base *= base;
        b >>= 1;
    }
    return (int64_t)result;
}

/* b != 0 is checked by the caller; b == -1 avoids INT64_MIN / -1. */
EC_FN int64_t ec_itruncdiv(int64_t a, int64_t b) {
    return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
}
EC_FN int64_t ec_ifmod(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }
EC_FN int64_t ec_ifloordiv(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
EC_FN int64_t ec_iremainder(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

#define EC_INT_OPS_FOR(sfx, BITS)                                                      \
    EC_FN int64_t ec_ifloordiv_##sfx(int64_t a, int64_t b) { return ec_ifloordiv(a, b); } \
    EC_FN int64_t ec_itruncdiv_##sfx(int64_t a, int64_t b) { return ec_itruncdiv(a, b); } \
    EC_FN int64_t ec_iremainder_##sfx(int64_t a, int64_t b) { return ec_iremainder(a, b); } \
    EC_FN int64_t ec_ifmod_##sfx(int64_t a, int64_t b) { return ec_ifmod(a, b); }   \
    EC_FN int64_t ec_lshift_##sfx(int64_t a, int64_t b) {                     \
        return (b < 0 || b >= BITS) ? 0 : (int64_t)((uint64_t)a << b);               \
    }                                                                                  \
    EC_FN int64_t ec_rshift_##sfx(int64_t a, int64_t b) {                     \
        if (b < 0) return 0;                                                           \
        if (b >= BITS) return a < 0 ? -1 : 0;                                          \
        return a >> b;                                                                 \
    }
EC_INT_OPS_FOR(u8, 8)
EC_INT_OPS_FOR(i8, 8)
EC_INT_OPS_FOR(i16, 16)
EC_INT_OPS_FOR(i32, 32)
EC_INT_OPS_FOR(i64, 64)

#endif
