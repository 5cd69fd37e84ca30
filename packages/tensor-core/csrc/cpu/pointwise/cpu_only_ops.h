/* The elementwise ops of the CPU-only dtypes (Note [CPU-only dtypes] in
 * core.h) -- complex64/complex128 and uint16/32/64 -- in the form of
 * elementwise_ops.h's lists: D(OP, DC, sfx, T, C, OT, osfx, EXPR), expanded by
 * elementwise.c into the same dispatch tables.  For the complex lists R/rsfx
 * name the matching real type (abs and angle return it).
 *
 * elementwise.c includes <tgmath.h>: sqrt, log, asin, ... of a complex value
 * are C99's csqrtf/csqrt, clogf/clog, ... (float for complex64).
 * Values and branch cuts are C99 Annex G's (libm's csqrt, clog, casin, ...),
 * which NumPy and PyTorch follow: cuts along the negative real axis for sqrt
 * and log, outside [-1, 1] on the real axis for asin/acos/atanh, outside
 * [-i, i] on the imaginary axis for asinh/atan.  Functions C has no complex
 * form of are written here from those. */
#ifndef EMBER_CPU_ONLY_OPS_H
#define EMBER_CPU_ONLY_OPS_H

#include <complex.h>
#undef I

#define EC_COMPLEX_HELPERS(C, R, S)                                                     \
    /* log(1 + z) without cancellation for small |z| */                                  \
    static inline C ec_clog1p_##S(C z) {                                                 \
        R x = creal(z), y = cimag(z);                                                    \
        R re = (R)0.5 * log1p(x * ((R)2 + x) + y * y);                                   \
        /* 1 + z built from its parts: complex addition would turn -0i into +0i */       \
        if (!isfinite(re) || fabs(x) > (R)0.5 || fabs(y) > (R)0.5) return log(CMPLX((R)1 + x, y)); \
        return CMPLX(re, atan2(y, (R)1 + x));                                            \
    }                                                                                    \
    /* exp(z) - 1 = expm1(x) cos(y) - 2 sin^2(y/2) + i exp(x) sin(y) */                 \
    static inline C ec_cexpm1_##S(C z) {                                                 \
        R x = creal(z), y = cimag(z);                                                    \
        if (!isfinite(x) || !isfinite(y)) {                                              \
            C e = exp(z);                                                                \
            return CMPLX(creal(e) - (R)1, cimag(e));                                     \
        }                                                                                \
        R s = sin(y / 2);                                                                \
        return CMPLX(expm1(x) * cos(y) - 2 * s * s, exp(x) * sin(y));                   \
    }                                                                                    \
    static inline C ec_csinc_##S(C z) {                                                  \
        if (z == 0) return (C)1;                                                         \
        C pz = (R)3.14159265358979323846 * z;                                            \
        return sin(pz) / pz;                                                            \
    }                                                                                    \
    static inline C ec_csgn_##S(C z) {                                                   \
        if (z == 0) return (C)0;                                                         \
        R a = fabs(z);                                                                   \
        return CMPLX(creal(z) / a, cimag(z) / a);                                        \
    }                                                                                    \
    /* PyTorch's pow on complex: the exact forms of small integer and half         \
     * exponents, exp(b log a) otherwise; anything to the power 0 is 1 */           \
    static inline C ec_cpow_##S(C a, C b) {                                              \
        if (b == 0) return (C)1;                                                         \
        if (b == 1) return a;                                                            \
        if (b == 2) return a * a;                                                        \
        if (b == 3) return a * a * a;                                                    \
        if (b == (R)0.5) return sqrt(a);                                                \
        if (b == -1) return (C)1 / a;                                                    \
        if (b == -2) return (C)1 / (a * a);                                              \
        return pow(a, b);                                                               \
    }                                                                                    \
    /* log(exp(a) + exp(b)), shifted by the operand of larger real part */           \
    static inline C ec_clogaddexp_##S(C a, C b) {                                        \
        C m = creal(a) >= creal(b) ? a : b, o = creal(a) >= creal(b) ? b : a;           \
        if (isinf(creal(m)) && creal(m) < 0) return m;                                   \
        if (!isfinite(creal(m))) return log(exp(a) + exp(b));                         \
        return m + ec_clog1p_##S(exp(o - m));                                           \
    }

EC_COMPLEX_HELPERS(ec_c64, float, c64)
EC_COMPLEX_HELPERS(ec_c128, double, c128)

#define EC_LN2 0.693147180559945309417232121458176568
#define EC_LN10 2.30258509299404568401799145468436421

/* The real multiplier of add/sub's alpha scales both parts (no 0 * inf). */
#define EC_CALPHA(R, v) (prm->p0 == 1 ? (v) : (R)prm->p0 * (v))

