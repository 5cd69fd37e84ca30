/* Elementwise kernels: unary, binary and ternary ops for every dtype they apply to.
 *
 * Each op is one line in a list below: its name, the dtype of its output (the
 * input's, or bool) and an expression in `x` (unary) or `a`, `b` (binary) of the
 * compute type C (float for float16/bfloat16/float32, double for float64, the
 * integer type itself otherwise).  The lists expand into one inner loop per
 * (op, dtype) with a contiguous fast path the compiler vectorises, and into the
 * dispatch tables ec_unary/ec_binary index.  A NULL entry means the op does not
 * exist for that dtype; Python checks dtypes first, so reaching one is a bug.
 *
 * Integer arithmetic wraps (the build uses -fwrapv); integer division by zero
 * reports EC_ERR_ZERO_DIV instead of trapping.
 */
#include <tgmath.h>

#include "core.h"
#include "special.h"

/* Parameters in the compute type; every loop typedefs its compute type as CT. */
#define P0 ((CT)prm->p0)
#define P1 ((CT)prm->p1)

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

#define DEFINE_UNARY(OP, DC, sfx, T, C, OT, osfx, EXPR)                                  \
    static void u_##OP##_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) {  \
        typedef C CT;                                                                     \
        (void)prm;                                                                        \
        if (s[0] == sizeof(OT) && s[1] == sizeof(T)) {                                    \
            OT* restrict o = (OT*)p[0];                                                   \
            const T* restrict in = (const T*)p[1];                                        \
            for (int64_t i = 0; i < n; i++) {                                             \
                C x = EC_LOAD_##sfx(in[i]);                                               \
                o[i] = EC_STORE_##osfx(EXPR);                                             \
            }                                                                             \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                C x = EC_LOAD_##sfx(*(const T*)(p[1] + i * s[1]));                        \
                *(OT*)(p[0] + i * s[0]) = EC_STORE_##osfx(EXPR);                          \
            }                                                                             \
        }                                                                                 \
    }

#define UNARY_ENTRY(OP, DC, sfx, T, C, OT, osfx, EXPR) [EC_U_##OP][DC] = u_##OP##_##sfx,

UNARY_FLOAT_LIST(DEFINE_UNARY, EC_FLOAT16, f16, ec_f16, float)
UNARY_FLOAT_LIST(DEFINE_UNARY, EC_BFLOAT16, bf16, ec_bf16, float)
UNARY_FLOAT_LIST(DEFINE_UNARY, EC_FLOAT32, f32, float, float)
UNARY_FLOAT_LIST(DEFINE_UNARY, EC_FLOAT64, f64, double, double)
UNARY_INT_LIST(DEFINE_UNARY, EC_UINT8, u8, uint8_t, uint8_t)
UNARY_INT_LIST(DEFINE_UNARY, EC_INT8, i8, int8_t, int8_t)
UNARY_INT_LIST(DEFINE_UNARY, EC_INT16, i16, int16_t, int16_t)
UNARY_INT_LIST(DEFINE_UNARY, EC_INT32, i32, int32_t, int32_t)
UNARY_INT_LIST(DEFINE_UNARY, EC_INT64, i64, int64_t, int64_t)
UNARY_BOOL_LIST(DEFINE_UNARY, EC_BOOL, b, uint8_t, int)

