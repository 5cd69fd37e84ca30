/* ember_core: the CPU kernels of ember's tensors.
 *
 * This header is both the C API and the source of the cffi cdef (the text
 * between the cdef markers is read by csrc/build.py), so it stays within what
 * cffi parses: declarations and integer #defines only.
 *
 * Conventions (Note [Kernel contract]):
 *  - Kernels take raw pointers, shapes and strides and never allocate tensor
 *    memory; Python decides shapes, dtypes, output allocation and errors.
 *  - Strides are in elements of the operand's dtype and may be negative or zero.
 *  - A strided operation receives one int64 `layout` array: the shape (ndim
 *    values) followed by each operand's strides (ndim values each), output first.
 *  - Data pointers cross the boundary as ec_ptr (an address as an integer), which
 *    Python passes without building a cffi pointer object per call.
 *  - Every function returns EC_OK or an EC_ERR_* status; details of the last
 *    failure of the calling thread are in ec_last_message(). C never raises.
 */
#ifndef EMBER_CORE_H
#define EMBER_CORE_H

#include <stddef.h>
#include <stdint.h>

/* cdef:begin */

/* Status codes. */
#define EC_OK 0
#define EC_ERR_DTYPE 1      /* no kernel for this dtype */
#define EC_ERR_INVALID 2    /* bad argument */
#define EC_ERR_INDEX 3      /* an index is out of range */
#define EC_ERR_NOMEM 4      /* scratch memory could not be allocated */
#define EC_ERR_ZERO_DIV 5   /* integer division by zero */
#define EC_ERR_VALUE 6      /* an input value is invalid for the op */

/* dtypes (the order is the promotion lattice's storage order, not a ranking). */
#define EC_BOOL 0
#define EC_UINT8 1
#define EC_INT8 2
#define EC_INT16 3
#define EC_INT32 4
#define EC_INT64 5
#define EC_FLOAT16 6
#define EC_BFLOAT16 7
#define EC_FLOAT32 8
#define EC_FLOAT64 9
#define EC_NUM_DTYPES 10

#define EC_MAX_DIMS 64

typedef uintptr_t ec_ptr;

/* Unary ops: out = f(x).  p0/p1 are op parameters where noted. */
#define EC_U_COPY 0
#define EC_U_NEG 1
#define EC_U_ABS 2
#define EC_U_SIGN 3
#define EC_U_SQUARE 4
#define EC_U_RECIPROCAL 5
#define EC_U_SQRT 6
#define EC_U_RSQRT 7
#define EC_U_EXP 8
#define EC_U_EXP2 9
#define EC_U_EXPM1 10
#define EC_U_LOG 11
#define EC_U_LOG2 12
#define EC_U_LOG10 13
#define EC_U_LOG1P 14
#define EC_U_SIN 15
#define EC_U_COS 16
#define EC_U_TAN 17
#define EC_U_ASIN 18
#define EC_U_ACOS 19
#define EC_U_ATAN 20
#define EC_U_SINH 21
#define EC_U_COSH 22
#define EC_U_TANH 23
#define EC_U_ASINH 24
#define EC_U_ACOSH 25
#define EC_U_ATANH 26
#define EC_U_SIGMOID 27
#define EC_U_RELU 28
#define EC_U_GELU 29         /* p0: 0 exact (erf), 1 tanh approximation */
#define EC_U_SILU 30
#define EC_U_SOFTPLUS 31     /* p0: beta, p1: threshold */
#define EC_U_ERF 32
#define EC_U_ERFC 33
#define EC_U_ERFINV 34
#define EC_U_FLOOR 35
#define EC_U_CEIL 36
#define EC_U_ROUND 37        /* half to even */
#define EC_U_TRUNC 38
#define EC_U_FRAC 39
#define EC_U_ISNAN 40        /* -> bool */
#define EC_U_ISINF 41        /* -> bool */
#define EC_U_ISFINITE 42     /* -> bool */
#define EC_U_LOGICAL_NOT 43  /* -> bool */
#define EC_U_BITWISE_NOT 44
#define EC_U_CLAMP 45        /* p0: min, p1: max (NaN = unbounded) */
#define EC_U_POW_SCALAR 46   /* x ** p0 */
#define EC_U_RPOW_SCALAR 47  /* p0 ** x */
#define EC_U_LEAKY_RELU 48   /* p0: negative slope */
#define EC_U_ELU 49          /* p0: alpha, p1: scale (input_scale 1) */
#define EC_U_HARDTANH 50     /* p0: min, p1: max */
#define EC_U_HARDSIGMOID 51
#define EC_U_HARDSWISH 52
#define EC_U_MISH 53
#define EC_U_SOFTSIGN 54
#define EC_U_LOGSIGMOID 55
#define EC_U_LGAMMA 56
#define EC_U_DIGAMMA 57
#define EC_U_SIGNBIT 58      /* -> bool */
#define EC_U_NAN_TO_NUM 59   /* p0: nan, p1: posinf (neginf = -p1) */
#define EC_U_CELU 60         /* p0: alpha */
#define EC_U_SELU 61
#define EC_U_THRESHOLD 62    /* p0: threshold, p1: value */
#define EC_U_SINC 63
#define EC_U_DEG2RAD 64
#define EC_U_RAD2DEG 65
#define EC_U_GELU_BACKWARD_COEF 66  /* d gelu / dx (p0 as GELU) */
#define EC_NUM_UNARY 67