#define UNARY_COMPLEX_LIST(D, DC, sfx, T, C, R, rsfx)                                   \
    D(COPY, DC, sfx, T, C, T, sfx, x)                                                   \
    D(NEG, DC, sfx, T, C, T, sfx, -x)                                                   \
    D(CONJ, DC, sfx, T, C, T, sfx, conj(x))                                             \
    D(ABS, DC, sfx, T, C, R, rsfx, fabs(x))                                             \
    D(ANGLE, DC, sfx, T, C, R, rsfx, carg(x))                                           \
    D(SGN, DC, sfx, T, C, T, sfx, ec_csgn_##sfx(x))                                     \
    D(SQUARE, DC, sfx, T, C, T, sfx, x * x)                                             \
    D(RECIPROCAL, DC, sfx, T, C, T, sfx, (C)1 / x)                                      \
    D(SQRT, DC, sfx, T, C, T, sfx, sqrt(x))                                            \
    D(RSQRT, DC, sfx, T, C, T, sfx, (C)1 / sqrt(x))                                    \
    D(EXP, DC, sfx, T, C, T, sfx, exp(x))                                              \
    D(EXP2, DC, sfx, T, C, T, sfx, exp((R)EC_LN2 * x))                                 \
    D(EXPM1, DC, sfx, T, C, T, sfx, ec_cexpm1_##sfx(x))                                 \
    D(LOG, DC, sfx, T, C, T, sfx, log(x))                                              \
    D(LOG2, DC, sfx, T, C, T, sfx, log(x) / (R)EC_LN2)                                 \
    D(LOG10, DC, sfx, T, C, T, sfx, log(x) / (R)EC_LN10)                               \
    D(LOG1P, DC, sfx, T, C, T, sfx, ec_clog1p_##sfx(x))                                 \
    D(SIN, DC, sfx, T, C, T, sfx, sin(x))                                              \
    D(COS, DC, sfx, T, C, T, sfx, cos(x))                                              \
    D(TAN, DC, sfx, T, C, T, sfx, tan(x))                                              \
    D(ASIN, DC, sfx, T, C, T, sfx, asin(x))                                            \
    D(ACOS, DC, sfx, T, C, T, sfx, acos(x))                                            \
    D(ATAN, DC, sfx, T, C, T, sfx, atan(x))                                            \
    D(SINH, DC, sfx, T, C, T, sfx, sinh(x))                                            \
    D(COSH, DC, sfx, T, C, T, sfx, cosh(x))                                            \
    D(TANH, DC, sfx, T, C, T, sfx, tanh(x))                                            \
    D(ASINH, DC, sfx, T, C, T, sfx, asinh(x))                                          \
    D(ACOSH, DC, sfx, T, C, T, sfx, acosh(x))                                          \
    D(ATANH, DC, sfx, T, C, T, sfx, atanh(x))                                          \
    D(SIGMOID, DC, sfx, T, C, T, sfx, (C)1 / ((C)1 + exp(-x)))                         \
    D(SINC, DC, sfx, T, C, T, sfx, ec_csinc_##sfx(x))                                   \
    D(ISNAN, DC, sfx, T, C, uint8_t, b, isnan(creal(x)) || isnan(cimag(x)))             \
    D(ISINF, DC, sfx, T, C, uint8_t, b, isinf(creal(x)) || isinf(cimag(x)))             \
    D(ISFINITE, DC, sfx, T, C, uint8_t, b, isfinite(creal(x)) && isfinite(cimag(x)))    \
    D(LOGICAL_NOT, DC, sfx, T, C, uint8_t, b, x == 0)                                   \
    D(POW_SCALAR, DC, sfx, T, C, T, sfx, ec_cpow_##sfx(x, (C)prm->p0))                  \
    D(RPOW_SCALAR, DC, sfx, T, C, T, sfx, ec_cpow_##sfx((C)prm->p0, x))

#define BINARY_COMPLEX_LIST(D, DC, sfx, T, C, R, rsfx)                                  \
    D(ADD, DC, sfx, T, C, T, sfx, a + EC_CALPHA(R, b))                                  \
    D(SUB, DC, sfx, T, C, T, sfx, a - EC_CALPHA(R, b))                                  \
    D(RSUB, DC, sfx, T, C, T, sfx, b - EC_CALPHA(R, a))                                 \
    D(MUL, DC, sfx, T, C, T, sfx, a * b)                                                \
    D(DIV, DC, sfx, T, C, T, sfx, a / b)                                                \
    D(RDIV, DC, sfx, T, C, T, sfx, b / a)                                               \
    D(POW, DC, sfx, T, C, T, sfx, ec_cpow_##sfx(a, b))                                  \
    D(LOGADDEXP, DC, sfx, T, C, T, sfx, ec_clogaddexp_##sfx(a, b))                      \
    D(EQ, DC, sfx, T, C, uint8_t, b, a == b)                                            \
    D(NE, DC, sfx, T, C, uint8_t, b, a != b)                                            \
    D(LOGICAL_AND, DC, sfx, T, C, uint8_t, b, a != 0 && b != 0)                         \
    D(LOGICAL_OR, DC, sfx, T, C, uint8_t, b, a != 0 || b != 0)                          \
    D(LOGICAL_XOR, DC, sfx, T, C, uint8_t, b, (a != 0) != (b != 0))

/* The wide unsigned integers: the binary ops PyTorch 2.3+ has for them. */
#define BINARY_WIDE_UINT_LIST(D, DC, sfx, T, C)                                         \
    D(MUL, DC, sfx, T, C, T, sfx, a * b)                                                \
    D(EQ, DC, sfx, T, C, uint8_t, b, a == b)                                            \
    D(NE, DC, sfx, T, C, uint8_t, b, a != b)                                            \
    D(BITWISE_AND, DC, sfx, T, C, T, sfx, a & b)                                        \
    D(BITWISE_OR, DC, sfx, T, C, T, sfx, a | b)                                         \
    D(BITWISE_XOR, DC, sfx, T, C, T, sfx, a ^ b)

#endif