static const ec_loop unary_table[EC_NUM_UNARY][EC_NUM_DTYPES] = {
    UNARY_FLOAT_LIST(UNARY_ENTRY, EC_FLOAT16, f16, ec_f16, float)
    UNARY_FLOAT_LIST(UNARY_ENTRY, EC_BFLOAT16, bf16, ec_bf16, float)
    UNARY_FLOAT_LIST(UNARY_ENTRY, EC_FLOAT32, f32, float, float)
    UNARY_FLOAT_LIST(UNARY_ENTRY, EC_FLOAT64, f64, double, double)
    UNARY_INT_LIST(UNARY_ENTRY, EC_UINT8, u8, uint8_t, uint8_t)
    UNARY_INT_LIST(UNARY_ENTRY, EC_INT8, i8, int8_t, int8_t)
    UNARY_INT_LIST(UNARY_ENTRY, EC_INT16, i16, int16_t, int16_t)
    UNARY_INT_LIST(UNARY_ENTRY, EC_INT32, i32, int32_t, int32_t)
    UNARY_INT_LIST(UNARY_ENTRY, EC_INT64, i64, int64_t, int64_t)
    UNARY_BOOL_LIST(UNARY_ENTRY, EC_BOOL, b, uint8_t, int)
    /* later initialisers replace the generic loops: Note [Fast float32 exp] */
    [EC_U_EXP][EC_FLOAT32] = ec_loop_exp_f32,
    [EC_U_SIGMOID][EC_FLOAT32] = ec_loop_sigmoid_f32,
    [EC_U_SILU][EC_FLOAT32] = ec_loop_silu_f32,
};

/* Ops whose output is bool whatever the input dtype. */
static int unary_out_dtype(int op, int dtype) {
    switch (op) {
        case EC_U_ISNAN: case EC_U_ISINF: case EC_U_ISFINITE: case EC_U_LOGICAL_NOT:
        case EC_U_SIGNBIT:
            return EC_BOOL;
        case EC_U_BITWISE_NOT:
            return dtype;
        default:
            return dtype;
    }
}

static int unary_prepare(int op, int dtype, ec_loop* loop, int* out_dtype) {
    if (op < 0 || op >= EC_NUM_UNARY || !ec_valid_dtype(dtype))
        return ec_fail(EC_ERR_INVALID, "unary: bad op %d or dtype %d", op, dtype);
    *loop = unary_table[op][dtype];
    if (!*loop) return ec_fail(EC_ERR_DTYPE, "unary op %d has no kernel for dtype %d", op, dtype);
    *out_dtype = unary_out_dtype(op, dtype);
    return EC_OK;
}

static void unary_params(ec_params* p, int dtype, double p0, double p1) {
    p->p0 = p0;
    p->p1 = p1;
    /* integer forms of the parameters (clamp bounds, exponents, thresholds) */
    p->i0 = p0 != p0 ? INT64_MIN : ec_f2i64(p0 < -9.2e18 ? -9.2e18 : p0);
    p->i1 = p1 != p1 ? INT64_MAX : ec_f2i64(p1 > 9.2e18 ? 9.2e18 : p1);
    (void)dtype;
}

int ec_unary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out_addr, ec_ptr x_addr,
             double p0, double p1) {
    void* out = (void*)out_addr;
    const void* x = (const void*)x_addr;
    ec_loop loop;
    int odt = dtype;
    int st = unary_prepare(op, dtype, &loop, &odt);
    if (st != EC_OK) return st;
    ec_params p = {0};
    unary_params(&p, dtype, p0, p1);
    int sizes[2] = {ec_itemsize[odt], ec_itemsize[dtype]};
    char* base[2] = {(char*)out, (char*)x};
    st = ec_iterate(2, ndim, layout, sizes, base, loop, &p);
    return st == EC_OK ? EC_OK : ec_fail(st, "unary op %d failed", op);
}

int ec_unary_contig(int op, int dtype, int64_t n, ec_ptr out_addr, ec_ptr x_addr, double p0, double p1) {
    void* out = (void*)out_addr;
    const void* x = (const void*)x_addr;
    int64_t layout[3] = {n, 1, 1};
    return ec_unary(op, dtype, 1, layout, (ec_ptr)out, (ec_ptr)x, p0, p1);
}

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
    D(NEXTAFTER, DC, sfx, T, C, T, sfx, nextafter(a, b))                                 \
    D(SIGMOID_BACKWARD, DC, sfx, T, C, T, sfx, a * b * ((C)1 - b))                       \
    D(TANH_BACKWARD, DC, sfx, T, C, T, sfx, a * ((C)1 - b * b))                          \
    D(RELU_BACKWARD, DC, sfx, T, C, T, sfx, b <= 0 ? (C)0 : a)                           \
    D(THRESHOLD_BACKWARD, DC, sfx, T, C, T, sfx, b <= P0 ? (C)0 : a)

