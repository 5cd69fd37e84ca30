/* The elementwise ops' expressions, written once for every backend.
 *
 * Each op is one line: D(OP, DC, sfx, T, C, OT, osfx, EXPR) -- its name (the
 * EC_U_/EC_B_/EC_T_ code without prefix), the dtype code, suffix, storage and
 * compute types it is expanded for, the output's storage type and suffix, and an
 * expression in `x` (unary), `a`, `b` (binary) or `a`, `b`, `c` (ternary) of the
 * compute type C (float for float16/bfloat16/float32, double for float64, the
 * integer type itself otherwise).  Inside EXPR, `prm` points at the call's
 * ec_params and CT is the compute type.
 *
 * The CPU kernels (elementwise.c) and the CUDA kernels (cuda/elementwise.cuh,
 * compiled by NVRTC) expand the same lists, so an op's value is defined in one
 * place; helper functions come from special.h, which compiles for both.
 * Integer division by zero sets prm->status (the CPU reports it; on CUDA the
 * result is 0 and nothing is reported, as a kernel cannot raise).
 */
#ifndef EMBER_ELEMENTWISE_OPS_H
#define EMBER_ELEMENTWISE_OPS_H

/* Parameters in the compute type. */
#define P0 ((CT)prm->p0)
#define P1 ((CT)prm->p1)
#define I0 ((CT)prm->i0)
#define ZDIV(expr) (b == 0 ? (prm->status = EC_ERR_ZERO_DIV, (CT)0) : (expr))

/* ------------------------------------------------------------ conversion */

/* A value converted from a source compute value to a destination compute value,
 * by kinds (B bool, I integer, F floating): only float -> integer needs care
 * (see ec_f2i64).  Used as EC_CONV_<dst kind>_<src kind>(v) by the casts. */
#define EC_CONV_I_F(v) ec_f2i64(v)
#define EC_CONV_I_I(v) (v)
#define EC_CONV_I_B(v) (v)
#define EC_CONV_F_F(v) (v)
#define EC_CONV_F_I(v) (v)
#define EC_CONV_F_B(v) (v)
#define EC_CONV_B_F(v) (v)
#define EC_CONV_B_I(v) (v)
#define EC_CONV_B_B(v) (v)

/* ---------------------------------------------------------------- unary */

