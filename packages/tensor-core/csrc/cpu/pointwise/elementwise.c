/* Elementwise kernels on the CPU: unary, binary and ternary ops for every dtype
 * they apply to.
 *
 * The ops' expressions are the lists of elementwise_ops.h (shared with the CUDA
 * kernels).  Here they expand into one inner loop per (op, dtype) with a
 * contiguous fast path the compiler vectorises, and into the dispatch tables
 * ec_unary/ec_binary/ec_ternary index.  A NULL entry means the op does not exist
 * for that dtype; Python checks dtypes first, so reaching one is a bug.
 *
 * Integer arithmetic wraps (the build uses -fwrapv); integer division by zero
 * reports EC_ERR_ZERO_DIV instead of trapping.
 */
#include <tgmath.h>

#include "core.h"
#include "elementwise_ops.h"
#include "special.h"
#include "cpu_only_ops.h"

/* ---------------------------------------------------------------- unary */

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
UNARY_COMPLEX_LIST(DEFINE_UNARY, EC_COMPLEX64, c64, ec_c64, ec_c64, float, f32)
UNARY_COMPLEX_LIST(DEFINE_UNARY, EC_COMPLEX128, c128, ec_c128, ec_c128, double, f64)

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
    UNARY_COMPLEX_LIST(UNARY_ENTRY, EC_COMPLEX64, c64, ec_c64, ec_c64, float, f32)
    UNARY_COMPLEX_LIST(UNARY_ENTRY, EC_COMPLEX128, c128, ec_c128, ec_c128, double, f64)
    /* later initialisers replace the generic loops: Note [Fast float32 exp] */
    [EC_U_EXP][EC_FLOAT32] = ec_loop_exp_f32,
    [EC_U_SIGMOID][EC_FLOAT32] = ec_loop_sigmoid_f32,
    [EC_U_SILU][EC_FLOAT32] = ec_loop_silu_f32,
    /* Note [Fast float32 tanh and erf] */
    [EC_U_TANH][EC_FLOAT32] = ec_loop_tanh_f32,
    [EC_U_ERF][EC_FLOAT32] = ec_loop_erf_f32,
    [EC_U_GELU][EC_FLOAT32] = ec_loop_gelu_f32,
};

/* The output dtype: bool for predicates, the real dtype for abs/angle of complex. */
int ec_unary_out_dtype(int op, int dtype) {
    switch (op) {
        case EC_U_ISNAN: case EC_U_ISINF: case EC_U_ISFINITE: case EC_U_LOGICAL_NOT:
        case EC_U_SIGNBIT:
            return EC_BOOL;
        case EC_U_ABS: case EC_U_ANGLE:  /* complex -> its real dtype */
            return dtype == EC_COMPLEX64 ? EC_FLOAT32 : dtype == EC_COMPLEX128 ? EC_FLOAT64 : dtype;
        default:
            return dtype;
    }
}

int ec_unary_has_kernel(int op, int dtype) {
    return op >= 0 && op < EC_NUM_UNARY && ec_valid_dtype(dtype) && unary_table[op][dtype] != NULL;
}

static int unary_prepare(int op, int dtype, ec_loop* loop, int* out_dtype) {
    if (op < 0 || op >= EC_NUM_UNARY || !ec_valid_dtype(dtype))
        return ec_fail(EC_ERR_INVALID, "unary: bad op %d or dtype %d", op, dtype);
    *loop = unary_table[op][dtype];
    if (!*loop) return ec_fail(EC_ERR_DTYPE, "unary op %d has no kernel for dtype %d", op, dtype);
    *out_dtype = ec_unary_out_dtype(op, dtype);
    return EC_OK;
}

void ec_unary_params(ec_params* p, double p0, double p1) {
    p->p0 = p0;
    p->p1 = p1;
    /* integer forms of the parameters (clamp bounds, exponents, thresholds) */
    p->i0 = p0 != p0 ? INT64_MIN : ec_f2i64(p0 < -9.2e18 ? -9.2e18 : p0);
    p->i1 = p1 != p1 ? INT64_MAX : ec_f2i64(p1 > 9.2e18 ? 9.2e18 : p1);
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
    ec_unary_params(&p, p0, p1);
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
BINARY_COMPLEX_LIST(DEFINE_BINARY, EC_COMPLEX64, c64, ec_c64, ec_c64, float, f32)
BINARY_COMPLEX_LIST(DEFINE_BINARY, EC_COMPLEX128, c128, ec_c128, ec_c128, double, f64)
BINARY_WIDE_UINT_LIST(DEFINE_BINARY, EC_UINT16, u16, uint16_t, uint16_t)
BINARY_WIDE_UINT_LIST(DEFINE_BINARY, EC_UINT32, u32, uint32_t, uint32_t)
BINARY_WIDE_UINT_LIST(DEFINE_BINARY, EC_UINT64, u64, uint64_t, uint64_t)

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
    BINARY_COMPLEX_LIST(BINARY_ENTRY, EC_COMPLEX64, c64, ec_c64, ec_c64, float, f32)
    BINARY_COMPLEX_LIST(BINARY_ENTRY, EC_COMPLEX128, c128, ec_c128, ec_c128, double, f64)
    BINARY_WIDE_UINT_LIST(BINARY_ENTRY, EC_UINT16, u16, uint16_t, uint16_t)
    BINARY_WIDE_UINT_LIST(BINARY_ENTRY, EC_UINT32, u32, uint32_t, uint32_t)
    BINARY_WIDE_UINT_LIST(BINARY_ENTRY, EC_UINT64, u64, uint64_t, uint64_t)
};