#define I0 ((CT)prm->i0)
#define ZDIV(expr) (b == 0 ? (prm->status = EC_ERR_ZERO_DIV, (CT)0) : (expr))

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

/* Four paths: both contiguous, b broadcast (stride 0), a broadcast, general. */
#define DEFINE_BINARY(OP, DC, sfx, T, C, OT, osfx, EXPR)                                   \
    static void b_##OP##_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) {    \
        typedef C CT;                                                                       \
        const T* restrict pa = (const T*)p[1];                                              \
        const T* restrict pb = (const T*)p[2];                                              \
        OT* restrict o = (OT*)p[0];                                                         \
        if (s[0] == sizeof(OT) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                 \
            for (int64_t i = 0; i < n; i++) {                                               \
                C a = EC_LOAD_##sfx(pa[i]);                                                 \
                C b = EC_LOAD_##sfx(pb[i]);                                                 \
                o[i] = EC_STORE_##osfx(EXPR);                                               \
            }                                                                               \
        } else if (s[0] == sizeof(OT) && s[1] == sizeof(T) && s[2] == 0) {                  \
            const C b = EC_LOAD_##sfx(pb[0]);                                               \
            for (int64_t i = 0; i < n; i++) {                                               \
                C a = EC_LOAD_##sfx(pa[i]);                                                 \
                o[i] = EC_STORE_##osfx(EXPR);                                               \
            }                                                                               \
        } else if (s[0] == sizeof(OT) && s[1] == 0 && s[2] == sizeof(T)) {                  \
            const C a = EC_LOAD_##sfx(pa[0]);                                               \
            for (int64_t i = 0; i < n; i++) {                                               \
                C b = EC_LOAD_##sfx(pb[i]);                                                 \
                o[i] = EC_STORE_##osfx(EXPR);                                               \
            }                                                                               \
        } else {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                               \
                C a = EC_LOAD_##sfx(*(const T*)(p[1] + i * s[1]));                          \
                C b = EC_LOAD_##sfx(*(const T*)(p[2] + i * s[2]));                          \
                *(OT*)(p[0] + i * s[0]) = EC_STORE_##osfx(EXPR);                            \
            }                                                                               \
        }                                                                                   \
    }

#define BINARY_ENTRY(OP, DC, sfx, T, C, OT, osfx, EXPR) [EC_B_##OP][DC] = b_##OP##_##sfx,

BINARY_FLOAT_LIST(DEFINE_BINARY, EC_FLOAT16, f16, ec_f16, float)
BINARY_FLOAT_LIST(DEFINE_BINARY, EC_BFLOAT16, bf16, ec_bf16, float)
BINARY_FLOAT_LIST(DEFINE_BINARY, EC_FLOAT32, f32, float, float)
BINARY_FLOAT_LIST(DEFINE_BINARY, EC_FLOAT64, f64, double, double)
BINARY_INT_LIST(DEFINE_BINARY, EC_UINT8, u8, uint8_t, uint8_t)
BINARY_INT_LIST(DEFINE_BINARY, EC_INT8, i8, int8_t, int8_t)
BINARY_INT_LIST(DEFINE_BINARY, EC_INT16, i16, int16_t, int16_t)
BINARY_INT_LIST(DEFINE_BINARY, EC_INT32, i32, int32_t, int32_t)
BINARY_INT_LIST(DEFINE_BINARY, EC_INT64, i64, int64_t, int64_t)
BINARY_BOOL_LIST(DEFINE_BINARY, EC_BOOL, b, uint8_t, int)

