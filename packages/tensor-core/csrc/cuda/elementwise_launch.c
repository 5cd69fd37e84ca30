/* CUDA launchers of the elementwise kernel interface: copies and casts, fill,
 * unary, binary (tensor or scalar operands) and ternary ops, with the CPU
 * kernels' parameters (Note [Kernel interface per device]).
 *
 * Each launcher reduces its operands to a geometry (Note [CUDA geometry]); a
 * dense, suitably aligned result runs the contiguous kernel with vector loads,
 * anything else the strided one with 32- or 64-bit index math. */
#include "launch.h"

/* The dense case: one merged dim whose strides are the operands' item sizes,
 * every pointer aligned to a vector of ECU_VEC items. */
static int dense(const ecu_geo* g, const int* itemsizes, char* const* ptrs) {
    if (g->ndim > 1) return 0;
    for (int k = 0; k < g->nops; k++) {
        if (g->ndim == 1 && g->stride[k][0] != itemsizes[k]) return 0;
        if (ptrs[k] && !ecu_aligned((uintptr_t)ptrs[k], itemsizes[k] * ECU_VEC)) return 0;
    }
    return 1;
}

static int variant_of(int is_dense, int i32) {
    return is_dense ? ECU_VAR_C : (i32 ? ECU_VAR_S32 : ECU_VAR_S64);
}

/* A Python number as `dtype` stores it, in a buffer passed as a kernel argument. */
typedef union {
    uint64_t bits[2];
    double align;
} scalar_buf;

static void store_scalar(int dtype, double s, int64_t si, scalar_buf* buf) {
    int64_t layout[1] = {1};
    buf->bits[0] = buf->bits[1] = 0;
    ec_fill(0, layout, (ec_ptr)buf, dtype, s, si);
}

/* ------------------------------------------------------------ copy, fill */

static int cast_launch(int ndim, const int64_t* layout, ec_ptr dst, int ddt, ec_ptr src, int sdt) {
    if (!ec_valid_dtype(ddt) || !ec_valid_dtype(sdt))
        return ec_fail(EC_ERR_DTYPE, "copy: bad dtype code %d/%d", ddt, sdt);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int sizes[2] = {ec_itemsize[ddt], ec_itemsize[sdt]};
    ecu_geo g;
    int i32;
    st = ecu_geometry(2, ndim, layout, sizes, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    char* ptrs[2] = {(char*)dst, (char*)src};
    int is_dense = dense(&g, sizes, ptrs);
    if (ddt == sdt && is_dense) /* same layout, same dtype: a plain copy */
        return ecu_memcpy(dst, src, (uint64_t)g.numel * (uint64_t)sizes[0], 0);
    int var = variant_of(is_dense, i32);
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_CAST, 0, ddt, sdt, var, &f);
    if (st != EC_OK) return st;
    ec_params prm = {0};
    if (var == ECU_VAR_C) {
        int64_t n = g.numel;
        void* args[] = {&n, &dst, &src, &prm};
        return ecu_launch_elements(f, n, args);
    }
    void* args[] = {&g, &dst, &src, &prm};
    return ecu_launch_elements(f, g.numel, args);
}

int ecu_copy(int ndim, const int64_t* layout, ec_ptr dst, int dst_dtype, ec_ptr src,
             int src_dtype) {
    return cast_launch(ndim, layout, dst, dst_dtype, src, src_dtype);
}

int ecu_copy_contig(int64_t n, ec_ptr dst, int dst_dtype, ec_ptr src, int src_dtype) {
    int64_t layout[3] = {n, 1, 1};
    return cast_launch(1, layout, dst, dst_dtype, src, src_dtype);
}

int ecu_fill(int ndim, const int64_t* layout, ec_ptr dst, int dtype, double value,
             int64_t ivalue) {
    if (!ec_valid_dtype(dtype)) return ec_fail(EC_ERR_DTYPE, "fill: bad dtype code %d", dtype);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int sizes[1] = {ec_itemsize[dtype]};
    ecu_geo g;
    int i32;
    st = ecu_geometry(1, ndim, layout, sizes, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    scalar_buf v;
    store_scalar(dtype, value, ivalue, &v);
    char* ptrs[1] = {(char*)dst};
    int is_dense = dense(&g, sizes, ptrs);
    /* zero bytes (not -0.0): the driver's memset */
    if (v.bits[0] == 0 && g.ndim <= 1 && (g.ndim == 0 || g.stride[0][0] == sizes[0]))
        return ecu_memset(dst, 0, (uint64_t)g.numel * (uint64_t)sizes[0]);
    int var = variant_of(is_dense, i32);
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_FILL, 0, dtype, 0, var, &f);
    if (st != EC_OK) return st;
    if (var == ECU_VAR_C) {
        int64_t n = g.numel;
        void* args[] = {&n, &dst, &v};
        return ecu_launch_elements(f, n, args);
    }
    void* args[] = {&g, &dst, &v};
    return ecu_launch_elements(f, g.numel, args);
}

/* ------------------------------------------------------------------ unary */

