/* Internal helpers shared by the kernels: dtype tables, half/bfloat16
 * conversions, error reporting and the strided iterator.  Not visible to Python. */
#ifndef EMBER_CORE_INTERNAL_H
#define EMBER_CORE_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ember_core.h"

/* ------------------------------------------------------------------ dtypes */

typedef _Float16 ec_f16;
typedef uint16_t ec_bf16;

static inline float ec_bf16_to_f32(ec_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline ec_bf16 ec_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ec_bf16)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                                            /* round to nearest even */
    return (ec_bf16)(u >> 16);
}

/* Loads give the compute type, stores take it.  X(sfx, T, C): suffix, storage
 * type, compute type. */
#define EC_LOAD_b(v) ((int)((v) != 0))
#define EC_STORE_b(x) ((uint8_t)((x) != 0))
#define EC_LOAD_u8(v) (v)
#define EC_STORE_u8(x) ((uint8_t)(x))
#define EC_LOAD_i8(v) (v)
#define EC_STORE_i8(x) ((int8_t)(x))
#define EC_LOAD_i16(v) (v)
#define EC_STORE_i16(x) ((int16_t)(x))
#define EC_LOAD_i32(v) (v)
#define EC_STORE_i32(x) ((int32_t)(x))
#define EC_LOAD_i64(v) (v)
#define EC_STORE_i64(x) ((int64_t)(x))
#define EC_LOAD_f16(v) ((float)(v))
#define EC_STORE_f16(x) ((ec_f16)(x))
#define EC_LOAD_bf16(v) ec_bf16_to_f32(v)
#define EC_STORE_bf16(x) ec_f32_to_bf16(x)
#define EC_LOAD_f32(v) (v)
#define EC_STORE_f32(x) ((float)(x))
#define EC_LOAD_f64(v) (v)
#define EC_STORE_f64(x) ((double)(x))

#include "dtype_lists.h"

/* The dtypes only the CPU kernels have (Note [CPU-only dtypes]): the wide
 * unsigned integers and the complex dtypes.  They are kept out of
 * dtype_lists.h, whose lists the CUDA kernel sources expand; a CUDA tensor of
 * these dtypes raises NotImplementedError in Python before any launcher runs.
 * Complex values compute in C99's complex types; kind C. */
#include <complex.h>
#undef I /* the kind letter I of the X-macro lists, not the imaginary unit */
typedef float _Complex ec_c64;
typedef double _Complex ec_c128;
#define EC_LOAD_u16(v) (v)
#define EC_STORE_u16(x) ((uint16_t)(x))
#define EC_LOAD_u32(v) (v)
#define EC_STORE_u32(x) ((uint32_t)(x))
#define EC_LOAD_u64(v) (v)
#define EC_STORE_u64(x) ((uint64_t)(x))
#define EC_LOAD_c64(v) (v)
#define EC_STORE_c64(x) ((ec_c64)(x))
#define EC_LOAD_c128(v) (v)
#define EC_STORE_c128(x) ((ec_c128)(x))

#define EC_WIDE_UINT_DTYPES(X)                 \
    X(EC_UINT16, u16, uint16_t, uint16_t, I)   \
    X(EC_UINT32, u32, uint32_t, uint32_t, I)   \
    X(EC_UINT64, u64, uint64_t, uint64_t, I)
#define EC_COMPLEX_DTYPES(X)                   \
    X(EC_COMPLEX64, c64, ec_c64, ec_c64, C)    \
    X(EC_COMPLEX128, c128, ec_c128, ec_c128, C)
/* Every dtype the CPU kernels store (copies, fills, where, index kernels). */
#define EC_CPU_DTYPES(X) EC_ALL_DTYPES(X) EC_WIDE_UINT_DTYPES(X) EC_COMPLEX_DTYPES(X)

/* The ten dtypes every kernel family has; kernels whose loads fall back to a
 * default case check it, so a CPU-only dtype never reaches them unnoticed. */