static const ec_loop binary_table[EC_NUM_BINARY][EC_NUM_DTYPES] = {
    BINARY_FLOAT_LIST(BINARY_ENTRY, EC_FLOAT16, f16, ec_f16, float)
    BINARY_FLOAT_LIST(BINARY_ENTRY, EC_BFLOAT16, bf16, ec_bf16, float)
    BINARY_FLOAT_LIST(BINARY_ENTRY, EC_FLOAT32, f32, float, float)
    BINARY_FLOAT_LIST(BINARY_ENTRY, EC_FLOAT64, f64, double, double)
    BINARY_INT_LIST(BINARY_ENTRY, EC_UINT8, u8, uint8_t, uint8_t)
    BINARY_INT_LIST(BINARY_ENTRY, EC_INT8, i8, int8_t, int8_t)
    BINARY_INT_LIST(BINARY_ENTRY, EC_INT16, i16, int16_t, int16_t)
    BINARY_INT_LIST(BINARY_ENTRY, EC_INT32, i32, int32_t, int32_t)
    BINARY_INT_LIST(BINARY_ENTRY, EC_INT64, i64, int64_t, int64_t)
    BINARY_BOOL_LIST(BINARY_ENTRY, EC_BOOL, b, uint8_t, int)
};

static int binary_out_dtype(int op, int dtype) {
    return (op >= EC_B_EQ && op <= EC_B_LOGICAL_XOR) ? EC_BOOL : dtype;
}

static int binary_status(int st, int op) {
    if (st == EC_ERR_ZERO_DIV) return ec_fail(st, "integer division by zero");
    if (st == EC_ERR_VALUE) return ec_fail(st, "integers to negative integer powers are not allowed");
    if (st != EC_OK) return ec_fail(st, "binary op %d failed", op);
    return EC_OK;
}

static int binary_prepare(int op, int dtype, ec_loop* loop) {
    if (op < 0 || op >= EC_NUM_BINARY || !ec_valid_dtype(dtype))
        return ec_fail(EC_ERR_INVALID, "binary: bad op %d or dtype %d", op, dtype);
    *loop = binary_table[op][dtype];
    if (!*loop) return ec_fail(EC_ERR_DTYPE, "binary op %d has no kernel for dtype %d", op, dtype);
    return EC_OK;
}

static void binary_params(ec_params* p, double p0) {
    p->p0 = p0;
    p->i0 = ec_f2i64(p0);
}

int ec_binary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out_addr, ec_ptr a_addr,
              ec_ptr b_addr, double p0) {
    void* out = (void*)out_addr;
    const void* a = (const void*)a_addr;
    const void* b = (const void*)b_addr;
    ec_loop loop;
    int st = binary_prepare(op, dtype, &loop);
    if (st != EC_OK) return st;
    ec_params p = {0};
    binary_params(&p, p0);
    int isz = ec_itemsize[dtype];
    int sizes[3] = {ec_itemsize[binary_out_dtype(op, dtype)], isz, isz};
    char* base[3] = {(char*)out, (char*)a, (char*)b};
    return binary_status(ec_iterate(3, ndim, layout, sizes, base, loop, &p), op);
}

int ec_binary_contig(int op, int dtype, int64_t n, ec_ptr out_addr, ec_ptr a_addr, ec_ptr b_addr,
                     double p0) {
    void* out = (void*)out_addr;
    const void* a = (const void*)a_addr;
    const void* b = (const void*)b_addr;
    ec_loop loop;
    int st = binary_prepare(op, dtype, &loop);
    if (st != EC_OK) return st;
    ec_params p = {0};
    binary_params(&p, p0);
    if (n < 2 * EC_GRAIN) { /* the common small case: no iterator set-up at all */
        int isz = ec_itemsize[dtype];
        int64_t strides[3] = {ec_itemsize[binary_out_dtype(op, dtype)], isz, isz};
        char* ptrs[3] = {(char*)out, (char*)a, (char*)b};
        loop(n, ptrs, strides, &p);
        return binary_status(p.status, op);
    }
    int64_t layout[4] = {n, 1, 1, 1};
    return ec_binary(op, dtype, 1, layout, (ec_ptr)out, (ec_ptr)a, (ec_ptr)b, p0);
}

