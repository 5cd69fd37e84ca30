/* ember_core's codes: statuses, dtypes and the op codes of the kernel families
 * that run on every device.  C enums, so no number is written twice: the CPU
 * kernels, the CUDA kernel sources (NVRTC includes this header) and Python
 * (through cffi: lib.EC_U_EXP) all read them from here.
 *
 * The text between the cdef markers is part of cffi's cdef (csrc/build.py). */
#ifndef EMBER_CODES_H
#define EMBER_CODES_H

/* cdef:begin */

/* Status codes. */
enum ec_status {
    EC_OK,
    EC_ERR_DTYPE,             /* no kernel for this dtype */
    EC_ERR_INVALID,           /* bad argument */
    EC_ERR_INDEX,             /* an index is out of range */
    EC_ERR_NOMEM,             /* scratch memory could not be allocated */
    EC_ERR_ZERO_DIV,          /* integer division by zero */
    EC_ERR_VALUE,             /* an input value is invalid for the op */
    EC_ERR_CUDA,              /* a CUDA driver call failed, or a kernel reported an error */
    EC_ERR_CUDA_UNAVAILABLE,  /* no usable CUDA driver or device */
    EC_ERR_CUDA_COMPILE,      /* compiling or loading a kernel failed (Python raised) */
};

/* dtypes (the order is the promotion lattice's storage order, not a ranking). */
enum ec_dtype_code {
    EC_BOOL,
    EC_UINT8,
    EC_INT8,
    EC_INT16,
    EC_INT32,
    EC_INT64,
    EC_FLOAT16,
    EC_BFLOAT16,
    EC_FLOAT32,
    EC_FLOAT64,
    EC_UINT16,      /* the wide unsigned integers and the complex dtypes run on the CPU */
    EC_UINT32,      /* kernels only (csrc/cpu/pointwise/cpu_only_ops.h, core.h's EC_CPU_DTYPES); */
    EC_UINT64,      /* the CUDA kernels' lists (dtype_lists.h) do not include them */
    EC_COMPLEX64,
    EC_COMPLEX128,
    EC_NUM_DTYPES
};

/* Unary ops: out = f(x).  p0/p1 are op parameters where noted. */
enum ec_unary_op {
    EC_U_COPY,
    EC_U_NEG,
    EC_U_ABS,
    EC_U_SIGN,
    EC_U_SQUARE,
    EC_U_RECIPROCAL,
    EC_U_SQRT,
    EC_U_RSQRT,
    EC_U_EXP,
    EC_U_EXP2,
    EC_U_EXPM1,
    EC_U_LOG,
    EC_U_LOG2,
    EC_U_LOG10,
    EC_U_LOG1P,
    EC_U_SIN,
    EC_U_COS,
    EC_U_TAN,
    EC_U_ASIN,
    EC_U_ACOS,
    EC_U_ATAN,
    EC_U_SINH,
    EC_U_COSH,
    EC_U_TANH,
    EC_U_ASINH,
    EC_U_ACOSH,
    EC_U_ATANH,
    EC_U_SIGMOID,
    EC_U_RELU,
    EC_U_GELU,               /* p0: 0 exact (erf), 1 tanh approximation */
    EC_U_SILU,
    EC_U_SOFTPLUS,           /* p0: beta, p1: threshold */
    EC_U_ERF,
    EC_U_ERFC,
    EC_U_ERFINV,
    EC_U_FLOOR,
    EC_U_CEIL,
    EC_U_ROUND,              /* half to even */
    EC_U_TRUNC,
    EC_U_FRAC,
    EC_U_ISNAN,              /* -> bool */
    EC_U_ISINF,              /* -> bool */
    EC_U_ISFINITE,           /* -> bool */
    EC_U_LOGICAL_NOT,        /* -> bool */
    EC_U_BITWISE_NOT,
    EC_U_CLAMP,              /* p0: min, p1: max (+-inf = unbounded; a NaN bound gives NaN) */
    EC_U_POW_SCALAR,         /* x ** p0 */
    EC_U_RPOW_SCALAR,        /* p0 ** x */
    EC_U_LEAKY_RELU,         /* p0: negative slope */
    EC_U_ELU,                /* p0: alpha, p1: scale (input_scale 1) */
    EC_U_HARDTANH,           /* p0: min, p1: max */
    EC_U_HARDSIGMOID,
    EC_U_HARDSWISH,
    EC_U_MISH,
    EC_U_SOFTSIGN,
    EC_U_LOGSIGMOID,
    EC_U_LGAMMA,
    EC_U_DIGAMMA,
    EC_U_SIGNBIT,            /* -> bool */
    EC_U_NAN_TO_NUM,         /* p0: nan, p1: posinf (neginf = -p1) */
    EC_U_CELU,               /* p0: alpha */
    EC_U_SELU,
    EC_U_THRESHOLD,          /* p0: threshold, p1: value */
    EC_U_SINC,
    EC_U_DEG2RAD,
    EC_U_RAD2DEG,
    EC_U_GELU_BACKWARD_COEF, /* d gelu / dx (p0 as GELU) */
    EC_U_ANGLE,              /* complex only: arg(x) -> the real dtype */
    EC_U_SGN,                /* complex only: x / |x|, 0 at 0 */
    EC_U_CONJ,               /* complex only: conjugate */
    EC_NUM_UNARY,
};