/* Binary ops: out = f(a, b), all operands of one dtype except where noted. */
#define EC_B_ADD 0           /* a + p0 * b */
#define EC_B_SUB 1           /* a - p0 * b */
#define EC_B_MUL 2
#define EC_B_DIV 3           /* true division (float dtypes) */
#define EC_B_FLOOR_DIV 4
#define EC_B_TRUNC_DIV 5
#define EC_B_REMAINDER 6     /* sign of the divisor (Python %) */
#define EC_B_FMOD 7          /* sign of the dividend (C fmod) */
#define EC_B_POW 8
#define EC_B_MAXIMUM 9       /* NaN propagating */
#define EC_B_MINIMUM 10
#define EC_B_FMAX 11         /* NaN ignoring */
#define EC_B_FMIN 12
#define EC_B_ATAN2 13
#define EC_B_HYPOT 14
#define EC_B_COPYSIGN 15
#define EC_B_EQ 16           /* comparisons and logical ops -> bool */
#define EC_B_NE 17
#define EC_B_LT 18
#define EC_B_LE 19
#define EC_B_GT 20
#define EC_B_GE 21
#define EC_B_LOGICAL_AND 22
#define EC_B_LOGICAL_OR 23
#define EC_B_LOGICAL_XOR 24
#define EC_B_BITWISE_AND 25
#define EC_B_BITWISE_OR 26
#define EC_B_BITWISE_XOR 27
#define EC_B_LSHIFT 28
#define EC_B_RSHIFT 29
#define EC_B_XLOGY 30
#define EC_B_RSUB 31         /* b - p0 * a */
#define EC_B_RDIV 32         /* b / a */
#define EC_B_LOGADDEXP 33
#define EC_B_NEXTAFTER 34
#define EC_B_SIGMOID_BACKWARD 35   /* a: grad, b: sigmoid output -> a*b*(1-b) */
#define EC_B_TANH_BACKWARD 36      /* a: grad, b: tanh output -> a*(1-b*b) */
#define EC_B_RELU_BACKWARD 37      /* a: grad, b: input -> b > 0 ? a : 0 */
#define EC_B_THRESHOLD_BACKWARD 38 /* a: grad, b: input -> b > p0 ? a : 0 */
#define EC_NUM_BINARY 39