/* A scalar operand is stored in a one-element buffer of the op's dtype and
 * broadcast with stride 0. */
static void store_scalar(int dtype, double s, int64_t si, void* buf) {
    int64_t layout[1] = {1};
    (void)layout;
    ec_fill(0, layout, (ec_ptr)buf, dtype, s, si);
}

int ec_binary_scalar(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out_addr, ec_ptr a_addr,
                     double s, int64_t si, int scalar_first, double p0) {
    void* out = (void*)out_addr;
    const void* a = (const void*)a_addr;
    if (!ec_valid_dtype(dtype)) return ec_fail(EC_ERR_INVALID, "binary: bad dtype %d", dtype);
    if (ndim > EC_MAX_DIMS) return ec_fail(EC_ERR_INVALID, "binary: too many dims");
    _Alignas(16) char buf[16];
    store_scalar(dtype, s, si, buf);
    int64_t full[1 + 3 * EC_MAX_DIMS];
    memcpy(full, layout, sizeof(int64_t) * 2 * (size_t)ndim); /* shape, out strides */
    int64_t* st_a = full + 2 * ndim;
    int64_t* st_b = full + 3 * ndim;
    for (int d = 0; d < ndim; d++) {
        int64_t xs = layout[2 * ndim + d];
        st_a[d] = scalar_first ? 0 : xs;
        st_b[d] = scalar_first ? xs : 0;
    }
    return ec_binary(op, dtype, ndim, full, (ec_ptr)out, scalar_first ? (ec_ptr)buf : (ec_ptr)a,
                     scalar_first ? (ec_ptr)a : (ec_ptr)buf, p0);
}

int ec_binary_scalar_contig(int op, int dtype, int64_t n, ec_ptr out_addr, ec_ptr a_addr, double s,
                            int64_t si, int scalar_first, double p0) {
    void* out = (void*)out_addr;
    const void* a = (const void*)a_addr;
    ec_loop loop;
    int st = binary_prepare(op, dtype, &loop);
    if (st != EC_OK) return st;
    _Alignas(16) char buf[16];
    store_scalar(dtype, s, si, buf);
    if (n < 2 * EC_GRAIN) {
        ec_params p = {0};
        binary_params(&p, p0);
        int isz = ec_itemsize[dtype];
        int64_t strides[3] = {ec_itemsize[binary_out_dtype(op, dtype)], scalar_first ? 0 : isz,
                              scalar_first ? isz : 0};
        char* ptrs[3] = {(char*)out, scalar_first ? buf : (char*)a, scalar_first ? (char*)a : buf};
        loop(n, ptrs, strides, &p);
        return binary_status(p.status, op);
    }
    int64_t layout[3] = {n, 1, 1};
    return ec_binary_scalar(op, dtype, 1, layout, (ec_ptr)out, (ec_ptr)a, s, si, scalar_first, p0);
}

/* -------------------------------------------------------------- ternary */

#define DEFINE_TERNARY(OP, sfx, T, C, EXPR)                                                  \
    static void t_##OP##_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) {      \
        typedef C CT;                                                                         \
        (void)prm;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                     \
            C a = EC_LOAD_##sfx(*(const T*)(p[1] + i * s[1]));                                \
            C b = EC_LOAD_##sfx(*(const T*)(p[2] + i * s[2]));                                \
            C c = EC_LOAD_##sfx(*(const T*)(p[3] + i * s[3]));                                \
            *(T*)(p[0] + i * s[0]) = EC_STORE_##sfx(EXPR);                                    \
        }                                                                                     \
    }