int ecu_unary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
              double p0, double p1) {
    if (op < 0 || op >= EC_NUM_UNARY || !ec_valid_dtype(dtype))
        return ec_fail(EC_ERR_INVALID, "unary: bad op %d or dtype %d", op, dtype);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int sizes[2] = {ec_itemsize[ec_unary_out_dtype(op, dtype)], ec_itemsize[dtype]};
    ecu_geo g;
    int i32;
    st = ecu_geometry(2, ndim, layout, sizes, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    char* ptrs[2] = {(char*)out, (char*)x};
    int var = variant_of(dense(&g, sizes, ptrs), i32);
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_UNARY, op, dtype, 0, var, &f);
    if (st != EC_OK) return st;
    ec_params prm = {0};
    ec_unary_params(&prm, p0, p1);
    if (var == ECU_VAR_C) {
        int64_t n = g.numel;
        void* args[] = {&n, &out, &x, &prm};
        return ecu_launch_elements(f, n, args);
    }
    void* args[] = {&g, &out, &x, &prm};
    return ecu_launch_elements(f, g.numel, args);
}

int ecu_unary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr x, double p0, double p1) {
    int64_t layout[3] = {n, 1, 1};
    return ecu_unary(op, dtype, 1, layout, out, x, p0, p1);
}

/* ----------------------------------------------------------------- binary */

/* a or b may be 0: a scalar whose value is in sa/sb. */
static int binary_launch(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                         ec_ptr b, scalar_buf* sa, scalar_buf* sb, double p0) {
    if (op < 0 || op >= EC_NUM_BINARY || !ec_valid_dtype(dtype))
        return ec_fail(EC_ERR_INVALID, "binary: bad op %d or dtype %d", op, dtype);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype];
    int sizes[3] = {ec_itemsize[ec_binary_out_dtype(op, dtype)], isz, isz};
    ecu_geo g;
    int i32;
    st = ecu_geometry(3, ndim, layout, sizes, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    char* ptrs[3] = {(char*)out, (char*)a, (char*)b};
    int is_dense = dense(&g, sizes, ptrs);
    int var = variant_of(is_dense, i32);
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_BINARY, op, dtype, 0, var, &f);
    if (st != EC_OK) return st;
    ec_params prm = {0};
    prm.p0 = p0;
    prm.i0 = ec_f2i64(p0);
    if (var == ECU_VAR_C) {
        int64_t n = g.numel;
        void* args[] = {&n, &out, &a, &b, sa, sb, &prm};
        return ecu_launch_elements(f, n, args);
    }
    void* args[] = {&g, &out, &a, &b, sa, sb, &prm};
    return ecu_launch_elements(f, g.numel, args);
}

int ecu_binary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
               ec_ptr b, double p0) {
    scalar_buf zero = {{0, 0}};
    return binary_launch(op, dtype, ndim, layout, out, a, b, &zero, &zero, p0);
}

int ecu_binary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, ec_ptr b, double p0) {
    int64_t layout[4] = {n, 1, 1, 1};
    return ecu_binary(op, dtype, 1, layout, out, a, b, p0);
}

int ecu_binary_scalar(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                      double s, int64_t si, int scalar_first, double p0) {
    if (ndim < 0 || ndim > EC_MAX_DIMS) return ec_fail(EC_ERR_INVALID, "binary: too many dims");
    if (!ec_valid_dtype(dtype)) return ec_fail(EC_ERR_INVALID, "binary: bad dtype %d", dtype);
    scalar_buf sv, zero = {{0, 0}};
    store_scalar(dtype, s, si, &sv);
    /* the tensor's strides for both operands (the scalar's are never read) */
    int64_t full[1 + 3 * EC_MAX_DIMS];
    memcpy(full, layout, sizeof(int64_t) * 2 * (size_t)ndim);
    for (int d = 0; d < ndim; d++) full[2 * ndim + d] = full[3 * ndim + d] = layout[2 * ndim + d];
    if (scalar_first)
        return binary_launch(op, dtype, ndim, full, out, 0, a, &sv, &zero, p0);
    return binary_launch(op, dtype, ndim, full, out, a, 0, &zero, &sv, p0);
}

int ecu_binary_scalar_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, double s,
                             int64_t si, int scalar_first, double p0) {
    int64_t layout[3] = {n, 1, 1};
    return ecu_binary_scalar(op, dtype, 1, layout, out, a, s, si, scalar_first, p0);
}

/* ---------------------------------------------------------------- ternary */

int ecu_ternary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                ec_ptr b, ec_ptr c, double p0) {
    if (op < 0 || op >= EC_NUM_TERNARY || !ec_valid_dtype(dtype))
        return ec_fail(EC_ERR_INVALID, "ternary: bad op %d or dtype %d", op, dtype);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype];
    int sizes[4] = {isz, op == EC_T_WHERE ? 1 : isz, isz, isz};
    ecu_geo g;
    int i32;
    st = ecu_geometry(4, ndim, layout, sizes, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_TERNARY, op, dtype, 0, i32 ? ECU_VAR_S32 : ECU_VAR_S64, &f);
    if (st != EC_OK) return st;
    ec_params prm = {0};
    prm.p0 = p0;
    prm.i0 = ec_f2i64(p0);
    void* args[] = {&g, &out, &a, &b, &c, &prm};
    return ecu_launch_elements(f, g.numel, args);
}