/* Ternary ops: out = f(a, b, c). */
#define EC_T_WHERE 0         /* a: bool condition, b, c: values */
#define EC_T_LERP 1          /* a + c * (b - a) */
#define EC_T_ADDCMUL 2       /* a + p0 * b * c */
#define EC_T_ADDCDIV 3       /* a + p0 * b / c */
#define EC_T_CLAMP 4         /* min(max(a, b), c), NaN propagating */
#define EC_NUM_TERNARY 5

/* Reductions. */
#define EC_R_SUM 0
#define EC_R_PROD 1
#define EC_R_MEAN 2
#define EC_R_MAX 3           /* values (and indices when requested) */
#define EC_R_MIN 4
#define EC_R_ALL 5           /* -> bool */
#define EC_R_ANY 6           /* -> bool */
#define EC_R_VAR 7           /* p0: correction */
#define EC_R_STD 8           /* p0: correction */
#define EC_R_NORM 9          /* p0: order (inf = max |x|, 0 = count nonzero) */
#define EC_R_LOGSUMEXP 10
#define EC_R_COUNT_NONZERO 11 /* -> int64 */
#define EC_R_NANSUM 12
#define EC_NUM_REDUCE 13

/* Scans along one dimension. */
#define EC_S_CUMSUM 0
#define EC_S_CUMPROD 1
#define EC_S_CUMMAX 2        /* values and indices */
#define EC_S_CUMMIN 3
#define EC_S_LOGCUMSUMEXP 4
#define EC_NUM_SCAN 5

/* Errors of the calling thread's last failed call. */
const char* ec_last_message(void);

/* Threads: one setting governs OpenMP and BLAS. */
void ec_set_num_threads(int n);
int ec_get_num_threads(void);
int ec_has_openmp(void);

/* Copy with conversion: dst[i] = (dst_dtype) src[i].  layout: shape, dst strides,
 * src strides. */
int ec_copy(int ndim, const int64_t* layout, ec_ptr dst, int dst_dtype, ec_ptr src,
            int src_dtype);
int ec_copy_contig(int64_t n, ec_ptr dst, int dst_dtype, ec_ptr src, int src_dtype);

/* Fill: every element = value (given as double and as int64 for exactness). */
int ec_fill(int ndim, const int64_t* layout, ec_ptr dst, int dtype, double value,
            int64_t ivalue);

/* Elementwise.  `dtype` is the inputs' dtype; the output has `dtype` too except
 * for ops documented as -> bool.  Scalar forms take the scalar as double and
 * int64 (whichever the dtype needs); `scalar_first` puts it on the left. */
int ec_unary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
             double p0, double p1);
int ec_unary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr x, double p0, double p1);
int ec_binary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
              ec_ptr b, double p0);
int ec_binary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, ec_ptr b,
                     double p0);
int ec_binary_scalar(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                     double s, int64_t si, int scalar_first, double p0);
int ec_binary_scalar_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, double s,
                            int64_t si, int scalar_first, double p0);
int ec_ternary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
               ec_ptr b, ec_ptr c, double p0);

/* Reductions.  The input is described as output dims (ndim_out: shape, out
 * strides, input strides) followed by reduced dims (ndim_red: shape, input
 * strides): layout = [out_shape, out_strides, in_strides_out, red_shape,
 * in_strides_red].  `out_dtype` is the result dtype; `idx` (int64, strides as
 * out) receives arg-indices for MAX/MIN when not NULL, counted row-major over the
 * reduced dims. */
int ec_reduce(int op, int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
              ec_ptr out, ec_ptr idx, ec_ptr x, double p0);

/* Scans along `dim`: layout = [shape, out strides, in strides, idx strides]. */
int ec_scan(int op, int dtype, int out_dtype, int ndim, int dim, const int64_t* layout, ec_ptr out,
            ec_ptr idx, ec_ptr x);

/* Matrix products through BLAS (float32/float64), converted float32 BLAS for
 * float16/bfloat16, and plain C loops for integer dtypes.  Each matrix has a row
 * stride and a column stride in elements (one of them should be 1 for BLAS;
 * otherwise the kernel copies), and batches have a batch stride.
 *   C[b] = alpha * A[b] @ B[b] + beta * C[b]    (beta == 0: C is not read) */