/* D(OP, DC, sfx, T, C, OT, osfx, EXPR) */
#define UNARY_FLOAT_LIST(D, DC, sfx, T, C)                                               \
    D(COPY, DC, sfx, T, C, T, sfx, x)                                                    \
    D(NEG, DC, sfx, T, C, T, sfx, -x)                                                    \
    D(ABS, DC, sfx, T, C, T, sfx, fabs(x))                                               \
    D(SIGN, DC, sfx, T, C, T, sfx, (x > 0 ? (C)1 : (x < 0 ? (C)-1 : x * 0)))             \
    D(SQUARE, DC, sfx, T, C, T, sfx, x * x)                                              \
    D(RECIPROCAL, DC, sfx, T, C, T, sfx, (C)1 / x)                                       \
    D(SQRT, DC, sfx, T, C, T, sfx, sqrt(x))                                              \
    D(RSQRT, DC, sfx, T, C, T, sfx, (C)1 / sqrt(x))                                      \
    D(EXP, DC, sfx, T, C, T, sfx, exp(x))                                                \
    D(EXP2, DC, sfx, T, C, T, sfx, exp2(x))                                              \
    D(EXPM1, DC, sfx, T, C, T, sfx, expm1(x))                                            \
    D(LOG, DC, sfx, T, C, T, sfx, log(x))                                                \
    D(LOG2, DC, sfx, T, C, T, sfx, log2(x))                                              \
    D(LOG10, DC, sfx, T, C, T, sfx, log10(x))                                            \
    D(LOG1P, DC, sfx, T, C, T, sfx, log1p(x))                                            \
    D(SIN, DC, sfx, T, C, T, sfx, sin(x))                                                \
    D(COS, DC, sfx, T, C, T, sfx, cos(x))                                                \
    D(TAN, DC, sfx, T, C, T, sfx, tan(x))                                                \
    D(ASIN, DC, sfx, T, C, T, sfx, asin(x))                                              \
    D(ACOS, DC, sfx, T, C, T, sfx, acos(x))                                              \
    D(ATAN, DC, sfx, T, C, T, sfx, atan(x))                                              \
    D(SINH, DC, sfx, T, C, T, sfx, sinh(x))                                              \
    D(COSH, DC, sfx, T, C, T, sfx, cosh(x))                                              \
    D(TANH, DC, sfx, T, C, T, sfx, tanh(x))                                              \
    D(ASINH, DC, sfx, T, C, T, sfx, asinh(x))                                            \
    D(ACOSH, DC, sfx, T, C, T, sfx, acosh(x))                                            \
    D(ATANH, DC, sfx, T, C, T, sfx, atanh(x))                                            \
    D(SIGMOID, DC, sfx, T, C, T, sfx, (C)1 / ((C)1 + exp(-x)))                           \
    D(RELU, DC, sfx, T, C, T, sfx, (x > 0 || x != x) ? x : (C)0)                         \
    D(GELU, DC, sfx, T, C, T, sfx, ec_gelu_##C(x, prm->p0 != 0))                         \
    D(SILU, DC, sfx, T, C, T, sfx, x / ((C)1 + exp(-x)))                                 \
    D(SOFTPLUS, DC, sfx, T, C, T, sfx,                                                   \
      (x * P0 > P1) ? x : log1p(exp(x * P0)) / P0)                                        \
    D(ERF, DC, sfx, T, C, T, sfx, erf(x))                                                \
    D(ERFC, DC, sfx, T, C, T, sfx, erfc(x))                                              \
    D(ERFINV, DC, sfx, T, C, T, sfx, (C)ec_erfinv((double)x))                            \
    D(FLOOR, DC, sfx, T, C, T, sfx, floor(x))                                            \
    D(CEIL, DC, sfx, T, C, T, sfx, ceil(x))                                              \
    D(ROUND, DC, sfx, T, C, T, sfx, nearbyint(x))                                        \
    D(TRUNC, DC, sfx, T, C, T, sfx, trunc(x))                                            \
    D(FRAC, DC, sfx, T, C, T, sfx, x - trunc(x))                                         \
    D(ISNAN, DC, sfx, T, C, uint8_t, b, x != x)                                          \
    D(ISINF, DC, sfx, T, C, uint8_t, b, fabs(x) == (C)INFINITY)                          \
    D(ISFINITE, DC, sfx, T, C, uint8_t, b, x - x == 0)                                   \
    D(LOGICAL_NOT, DC, sfx, T, C, uint8_t, b, x == 0)                                    \
    D(CLAMP, DC, sfx, T, C, T, sfx, ec_clamp_##C(x, P0, P1))                             \
    D(POW_SCALAR, DC, sfx, T, C, T, sfx, ec_pow_##C(x, P0))                              \
    D(RPOW_SCALAR, DC, sfx, T, C, T, sfx, pow(P0, x))                                    \
    D(LEAKY_RELU, DC, sfx, T, C, T, sfx, x > 0 ? x : x * P0)                             \
    D(ELU, DC, sfx, T, C, T, sfx, x > 0 ? P1 * x : P1 * P0 * expm1(x))                   \
    D(HARDTANH, DC, sfx, T, C, T, sfx, ec_clamp_##C(x, P0, P1))                          \
    D(HARDSIGMOID, DC, sfx, T, C, T, sfx, ec_clamp_##C(x / 6 + (C)0.5, 0, 1))            \
    D(HARDSWISH, DC, sfx, T, C, T, sfx, x * ec_clamp_##C(x / 6 + (C)0.5, 0, 1))          \
    D(MISH, DC, sfx, T, C, T, sfx, x * tanh(ec_softplus_##C(x)))                         \
    D(SOFTSIGN, DC, sfx, T, C, T, sfx, x / ((C)1 + fabs(x)))                             \
    D(LOGSIGMOID, DC, sfx, T, C, T, sfx, (x < 0 ? x : (C)0) - log1p(exp(-fabs(x))))      \
    D(LGAMMA, DC, sfx, T, C, T, sfx, lgamma(x))                                          \
    D(DIGAMMA, DC, sfx, T, C, T, sfx, (C)ec_digamma((double)x))                          \
    D(SIGNBIT, DC, sfx, T, C, uint8_t, b, ec_signbit_##C(x))                               \
    D(NAN_TO_NUM, DC, sfx, T, C, T, sfx,                                                 \
      x != x ? P0 : (x == (C)INFINITY ? P1 : (x == -(C)INFINITY ? -P1 : x)))              \
    D(CELU, DC, sfx, T, C, T, sfx, x > 0 ? x : P0 * expm1(x / P0))                       \
    D(SELU, DC, sfx, T, C, T, sfx,                                                       \
      (C)1.0507009873554804934193349852946 *                                              \
          (x > 0 ? x : (C)1.6732632423543772848170429916717 * expm1(x)))                  \
    D(THRESHOLD, DC, sfx, T, C, T, sfx, x <= P0 ? P1 : x) /* NaN: x, as PyTorch */        \
    D(SINC, DC, sfx, T, C, T, sfx, ec_sinc_##C(x))                                       \
    D(DEG2RAD, DC, sfx, T, C, T, sfx, x * (C)0.017453292519943295769236907684886)       \
    D(RAD2DEG, DC, sfx, T, C, T, sfx, x * (C)57.295779513082320876798154814105)         \
    D(GELU_BACKWARD_COEF, DC, sfx, T, C, T, sfx, ec_gelu_grad_##C(x, prm->p0 != 0))

#define UNARY_INT_LIST(D, DC, sfx, T, C)                                                 \
    D(COPY, DC, sfx, T, C, T, sfx, x)                                                    \
    D(NEG, DC, sfx, T, C, T, sfx, -x)                                                    \
    D(ABS, DC, sfx, T, C, T, sfx, x < 0 ? -x : x)                                        \
    D(SIGN, DC, sfx, T, C, T, sfx, (x > 0) - (x < 0))                                    \
    D(SQUARE, DC, sfx, T, C, T, sfx, x * x)                                              \
    D(RELU, DC, sfx, T, C, T, sfx, x > 0 ? x : 0)                                        \
    D(FLOOR, DC, sfx, T, C, T, sfx, x)                                                   \
    D(CEIL, DC, sfx, T, C, T, sfx, x)                                                    \
    D(ROUND, DC, sfx, T, C, T, sfx, x)                                                   \
    D(TRUNC, DC, sfx, T, C, T, sfx, x)                                                   \
    D(ISNAN, DC, sfx, T, C, uint8_t, b, 0)                                               \
    D(ISINF, DC, sfx, T, C, uint8_t, b, 0)                                               \
    D(ISFINITE, DC, sfx, T, C, uint8_t, b, 1)                                            \
    D(SIGNBIT, DC, sfx, T, C, uint8_t, b, x < 0)                                         \
    D(LOGICAL_NOT, DC, sfx, T, C, uint8_t, b, x == 0)                                    \
    D(BITWISE_NOT, DC, sfx, T, C, T, sfx, ~x)                                            \
    D(CLAMP, DC, sfx, T, C, T, sfx, ec_clamp_i64(x, prm->i0, prm->i1))                   \
    D(POW_SCALAR, DC, sfx, T, C, T, sfx, ec_ipow(x, prm->i0))                            \
    D(THRESHOLD, DC, sfx, T, C, T, sfx, x > prm->i0 ? x : prm->i1)                       \
    D(NAN_TO_NUM, DC, sfx, T, C, T, sfx, x)

#define UNARY_BOOL_LIST(D, DC, sfx, T, C)                                                \
    D(COPY, DC, sfx, T, C, T, sfx, x)                                                    \
    D(LOGICAL_NOT, DC, sfx, T, C, uint8_t, b, !x)                                        \
    D(BITWISE_NOT, DC, sfx, T, C, uint8_t, b, !x)                                        \
    D(ISNAN, DC, sfx, T, C, uint8_t, b, 0)                                               \
    D(ISINF, DC, sfx, T, C, uint8_t, b, 0)                                               \
    D(ISFINITE, DC, sfx, T, C, uint8_t, b, 1)                                            \
    D(SIGNBIT, DC, sfx, T, C, uint8_t, b, 0)                                             \
    D(FLOOR, DC, sfx, T, C, T, sfx, x)                                                   \
    D(CEIL, DC, sfx, T, C, T, sfx, x)                                                    \
    D(ROUND, DC, sfx, T, C, T, sfx, x)                                                   \
    D(TRUNC, DC, sfx, T, C, T, sfx, x)                                                   \
    D(SIGN, DC, sfx, T, C, T, sfx, x)

/* --------------------------------------------------------------- binary */

#define BINARY_FLOAT_LIST(D, DC, sfx, T, C)                                              \
    D(ADD, DC, sfx, T, C, T, sfx, a + P0 * b)                                            \
    D(SUB, DC, sfx, T, C, T, sfx, a - P0 * b)                                            \
    D(MUL, DC, sfx, T, C, T, sfx, a * b)                                                 \
    D(DIV, DC, sfx, T, C, T, sfx, a / b)                                                 \
    D(FLOOR_DIV, DC, sfx, T, C, T, sfx, ec_floordiv_##C(a, b))                           \
    D(TRUNC_DIV, DC, sfx, T, C, T, sfx, trunc(a / b))                                    \
    D(REMAINDER, DC, sfx, T, C, T, sfx, ec_remainder_##C(a, b))                          \
    D(FMOD, DC, sfx, T, C, T, sfx, fmod(a, b))                                           \
    D(POW, DC, sfx, T, C, T, sfx, pow(a, b))                                             \
    D(MAXIMUM, DC, sfx, T, C, T, sfx, a != a ? a : (b != b ? b : (a > b ? a : b)))       \
    D(MINIMUM, DC, sfx, T, C, T, sfx, a != a ? a : (b != b ? b : (a < b ? a : b)))       \
    D(FMAX, DC, sfx, T, C, T, sfx, fmax(a, b))                                           \
    D(FMIN, DC, sfx, T, C, T, sfx, fmin(a, b))                                           \
    D(ATAN2, DC, sfx, T, C, T, sfx, atan2(a, b))                                         \
    D(HYPOT, DC, sfx, T, C, T, sfx, hypot(a, b))                                         \
    D(COPYSIGN, DC, sfx, T, C, T, sfx, copysign(a, b))                                   \
    D(EQ, DC, sfx, T, C, uint8_t, b, a == b)                                             \
    D(NE, DC, sfx, T, C, uint8_t, b, a != b)                                             \
    D(LT, DC, sfx, T, C, uint8_t, b, a < b)                                              \
    D(LE, DC, sfx, T, C, uint8_t, b, a <= b)                                             \
    D(GT, DC, sfx, T, C, uint8_t, b, a > b)                                              \
    D(GE, DC, sfx, T, C, uint8_t, b, a >= b)                                             \
    D(LOGICAL_AND, DC, sfx, T, C, uint8_t, b, (a != 0) & (b != 0))                       \
    D(LOGICAL_OR, DC, sfx, T, C, uint8_t, b, (a != 0) | (b != 0))                        \
    D(LOGICAL_XOR, DC, sfx, T, C, uint8_t, b, (a != 0) ^ (b != 0))                       \
    D(XLOGY, DC, sfx, T, C, T, sfx, b != b ? b : (a == 0 ? (C)0 : a * log(b)))           \
    D(RSUB, DC, sfx, T, C, T, sfx, b - P0 * a)                                           \
    D(RDIV, DC, sfx, T, C, T, sfx, b / a)                                                \
    D(LOGADDEXP, DC, sfx, T, C, T, sfx, ec_logaddexp_##C(a, b))                          \
    D(LOGADDEXP2, DC, sfx, T, C, T, sfx, ec_logaddexp2_##C(a, b))                        \
    D(NEXTAFTER, DC, sfx, T, C, T, sfx, nextafter(a, b))                                 \
    D(SIGMOID_BACKWARD, DC, sfx, T, C, T, sfx, a * b * ((C)1 - b))                       \
    D(TANH_BACKWARD, DC, sfx, T, C, T, sfx, a * ((C)1 - b * b))                          \
    D(RELU_BACKWARD, DC, sfx, T, C, T, sfx, b <= 0 ? (C)0 : a)                           \
    D(THRESHOLD_BACKWARD, DC, sfx, T, C, T, sfx, b <= P0 ? (C)0 : a)


#define BINARY_INT_LIST(D, DC, sfx, T, C)                                                \
    D(ADD, DC, sfx, T, C, T, sfx, a + I0 * b)                                            \
    D(SUB, DC, sfx, T, C, T, sfx, a - I0 * b)                                            \
    D(MUL, DC, sfx, T, C, T, sfx, a * b)                                                 \
    D(FLOOR_DIV, DC, sfx, T, C, T, sfx, ZDIV(ec_ifloordiv_##sfx(a, b)))                  \
    D(TRUNC_DIV, DC, sfx, T, C, T, sfx, ZDIV(ec_itruncdiv_##sfx(a, b)))                  \
    D(REMAINDER, DC, sfx, T, C, T, sfx, ZDIV(ec_iremainder_##sfx(a, b)))                 \
    D(FMOD, DC, sfx, T, C, T, sfx, ZDIV(ec_ifmod_##sfx(a, b)))                           \
    D(POW, DC, sfx, T, C, T, sfx, (C)ec_ipow(a, b))                                     \
    D(MAXIMUM, DC, sfx, T, C, T, sfx, a > b ? a : b)                                     \
    D(MINIMUM, DC, sfx, T, C, T, sfx, a < b ? a : b)                                     \
    D(FMAX, DC, sfx, T, C, T, sfx, a > b ? a : b)                                        \
    D(FMIN, DC, sfx, T, C, T, sfx, a < b ? a : b)                                        \
    D(EQ, DC, sfx, T, C, uint8_t, b, a == b)                                             \
    D(NE, DC, sfx, T, C, uint8_t, b, a != b)                                             \
    D(LT, DC, sfx, T, C, uint8_t, b, a < b)                                              \
    D(LE, DC, sfx, T, C, uint8_t, b, a <= b)                                             \
    D(GT, DC, sfx, T, C, uint8_t, b, a > b)                                              \
    D(GE, DC, sfx, T, C, uint8_t, b, a >= b)                                             \
    D(LOGICAL_AND, DC, sfx, T, C, uint8_t, b, (a != 0) & (b != 0))                       \
    D(LOGICAL_OR, DC, sfx, T, C, uint8_t, b, (a != 0) | (b != 0))                        \
    D(LOGICAL_XOR, DC, sfx, T, C, uint8_t, b, (a != 0) ^ (b != 0))                       \
    D(BITWISE_AND, DC, sfx, T, C, T, sfx, a & b)                                         \
    D(BITWISE_OR, DC, sfx, T, C, T, sfx, a | b)                                          \
    D(BITWISE_XOR, DC, sfx, T, C, T, sfx, a ^ b)                                         \
    D(LSHIFT, DC, sfx, T, C, T, sfx, ec_lshift_##sfx(a, b))                              \
    D(RSHIFT, DC, sfx, T, C, T, sfx, ec_rshift_##sfx(a, b))                              \
    D(RSUB, DC, sfx, T, C, T, sfx, b - I0 * a)

#define BINARY_BOOL_LIST(D, DC, sfx, T, C)                                               \
    D(ADD, DC, sfx, T, C, T, sfx, a | b)                                                 \
    D(MUL, DC, sfx, T, C, T, sfx, a & b)                                                 \
    D(MAXIMUM, DC, sfx, T, C, T, sfx, a | b)                                             \
    D(MINIMUM, DC, sfx, T, C, T, sfx, a & b)                                             \
    D(FMAX, DC, sfx, T, C, T, sfx, a | b)                                                \
    D(FMIN, DC, sfx, T, C, T, sfx, a & b)                                                \
    D(EQ, DC, sfx, T, C, uint8_t, b, a == b)                                             \
    D(NE, DC, sfx, T, C, uint8_t, b, a != b)                                             \
    D(LT, DC, sfx, T, C, uint8_t, b, a < b)                                              \
    D(LE, DC, sfx, T, C, uint8_t, b, a <= b)                                             \
    D(GT, DC, sfx, T, C, uint8_t, b, a > b)                                              \
    D(GE, DC, sfx, T, C, uint8_t, b, a >= b)                                             \
    D(LOGICAL_AND, DC, sfx, T, C, uint8_t, b, a & b)                                     \
    D(LOGICAL_OR, DC, sfx, T, C, uint8_t, b, a | b)                                      \
    D(LOGICAL_XOR, DC, sfx, T, C, uint8_t, b, a ^ b)                                     \
    D(BITWISE_AND, DC, sfx, T, C, T, sfx, a & b)                                         \
    D(BITWISE_OR, DC, sfx, T, C, T, sfx, a | b)                                          \
    D(BITWISE_XOR, DC, sfx, T, C, T, sfx, a ^ b)

/* -------------------------------------------------------------- ternary */

/* WHERE (a: bool condition) is written per backend: it is a select, not an
 * expression in one compute type. */
#define TERNARY_FLOAT_LIST(D, DC, sfx, T, C)                                             \
    D(LERP, DC, sfx, T, C, T, sfx, a + c * (b - a))                                      \
    D(ADDCMUL, DC, sfx, T, C, T, sfx, a + P0 * b * c)                                    \
    D(ADDCDIV, DC, sfx, T, C, T, sfx, a + P0 * b / c)                                    \
    D(CLAMP, DC, sfx, T, C, T, sfx, ec_clamp_##C(a, b, c))

#define TERNARY_INT_LIST(D, DC, sfx, T, C)                                               \
    D(ADDCMUL, DC, sfx, T, C, T, sfx, a + I0 * b * c)                                    \
    D(CLAMP, DC, sfx, T, C, T, sfx, (a < b ? b : a) > c ? c : (a < b ? b : a))

#endif