int ec_binary_out_dtype(int op, int dtype) {
    return (op >= EC_B_EQ && op <= EC_B_LOGICAL_XOR) ? EC_BOOL : dtype;
}

static int binary_status(int st, int op) {
    if (st == EC_ERR_ZERO_DIV) return ec_fail(st, "integer division by zero");
    if (st == EC_ERR_VALUE) return ec_fail(st, "integers to negative integer powers are not allowed");
    if (st != EC_OK) return ec_fail(st, "binary op %d failed", op);
    return EC_OK;
}

int ec_binary_has_kernel(int op, int dtype) {
    return op >= 0 && op < EC_NUM_BINARY && ec_valid_dtype(dtype) && binary_table[op][dtype] != NULL;
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
    int sizes[3] = {ec_itemsize[ec_binary_out_dtype(op, dtype)], isz, isz};
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
        int64_t strides[3] = {ec_itemsize[ec_binary_out_dtype(op, dtype)], isz, isz};
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
        int64_t strides[3] = {ec_itemsize[ec_binary_out_dtype(op, dtype)], scalar_first ? 0 : isz,
                              scalar_first ? isz : 0};
        char* ptrs[3] = {(char*)out, scalar_first ? buf : (char*)a, scalar_first ? (char*)a : buf};
        loop(n, ptrs, strides, &p);
        return binary_status(p.status, op);
    }
    int64_t layout[3] = {n, 1, 1};
    return ec_binary_scalar(op, dtype, 1, layout, (ec_ptr)out, (ec_ptr)a, s, si, scalar_first, p0);
}

/* -------------------------------------------------------------- ternary */

#define DEFINE_TERNARY(OP, DC, sfx, T, C, OT, osfx, EXPR)                                   \
    static void t_##OP##_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) {      \
        typedef C CT;                                                                         \
        (void)prm;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                     \
            C a = EC_LOAD_##sfx(*(const T*)(p[1] + i * s[1]));                                \
            C b = EC_LOAD_##sfx(*(const T*)(p[2] + i * s[2]));                                \
            C c = EC_LOAD_##sfx(*(const T*)(p[3] + i * s[3]));                                \
            *(OT*)(p[0] + i * s[0]) = EC_STORE_##osfx(EXPR);                                  \
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
EC_CPU_DTYPES(DEFINE_WHERE)

TERNARY_FLOAT_LIST(DEFINE_TERNARY, EC_FLOAT16, f16, ec_f16, float)
TERNARY_FLOAT_LIST(DEFINE_TERNARY, EC_BFLOAT16, bf16, ec_bf16, float)
TERNARY_FLOAT_LIST(DEFINE_TERNARY, EC_FLOAT32, f32, float, float)
TERNARY_FLOAT_LIST(DEFINE_TERNARY, EC_FLOAT64, f64, double, double)
TERNARY_INT_LIST(DEFINE_TERNARY, EC_UINT8, u8, uint8_t, uint8_t)
TERNARY_INT_LIST(DEFINE_TERNARY, EC_INT8, i8, int8_t, int8_t)
TERNARY_INT_LIST(DEFINE_TERNARY, EC_INT16, i16, int16_t, int16_t)
TERNARY_INT_LIST(DEFINE_TERNARY, EC_INT32, i32, int32_t, int32_t)
TERNARY_INT_LIST(DEFINE_TERNARY, EC_INT64, i64, int64_t, int64_t)

#define WHERE_ENTRY(DC, sfx, T, C, K) [EC_T_WHERE][DC] = t_WHERE_##sfx,
#define TERNARY_ENTRY(OP, DC, sfx, T, C, OT, osfx, EXPR) [EC_T_##OP][DC] = t_##OP##_##sfx,

static const ec_loop ternary_table[EC_NUM_TERNARY][EC_NUM_DTYPES] = {
    EC_CPU_DTYPES(WHERE_ENTRY)
    TERNARY_FLOAT_LIST(TERNARY_ENTRY, EC_FLOAT16, f16, ec_f16, float)
    TERNARY_FLOAT_LIST(TERNARY_ENTRY, EC_BFLOAT16, bf16, ec_bf16, float)
    TERNARY_FLOAT_LIST(TERNARY_ENTRY, EC_FLOAT32, f32, float, float)
    TERNARY_FLOAT_LIST(TERNARY_ENTRY, EC_FLOAT64, f64, double, double)
    TERNARY_INT_LIST(TERNARY_ENTRY, EC_UINT8, u8, uint8_t, uint8_t)
    TERNARY_INT_LIST(TERNARY_ENTRY, EC_INT8, i8, int8_t, int8_t)
    TERNARY_INT_LIST(TERNARY_ENTRY, EC_INT16, i16, int16_t, int16_t)
    TERNARY_INT_LIST(TERNARY_ENTRY, EC_INT32, i32, int32_t, int32_t)
    TERNARY_INT_LIST(TERNARY_ENTRY, EC_INT64, i64, int64_t, int64_t)
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