/* Binary ops: out = f(a, b), all operands of one dtype except where noted. */
enum ec_binary_op {
    EC_B_ADD,                /* a + p0 * b */
    EC_B_SUB,                /* a - p0 * b */
    EC_B_MUL,
    EC_B_DIV,                /* true division (float dtypes) */
    EC_B_FLOOR_DIV,
    EC_B_TRUNC_DIV,
    EC_B_REMAINDER,          /* sign of the divisor (Python %) */
    EC_B_FMOD,               /* sign of the dividend (C fmod) */
    EC_B_POW,
    EC_B_MAXIMUM,            /* NaN propagating */
    EC_B_MINIMUM,
    EC_B_FMAX,               /* NaN ignoring */
    EC_B_FMIN,
    EC_B_ATAN2,
    EC_B_HYPOT,
    EC_B_COPYSIGN,
    EC_B_EQ,                 /* comparisons and logical ops -> bool */
    EC_B_NE,
    EC_B_LT,
    EC_B_LE,
    EC_B_GT,
    EC_B_GE,
    EC_B_LOGICAL_AND,
    EC_B_LOGICAL_OR,
    EC_B_LOGICAL_XOR,
    EC_B_BITWISE_AND,
    EC_B_BITWISE_OR,
    EC_B_BITWISE_XOR,
    EC_B_LSHIFT,
    EC_B_RSHIFT,
    EC_B_XLOGY,
    EC_B_RSUB,               /* b - p0 * a */
    EC_B_RDIV,               /* b / a */
    EC_B_LOGADDEXP,
    EC_B_NEXTAFTER,
    EC_B_SIGMOID_BACKWARD,   /* a: grad, b: sigmoid output -> a*b*(1-b) */
    EC_B_TANH_BACKWARD,      /* a: grad, b: tanh output -> a*(1-b*b) */
    EC_B_RELU_BACKWARD,      /* a: grad, b: input -> b > 0 ? a : 0 */
    EC_B_THRESHOLD_BACKWARD, /* a: grad, b: input -> b > p0 ? a : 0 */
    EC_B_LOGADDEXP2,
    EC_NUM_BINARY,
};

/* Ternary ops: out = f(a, b, c). */
enum ec_ternary_op {
    EC_T_WHERE,     /* a: bool condition, b, c: values */
    EC_T_LERP,      /* a + c * (b - a) */
    EC_T_ADDCMUL,   /* a + p0 * b * c */
    EC_T_ADDCDIV,   /* a + p0 * b / c */
    EC_T_CLAMP,     /* min(max(a, b), c), NaN propagating */
    EC_NUM_TERNARY,
};

/* Reductions. */
enum ec_reduce_op {
    EC_R_SUM,
    EC_R_PROD,
    EC_R_MEAN,
    EC_R_MAX,           /* values (and indices when requested) */
    EC_R_MIN,
    EC_R_ALL,           /* -> bool */
    EC_R_ANY,           /* -> bool */
    EC_R_VAR,           /* p0: correction */
    EC_R_STD,           /* p0: correction */
    EC_R_NORM,          /* p0: order (inf = max |x|, 0 = count nonzero) */
    EC_R_LOGSUMEXP,
    EC_R_COUNT_NONZERO, /* -> int64 */
    EC_R_NANSUM,
    EC_NUM_REDUCE,
};

/* Scans along one dimension. */
enum ec_scan_op {
    EC_S_CUMSUM,
    EC_S_CUMPROD,
    EC_S_CUMMAX,       /* values and indices */
    EC_S_CUMMIN,
    EC_S_LOGCUMSUMEXP,
    EC_NUM_SCAN,
};

/* The nn kernels' kinds that CUDA sources need too (shared with ember_core.h's
 * kernels): the activation family (activation_ops.h) and the index maps of
 * padding and nearest interpolation (index_map.h). */
enum ec_activation_kind {
    EC_ACT_HARDSHRINK, /* p0: lambda */
    EC_ACT_SOFTSHRINK, /* p0: lambda */
    EC_ACT_LEAKY_RELU, /* p0: negative slope */
    EC_ACT_ELU,        /* p0: alpha, p1: scale (elu: scale 1; selu's constants) */
    EC_ACT_CELU,       /* p0: alpha */
    EC_ACT_HARDTANH,   /* p0: min, p1: max */
    EC_ACT_THRESHOLD,  /* p0: threshold */
    EC_NUM_ACT,
};
enum ec_map_kind {
    EC_MAP_REFLECT,
    EC_MAP_REPLICATE,
    EC_MAP_CIRCULAR,
    EC_MAP_NEAREST,
    EC_MAP_NEAREST_EXACT,
};

/* cdef:end */

#endif