#define DEFINE_WHERE(DC, sfx, T, C, K)                                                       \
    static void t_WHERE_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) {       \
        (void)prm;                                                                            \
        if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {       \
            T* restrict o = (T*)p[0];                                                         \
            const uint8_t* restrict c = (const uint8_t*)p[1];                                 \
            const T* restrict x = (const T*)p[2];                                             \
            const T* restrict y = (const T*)p[3];                                             \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? x[i] : y[i];                        \
            return;                                                                           \
        }                                                                                     \
        for (int64_t i = 0; i < n; i++)                                                       \
            *(T*)(p[0] + i * s[0]) = *(const uint8_t*)(p[1] + i * s[1])                       \
                                         ? *(const T*)(p[2] + i * s[2])                       \
                                         : *(const T*)(p[3] + i * s[3]);                      \
    }
EC_ALL_DTYPES(DEFINE_WHERE)

#define TERNARY_FLOAT(DC, sfx, T, C, K)                                                      \
    DEFINE_TERNARY(LERP, sfx, T, C, a + c * (b - a))                                         \
    DEFINE_TERNARY(ADDCMUL, sfx, T, C, a + P0 * b * c)                                       \
    DEFINE_TERNARY(ADDCDIV, sfx, T, C, a + P0 * b / c)                                       \
    DEFINE_TERNARY(CLAMP, sfx, T, C, ec_clamp_##C(a, b, c))
#define TERNARY_INT(DC, sfx, T, C, K)                                                        \
    DEFINE_TERNARY(ADDCMUL, sfx, T, C, a + I0 * b * c)                                       \
    DEFINE_TERNARY(CLAMP, sfx, T, C, (a < b ? b : a) > c ? c : (a < b ? b : a))
EC_FLOAT_DTYPES(TERNARY_FLOAT)
EC_INT_DTYPES(TERNARY_INT)

#define WHERE_ENTRY(DC, sfx, T, C, K) [EC_T_WHERE][DC] = t_WHERE_##sfx,
#define TERNARY_FLOAT_ENTRY(DC, sfx, T, C, K)                                                \
    [EC_T_LERP][DC] = t_LERP_##sfx, [EC_T_ADDCMUL][DC] = t_ADDCMUL_##sfx,                    \
    [EC_T_ADDCDIV][DC] = t_ADDCDIV_##sfx, [EC_T_CLAMP][DC] = t_CLAMP_##sfx,
#define TERNARY_INT_ENTRY(DC, sfx, T, C, K)                                                  \
    [EC_T_ADDCMUL][DC] = t_ADDCMUL_##sfx, [EC_T_CLAMP][DC] = t_CLAMP_##sfx,

static const ec_loop ternary_table[EC_NUM_TERNARY][EC_NUM_DTYPES] = {
    EC_ALL_DTYPES(WHERE_ENTRY) EC_FLOAT_DTYPES(TERNARY_FLOAT_ENTRY) EC_INT_DTYPES(TERNARY_INT_ENTRY)
};

int ec_ternary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out_addr, ec_ptr a_addr,
               ec_ptr b_addr, ec_ptr c_addr, double p0) {
    void* out = (void*)out_addr;
    const void* a = (const void*)a_addr;
    const void* b = (const void*)b_addr;
    const void* c = (const void*)c_addr;
    if (op < 0 || op >= EC_NUM_TERNARY || !ec_valid_dtype(dtype))
        return ec_fail(EC_ERR_INVALID, "ternary: bad op %d or dtype %d", op, dtype);
    ec_loop loop = ternary_table[op][dtype];
    if (!loop) return ec_fail(EC_ERR_DTYPE, "ternary op %d has no kernel for dtype %d", op, dtype);
    ec_params p = {0};
    p.p0 = p0;
    p.i0 = ec_f2i64(p0);
    int isz = ec_itemsize[dtype];
    int sizes[4] = {isz, op == EC_T_WHERE ? 1 : isz, isz, isz};
    char* base[4] = {(char*)out, (char*)a, (char*)b, (char*)c};
    return ec_iterate(4, ndim, layout, sizes, base, loop, &p);
}
