/* CUDA launchers of sorting and selection (cuda/sort.cuh, Note [CUDA sort]):
 * sort, topk, kthvalue (median, nanmedian) and mode, with sort.c's
 * parameters.  Lines longer than a tile sort positions in a working array:
 * the indices output for sort, else a workspace Python allocates on asking
 * ecu_sort_workspace (Note [Reduction workspace]). */
#include "launch.h"

#define ECU_SORT_TILE 2048
enum { OUT_SORT, OUT_TOPK, OUT_KTH, OUT_MODE };
enum { V_SMALL = 0, V_TILES = 1, V_STEP = 2, V_FINISH = 3 };

/* host twins of struct ecu_lines and ecu_sortp (sort.cuh) */
typedef struct ecu_lines {
    int32_t ndim, pad;
    int64_t count;
    int64_t size[ECU_MAX_DIMS];
    int64_t st[3][ECU_MAX_DIMS];
} ecu_lines;

typedef struct ecu_sortp {
    int64_t n, k;
    int64_t x_st, v_st, i_st;
    int64_t w_line, w_st;
    int32_t desc, out, kth_mode, tile;
    int64_t kstep, jstep;
} ecu_sortp;

static int64_t pow2_at_least(int64_t n) {
    int64_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

/* Lines from sort.c's layout: [batch shape (ndim), strides of x, values,
 * indices]; size-1 dims dropped. */
static int lines_of(int ndim, const int64_t* layout, ecu_lines* L, const char* op) {
    memset(L, 0, sizeof *L);
    L->count = 1;
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        int64_t s = layout[d];
        L->count *= s;
        if (s == 1) continue;
        if (nd == ECU_MAX_DIMS)
            return ec_fail(EC_ERR_INVALID, "%s: CUDA kernels take at most %d batch dims", op,
                           ECU_MAX_DIMS);
        L->size[nd] = s;
        for (int k = 0; k < 3; k++) L->st[k][nd] = layout[ndim * (1 + k) + d];
        nd++;
    }
    L->ndim = nd;
    return EC_OK;
}

uint64_t ecu_sort_workspace(int64_t lines, int64_t n) {
    return n > ECU_SORT_TILE ? (uint64_t)lines * (uint64_t)n * sizeof(int64_t) : 0;
}

/* Grid of a one-block-per-item launch (grid-stride loops cover the rest). */
static unsigned grid_of(int64_t items) {
    return (unsigned)(items < 65535 * 16 ? (items > 0 ? items : 1) : 65535 * 16);
}

static int sort_lines(const char* op, int out, int dtype, int ndim, const int64_t* layout,
                      int64_t n, int64_t k, int64_t x_st, int64_t v_st, int64_t i_st, ec_ptr values,
                      ec_ptr indices, ec_ptr x, int desc, int kth_mode) {
    EC_REQUIRE_BASE_DTYPE(op, dtype); /* the CUDA kernels' dtypes (dtype_lists.h) */
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS || n < 0)
        return ec_fail(EC_ERR_INVALID, "%s: bad arguments", op);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_lines L;
    if ((st = lines_of(ndim, layout, &L, op)) != EC_OK) return st;
    char* ws = NULL;
    uint64_t have = 0;
    ecu_take_workspace(&ws, &have);
    if (L.count == 0 || n == 0) return EC_OK;
    ecu_sortp P;
    memset(&P, 0, sizeof P);
    P.n = n;
    P.k = k;
    P.x_st = x_st;
    P.v_st = v_st;
    P.i_st = i_st;
    P.desc = desc;
    P.out = out;
    P.kth_mode = kth_mode;
    int64_t pow2 = pow2_at_least(n);
    P.tile = (int32_t)(pow2 < 64 ? 64 : pow2 > ECU_SORT_TILE ? ECU_SORT_TILE : pow2);
    int isz = ec_itemsize[dtype];
    unsigned threads = (unsigned)P.tile / 2;
    unsigned smem = (unsigned)P.tile * (8u + (isz == 8 ? 8u : 4u));
    ecu_CUfunction f;
    if (n <= ECU_SORT_TILE) {
        if ((st = ecu_get_function(ECU_FAM_SORT, 0, dtype, 0, V_SMALL, &f)) != EC_OK) return st;
        void* args[] = {&L, &P, &x, &values, &indices};
        return ecu_launch(f, grid_of(L.count), 1, 1, threads, 1, 1, smem, args);
    }
    /* the working array of positions */
    ec_ptr work;
    if (out == OUT_SORT) {
        work = indices;
        P.w_line = -1;
        P.w_st = i_st;
    } else {
        uint64_t need = ecu_sort_workspace(L.count, n);
        if (!ws || have < need)
            return ec_fail(EC_ERR_INVALID,
                           "%s: the CUDA launch needs a workspace of %llu bytes and got %llu "
                           "(ask ecu_sort_workspace, then ecu_set_workspace)",
                           op, (unsigned long long)need, (unsigned long long)have);
        work = (ec_ptr)ws;
        P.w_line = n;
        P.w_st = 1;
    }
    ecu_CUfunction tiles, step, finish;
    if ((st = ecu_get_function(ECU_FAM_SORT, 0, dtype, 0, V_TILES, &tiles)) != EC_OK) return st;
    if ((st = ecu_get_function(ECU_FAM_SORT, 0, dtype, 0, V_STEP, &step)) != EC_OK) return st;
    if ((st = ecu_get_function(ECU_FAM_SORT, 0, dtype, 0, V_FINISH, &finish)) != EC_OK) return st;
    int64_t ntiles = L.count * ((n + P.tile - 1) / P.tile);
    int first = 2;
    void* targs[] = {&L, &P, &x, &work, &first};
    if ((st = ecu_launch(tiles, grid_of(ntiles), 1, 1, threads, 1, 1, smem, targs)) != EC_OK)
        return st;
    for (int64_t kk = 2 * (int64_t)P.tile; kk <= pow2; kk <<= 1) {
        /* merge size kk: the flip, the half-cleaners down to a tile's width in
         * global memory, the narrower ones in shared memory */
        P.kstep = kk;
        for (int64_t j = 0; j == 0 || j >= P.tile; j = j ? j >> 1 : kk >> 2) {
            P.jstep = j;
            void* sargs[] = {&L, &P, &x, &work, &pow2};
            if ((st = ecu_launch_elements(step, L.count * (pow2 / 2), sargs)) != EC_OK) return st;
        }
        first = P.tile;
        void* margs[] = {&L, &P, &x, &work, &first};
        if ((st = ecu_launch(tiles, grid_of(ntiles), 1, 1, threads, 1, 1, smem, margs)) != EC_OK)
            return st;
    }
    if (out == OUT_SORT && !values) return EC_OK;
    void* fargs[] = {&L, &P, &x, &values, &indices, &work};
    return ecu_launch(finish, grid_of(L.count), 1, 1, ECU_BLOCK, 1, 1, 0, fargs);
}