static inline int ec_base_dtype(int d) { return d >= 0 && d <= EC_FLOAT64; }
#define EC_REQUIRE_BASE_DTYPE(name, d)                                                 \
    do {                                                                               \
        if (!ec_base_dtype(d)) return ec_fail(EC_ERR_DTYPE, "%s: no kernel for dtype code %d", name, (int)(d)); \
    } while (0)
static inline int ec_is_complex(int d) { return d == EC_COMPLEX64 || d == EC_COMPLEX128; }

/* Float to integer without undefined behaviour: NaN and values outside int64
 * become INT64_MIN (what x86 produces); narrower integers then wrap. */
static inline int64_t ec_f2i64(double v) {
    if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

extern const int ec_itemsize[EC_NUM_DTYPES];

static inline int ec_valid_dtype(int d) { return d >= 0 && d < EC_NUM_DTYPES; }
static inline int ec_is_float(int d) { return d >= EC_FLOAT16 && d <= EC_FLOAT64; }

/* ------------------------------------------------------------------ errors */

int ec_fail(int status, const char* fmt, ...);

/* --------------------------------------------------------------- iterator */

/* Parameters every elementwise loop receives. */
typedef struct ec_params {
    double p0, p1;
    int64_t i0, i1;
    int status;           /* a loop reports a data-dependent error (division by zero) here */
} ec_params;

/* An inner loop: n elements; ptrs[k] and strides[k] (bytes) for each operand,
 * the output first.  Like NumPy's ufunc loops. */
typedef void (*ec_loop)(int64_t n, char** ptrs, const int64_t* strides, ec_params* p);

#define EC_MAX_OPERANDS 4
#define EC_GRAIN 32768 /* elements per thread below which a loop stays serial */

/* Run `loop` over the strided N-d space.  strides are given per operand as
 * element strides (layout order: shape, then each operand's strides); the
 * iterator converts them to bytes, drops size-1 dims, merges dims that are
 * contiguous for every operand, and splits the flat index space across threads. */
int ec_iterate(int nops, int ndim, const int64_t* layout, const int* itemsizes, char** base,
               ec_loop loop, ec_params* p);

/* Output dtype of a unary/binary op (bool for predicates), and the parameters
 * a unary op's loops receive (elementwise.c; the CUDA launchers use them too). */
int ec_unary_out_dtype(int op, int dtype);
int ec_binary_out_dtype(int op, int dtype);
void ec_unary_params(ec_params* p, double p0, double p1);

/* Vectorised float32 loops (fast_exp.c, Note [Fast float32 exp]) that replace
 * the generic ones in elementwise.c's unary table. */
void ec_loop_exp_f32(int64_t n, char** p, const int64_t* s, ec_params* prm);
void ec_loop_sigmoid_f32(int64_t n, char** p, const int64_t* s, ec_params* prm);
void ec_loop_silu_f32(int64_t n, char** p, const int64_t* s, ec_params* prm);
/* ... and tanh, erf and GELU (Note [Fast float32 tanh and erf]). */
void ec_loop_tanh_f32(int64_t n, char** p, const int64_t* s, ec_params* prm);
void ec_loop_erf_f32(int64_t n, char** p, const int64_t* s, ec_params* prm);
void ec_loop_gelu_f32(int64_t n, char** p, const int64_t* s, ec_params* prm);

/* Row-major GEMM (ta/tb: operand transposed) on ember's threads when large
 * (blas.c, Note [BLAS threads]); OpenBLAS itself always runs one thread. */
void ec_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void ec_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

/* OpenBLAS's own threads for the LAPACK calls in between (linalg.c). */
void ec_blas_threads_begin(void);
void ec_blas_threads_end(void);

/* Threads for `work` elements of roughly `cost` units each (1 = a simple add). */
int ec_threads_for(int64_t work, int64_t grain);

#endif
