/* CUDA launchers of the indexing kernels (cuda/indexing.cuh): advanced
 * indexing (ec_index, Note [Index iteration] in index.c), masked_select,
 * masked_scatter and nonzero, with the CPU kernels' parameters. */
#include "launch.h"

/* the host twin of struct ecu_ixgeo (indexing.cuh) */
#define ECU_IX_MAX_IDX 6
#define ECU_IX_OPS (2 + ECU_IX_MAX_IDX)
typedef struct ecu_ixgeo {
    int32_t ndim, nidx;
    int64_t numel;
    int64_t size[ECU_MAX_DIMS];
    int64_t stride[ECU_IX_OPS][ECU_MAX_DIMS];
    int64_t isize[ECU_IX_MAX_IDX];
    int64_t ixst[ECU_IX_MAX_IDX];
    uint64_t idx[ECU_IX_MAX_IDX];
} ecu_ixgeo;

#define ECU_NZ_MAX_DIMS 64
typedef struct ecu_nzgeo {
    int32_t ndim, pad;
    int64_t numel;
    int64_t shape[ECU_NZ_MAX_DIMS];
    int64_t stride[ECU_NZ_MAX_DIMS];
} ecu_nzgeo;

/* Kernels that only move bits are compiled per item size: the dtype code
 * standing for each size. */
static int size_dtype(int itemsize) {
    switch (itemsize) {
        case 1: return EC_UINT8;
        case 2: return EC_INT16;
        case 4: return EC_INT32;
        default: return EC_INT64;
    }
}

static int error_word(ecu_CUdeviceptr* err, const char* op) {
    *err = ecu_error_word();
    return *err ? EC_OK : ec_fail(EC_ERR_CUDA, "%s: no device error word", op);
}

/* ------------------------------------------------------------ ec_index */

int ecu_index(int mode, int dtype, int ndim, const int64_t* layout, ec_ptr values, ec_ptr x,
              int nidx, const ec_ptr* idx, const int64_t* sizes, const int64_t* xstrides,
              const int64_t* dims, double alpha) {
    (void)dims; /* the device's error word carries the index and the size only */
    EC_REQUIRE_BASE_DTYPE("index", dtype); /* the CUDA kernels' dtypes (dtype_lists.h) */
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS || nidx < 1 ||
        nidx > EC_MAX_DIMS || mode < EC_INDEX_GET || mode > EC_INDEX_MIN)
        return ec_fail(EC_ERR_INVALID, "index: bad arguments (%d dims, %d indices)", ndim, nidx);
    if (nidx > ECU_IX_MAX_IDX)
        return ec_fail(EC_ERR_INVALID,
                       "index: CUDA tensors take at most %d index tensors at once (got %d)",
                       ECU_IX_MAX_IDX, nidx);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    /* the space (as index.c's ix_setup): size-1 dims dropped, dims contiguous
     * for every operand merged */
    static _Thread_local ecu_ixgeo g;
    int nops = 2 + nidx, nd = 0;
    int64_t total = 1;
    for (int d = 0; d < ndim; d++) {
        int64_t n = layout[d];
        total *= n;
        if (n == 1) continue;
        if (nd > 0) {
            int merge = 1;
            for (int k = 0; k < nops; k++)
                merge &= g.stride[k][nd - 1] == layout[ndim * (1 + k) + d] * n;
            if (merge) {
                g.size[nd - 1] *= n;
                for (int k = 0; k < nops; k++) g.stride[k][nd - 1] = layout[ndim * (1 + k) + d];
                continue;
            }
        }
        if (nd == ECU_MAX_DIMS)
            return ec_fail(EC_ERR_INVALID,
                           "index: CUDA kernels take at most %d dims that cannot be merged",
                           ECU_MAX_DIMS);
        g.size[nd] = n;
        for (int k = 0; k < nops; k++) g.stride[k][nd] = layout[ndim * (1 + k) + d];
        nd++;
    }
    if (total == 0) return EC_OK;
    g.ndim = nd;
    g.nidx = nidx;
    g.numel = total;
    for (int k = 0; k < nidx; k++) {
        g.isize[k] = sizes[k];
        g.ixst[k] = xstrides[k];
        g.idx[k] = (uint64_t)(uintptr_t)idx[k];
    }
    int i32 = total <= 0x7fffffffll;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_INDEX, mode, dtype, 0, i32 ? ECU_VAR_S32 : ECU_VAR_S64, &f);
    if (st != EC_OK) return st;
    ecu_CUdeviceptr err;
    if ((st = error_word(&err, "index")) != EC_OK) return st;
    int64_t ialpha = (int64_t)alpha;
    void* args[] = {&g, &values, &x, &alpha, &ialpha, &err};
    return ecu_launch_elements(f, total, args);
}

/* ------------------------------------------------------------- masks */

static int masked_launch(int scatter, int dtype, int ndim, const int64_t* layout, ec_ptr x,
                         ec_ptr mask, ec_ptr buf, int64_t n) {
    const char* op = scatter ? "masked_scatter" : "masked_select";
    EC_REQUIRE_BASE_DTYPE(op, dtype);
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "%s: bad arguments", op);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int sizes[2] = {ec_itemsize[dtype], 1};
    ecu_geo g;
    int i32;
    st = ecu_geometry(2, ndim, layout, sizes, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_INDEX, scatter ? ECU_IX_MASKED_SCATTER : ECU_IX_MASKED_SELECT,
                          size_dtype(sizes[0]), 0, i32 ? ECU_VAR_S32 : ECU_VAR_S64, &f);
    if (st != EC_OK) return st;
    ecu_CUdeviceptr err;
    if ((st = error_word(&err, op)) != EC_OK) return st;
    void* args[] = {&g, &x, &mask, &buf, &n, &err};
    /* Note [Ordered compaction] (indexing.cuh): one block */
    return ecu_launch(f, 1, 1, 1, ECU_COMPACT_BLOCK, 1, 1, 0, args);
}

int ecu_masked_select(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                      ec_ptr mask) {
    return masked_launch(0, dtype, ndim, layout, x, mask, out, 0);
}

int ecu_masked_scatter(int dtype, int ndim, const int64_t* layout, ec_ptr self, ec_ptr mask,
                       ec_ptr src, int64_t src_numel) {
    return masked_launch(1, dtype, ndim, layout, self, mask, src, src_numel);
}

int ecu_nonzero(int dtype, int ndim, const int64_t* layout, ec_ptr out, int64_t st_n,
                int64_t st_d, ec_ptr x, int64_t n) {
    EC_REQUIRE_BASE_DTYPE("nonzero", dtype);
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > ECU_NZ_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "nonzero: bad arguments");
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_nzgeo g;
    memset(&g, 0, sizeof g);
    g.ndim = ndim;
    g.numel = 1;
    for (int d = 0; d < ndim; d++) {
        g.shape[d] = layout[d];
        g.stride[d] = layout[ndim + d];
        g.numel *= layout[d];
    }
    if (g.numel == 0 || n == 0) return EC_OK;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_INDEX, ECU_IX_NONZERO, dtype, 0, 0, &f);
    if (st != EC_OK) return st;
    ecu_CUdeviceptr err;
    if ((st = error_word(&err, "nonzero")) != EC_OK) return st;
    void* args[] = {&g, &out, &st_n, &st_d, &x, &n, &err};
    return ecu_launch(f, 1, 1, 1, ECU_COMPACT_BLOCK, 1, 1, 0, args);
}