int ecu_sort(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
             int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int descending) {
    if (!indices) /* the working array (Python always asks for them) */
        return ec_fail(EC_ERR_INVALID, "sort: the CUDA sort needs the indices output");
    return sort_lines("sort", OUT_SORT, dtype, ndim, layout, n, 0, x_st, v_st, i_st, values,
                      indices, x, descending != 0, 0);
}

int ecu_topk(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
             int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int largest,
             int sorted) {
    (void)sorted; /* the k are always in order */
    if (k < 0 || k > n) return ec_fail(EC_ERR_INVALID, "topk: bad arguments");
    if (k == 0) return EC_OK;
    return sort_lines("topk", OUT_TOPK, dtype, ndim, layout, n, k, x_st, v_st, i_st, values,
                      indices, x, largest != 0, 0);
}

int ecu_kthvalue(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
                 int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int mode) {
    if (n < 1 || k < 0 || k >= n || mode < EC_KTH_VALUE || mode > EC_KTH_NANMEDIAN)
        return ec_fail(EC_ERR_INVALID, "kthvalue: bad arguments");
    return sort_lines("kthvalue", OUT_KTH, dtype, ndim, layout, n, k, x_st, v_st, i_st, values,
                      indices, x, 0, mode);
}

int ecu_mode(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
             int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x) {
    if (n < 1) return ec_fail(EC_ERR_INVALID, "mode: bad arguments");
    return sort_lines("mode", OUT_MODE, dtype, ndim, layout, n, 0, x_st, v_st, i_st, values,
                      indices, x, 0, 0);
}

/* ------------------------------------------ searchsorted, bincount, histc */

enum { OP_SEARCHSORTED = 1, OP_BINCOUNT = 2, OP_HISTC = 3 };

int ecu_searchsorted(int dtype, int64_t rows, int64_t nseq, ec_ptr seq, int64_t seq_rs,
                     int64_t nval, ec_ptr vals, ec_ptr out, int out_int32, int right,
                     ec_ptr sorter, int64_t sorter_rs) {
    EC_REQUIRE_BASE_DTYPE("searchsorted", dtype);
    if (!ec_valid_dtype(dtype) || rows < 0 || nseq < 0 || nval < 0)
        return ec_fail(EC_ERR_INVALID, "searchsorted: bad arguments");
    int st = ecu_ready();
    if (st != EC_OK) return st;
    if (rows * nval == 0) return EC_OK;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_SORT, OP_SEARCHSORTED, dtype, 0, 0, &f)) != EC_OK)
        return st;
    ecu_CUdeviceptr err = ecu_error_word();
    if (!err) return ec_fail(EC_ERR_CUDA, "searchsorted: no device error word");
    void* args[] = {&rows, &nseq, &seq, &seq_rs, &nval, &vals, &out, &out_int32, &right,
                    &sorter, &sorter_rs, &err};
    return ecu_launch_elements(f, rows * nval, args);
}