int ec_matmul(int dtype, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
              ec_ptr a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
              ec_ptr b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
              ec_ptr c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

/* Counter-based random numbers (Philox4x32-10): element i of a call uses counter
 * offset + i / 4, lane i % 4, so results do not depend on the thread count.
 * Outputs are contiguous; each call consumes ceil(n / 4) * `per` counters where
 * ec_random_counters says how many. */
#define EC_RNG_UNIFORM 0     /* [p0, p1) */
#define EC_RNG_NORMAL 1      /* mean p0, std p1 */
#define EC_RNG_BERNOULLI 2   /* probability p0 */
#define EC_RNG_RANDINT 3     /* [i0, i1) */
#define EC_RNG_BITS 4        /* raw 64-bit values */
#define EC_RNG_EXPONENTIAL 5 /* rate p0 */
#define EC_RNG_CAUCHY 6      /* median p0, sigma p1 */
#define EC_RNG_LOG_NORMAL 7  /* mean p0, std p1 of the log */
#define EC_RNG_GEOMETRIC 8   /* probability p0 */
int ec_random(int kind, int dtype, int64_t n, ec_ptr out, uint64_t seed, uint64_t offset,
              double p0, double p1, int64_t i0, int64_t i1);
uint64_t ec_random_counters(int kind, int dtype, int64_t n);
/* Bernoulli with a per-element probability tensor (contiguous, same n). */
int ec_bernoulli_tensor(int dtype, int p_dtype, int64_t n, ec_ptr out, ec_ptr p,
                        uint64_t seed, uint64_t offset);

/* A uniformly random permutation of 0..n-1 (Fisher-Yates over Philox draws,
 * consuming ceil(n / 2) counters). out: int64. */
int ec_randperm(int64_t n, ec_ptr out, uint64_t seed, uint64_t offset);
/* Sample `num_samples` category indices per row from non-negative weights
 * (rows x cats, contiguous); without replacement each row's samples are
 * distinct.  Consumes rows * num_samples counters. out: int64 (rows x samples). */
int ec_multinomial(int dtype, int64_t rows, int64_t cats, ec_ptr weights, int64_t num_samples,
                   int replacement, ec_ptr out, uint64_t seed, uint64_t offset);

/* Triangles: keep elements with (col - row) >= diagonal (upper) or <= (lower) of
 * the last two dims; others become 0.  layout: shape, out strides, in strides. */
int ec_triangle(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                int64_t diagonal, int upper);

/* Sequences into contiguous out: arange (start + i * step, integers exact) and
 * linspace (PyTorch's symmetric formula: the last element is exactly `end`). */
int ec_arange(int dtype, int64_t n, ec_ptr out, double start, double step, int64_t istart,
              int64_t istep);
int ec_linspace(int dtype, int64_t n, ec_ptr out, double start, double end);

/* ---- DLPack (dlpack.c; its entry points take Python objects and are declared
 * in dlpack.h, outside this cdef).  Indices of the info array that
 * ec_dlpack_from_capsule fills. */
#define EC_DLPACK_MAJOR 1
#define EC_DLPACK_MINOR 0
#define EC_DLPACK_FLAG_READ_ONLY 1
#define EC_DLPACK_FLAG_IS_COPIED 2
#define EC_DLPACK_DATA 0          /* data + byte_offset */
#define EC_DLPACK_DEVICE_TYPE 1
#define EC_DLPACK_DEVICE_ID 2
#define EC_DLPACK_NDIM 3
#define EC_DLPACK_CODE 4          /* DLDataTypeCode */
#define EC_DLPACK_BITS 5
#define EC_DLPACK_LANES 6
#define EC_DLPACK_FLAGS 7         /* 0 for legacy capsules */
#define EC_DLPACK_HAS_STRIDES 8   /* 0: compact row-major */
#define EC_DLPACK_INFO_SIZE 9

/* cdef:end */

#endif