int ecu_bincount(int64_t n, ec_ptr x, ec_ptr w, int w_dtype, ec_ptr out, int out_dtype,
                 int64_t nbins) {
    if (w) EC_REQUIRE_BASE_DTYPE("bincount", w_dtype);
    if (n < 0 || nbins < 0 || (w && !ec_valid_dtype(w_dtype)) ||
        (w ? (out_dtype != EC_FLOAT32 && out_dtype != EC_FLOAT64) : out_dtype != EC_INT64))
        return ec_fail(EC_ERR_INVALID, "bincount: bad arguments");
    int st = ecu_ready();
    if (st != EC_OK) return st;
    if (n == 0) return EC_OK;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_SORT, OP_BINCOUNT, out_dtype, w ? w_dtype : EC_BOOL, 0,
                               &f)) != EC_OK)
        return st;
    void* args[] = {&n, &x, &w, &out, &nbins};
    return ecu_launch_elements(f, n, args);
}

int ecu_histc(int dtype, int64_t n, ec_ptr x, ec_ptr out, int64_t bins, double lo, double hi) {
    if (!ec_is_float(dtype) || n < 0 || bins < 1)
        return ec_fail(EC_ERR_INVALID, "histc: bad arguments");
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int small = dtype == EC_FLOAT16 || dtype == EC_BFLOAT16;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_SORT, OP_HISTC, dtype, 0, small, &f)) != EC_OK) return st;
    if (small) { /* counts rounded once: one block (search.cuh) */
        void* args[] = {&n, &x, &out, &bins, &lo, &hi, &dtype};
        return ecu_launch(f, 1, 1, 1, 1024, 1, 1, 0, args);
    }
    if (n == 0) return EC_OK;
    void* args[] = {&n, &x, &out, &bins, &lo, &hi};
    return ecu_launch_elements(f, n, args);
}

/* ------------------------------------------------------------ multinomial */

enum { OP_MULTINOMIAL = 4 };

int ecu_multinomial(int dtype, int64_t rows, int64_t cats, ec_ptr weights, int64_t num_samples,
                    int replacement, ec_ptr out, uint64_t seed, uint64_t offset) {
    if (!ec_is_float(dtype) || rows < 0 || cats <= 0 || num_samples < 0)
        return ec_fail(EC_ERR_INVALID, "multinomial: bad arguments");
    int st = ecu_ready();
    if (st != EC_OK) return st;
    if (rows == 0 || num_samples == 0) return EC_OK;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_SORT, OP_MULTINOMIAL, dtype, 0, 0, &f)) != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    if (!err) return ec_fail(EC_ERR_CUDA, "multinomial: no device error word");
    void* args[] = {&rows, &cats, &weights, &num_samples, &replacement, &out, &seed, &offset, &err};
    /* one thread per row: small blocks spread the rows over the SMs */
    unsigned blocks = (unsigned)((rows + 31) / 32 < 65535 ? (rows + 31) / 32 : 65535);
    return ecu_launch(f, blocks, 1, 1, 32, 1, 1, 0, args);
}

/* ------------------------------------- per-element samplers (random_dist.cuh) */

enum { OP_RDIST = 5 };
enum { RD_GAMMA, RD_GAMMA_GRAD, RD_POISSON, RD_BINOMIAL };

static int rdist_launch(const char* op, int kind, int dtype, int64_t n, ec_ptr a, ec_ptr b,
                        ec_ptr out, uint64_t seed, uint64_t offset) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_INVALID, "%s: float32 or float64 expected", op);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    if (n <= 0) return EC_OK;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_SORT, OP_RDIST, dtype, kind, 0, &f)) != EC_OK) return st;
    /* the smallest normal of the dtype (FLT_MIN, DBL_MIN) */
    double tiny = dtype == EC_FLOAT32 ? 1.1754943508222875e-38 : 2.2250738585072014e-308;
    void* args[] = {&n, &a, &b, &out, &seed, &offset, &tiny};
    return ecu_launch_elements(f, n, args);
}

int ecu_standard_gamma(int dtype, int64_t n, ec_ptr alpha, ec_ptr out, uint64_t seed,
                       uint64_t offset) {
    return rdist_launch("_standard_gamma", RD_GAMMA, dtype, n, alpha, 0, out, seed, offset);
}

int ecu_standard_gamma_grad(int dtype, int64_t n, ec_ptr alpha, ec_ptr x, ec_ptr out) {
    return rdist_launch("_standard_gamma_grad", RD_GAMMA_GRAD, dtype, n, alpha, x, out, 0, 0);
}

int ecu_poisson(int dtype, int64_t n, ec_ptr rate, ec_ptr out, uint64_t seed, uint64_t offset) {
    return rdist_launch("poisson", RD_POISSON, dtype, n, rate, 0, out, seed, offset);
}

int ecu_binomial(int dtype, int64_t n, ec_ptr count, ec_ptr prob, ec_ptr out, uint64_t seed,
                 uint64_t offset) {
    return rdist_launch("binomial", RD_BINOMIAL, dtype, n, count, prob, out, seed, offset);
}
