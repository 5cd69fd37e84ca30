/* CUDA launchers of the reductions (ec_reduce) and scans (ec_scan), with the
 * CPU kernels' parameters (Note [Kernel interface per device]).
 *
 * Note [CUDA reductions]
 * A reduction is a set of outputs, each over the same reduced index space.
 * The launcher turns the layout into an output geometry (Note [CUDA
 * geometry]: out, idx and input strides) and a reduced geometry (size-1 dims
 * dropped, contiguous neighbours merged, order kept: arg indices count
 * row-major over the reduced dims), then picks one of two kernels
 * (ecu_reduce_plan_of):
 *  - inner: when the reduced dims are the fast-moving ones (row sums, full
 *    reductions), a group of lanes (a warp up to a 512-thread block) reduces
 *    each output with 16-byte vector loads of a dense run, several in flight,
 *    then warp shuffles and shared memory;
 *  - outer: when neighbouring outputs are neighbours in memory (column sums)
 *    or the reduced range is short, one thread per output reads coalesced
 *    across the warp, with blockDim.y threads splitting the reduced range.
 * When the outputs alone cannot fill the GPU (a full reduction, a few tall
 * columns), the reduced range is also split over gridDim.y blocks, which
 * write partial states to a workspace; a second kernel merges each output's
 * partials in a fixed order, so results are deterministic run to run.
 *
 * Note [Reduction workspace]
 * Kernels never allocate.  A launch that splits needs ECU_RED_SLOT bytes per
 * output and split; ecu_reduce_workspace (ecu_scan_workspace) says how many
 * bytes a call will need (0 when it does not split, always the case below
 * ECU_RED_SPLIT_MIN elements), the Python side allocates that much on the
 * device's current stream and hands it over with ecu_set_workspace just
 * before the launch, which takes it (a per-thread slot, cleared when taken).
 * The memory goes back to ember_allocator when Python drops it, and the
 * allocator's stream-ordered pool keeps it from other streams until then;
 * later work on the stream runs after the reduction.
 */
#include <stdlib.h>

#include "launch.h"

#define ECU_RED_DIMS 16

typedef struct ecu_rgeo {
    int32_t ndim, i32;
    int64_t numel;
    int64_t size[ECU_RED_DIMS];
    ecu_div div[ECU_RED_DIMS];
    int64_t stride[ECU_RED_DIMS]; /* bytes */
} ecu_rgeo;

typedef struct ecu_rprm {
    int64_t count, nout, chunk;
    double p0;
    char* out;
    char* idx;
    const char* x;
    char* ws;
    int32_t out_dtype, pad;
} ecu_rprm;

/* ------------------------------------------------------------- workspace */

static _Thread_local struct {
    ec_ptr ptr;
    uint64_t nbytes;
} tls_ws;

void ecu_set_workspace(ec_ptr ptr, uint64_t nbytes) {
    tls_ws.ptr = ptr;
    tls_ws.nbytes = nbytes;
}

/* The workspace Python set for this launch (taken: the slot is cleared, so a
 * workspace never outlives the call it was set for). */
static void take_workspace(char** ws, uint64_t* nbytes) {
    *ws = (char*)tls_ws.ptr;
    *nbytes = tls_ws.ptr ? tls_ws.nbytes : 0;
    tls_ws.ptr = 0;
    tls_ws.nbytes = 0;
}

void ecu_take_workspace(char** ws, uint64_t* nbytes) { take_workspace(ws, nbytes); }

static int check_workspace(uint64_t need, uint64_t have, const char* op) {
    if (need <= have) return EC_OK;
    return ec_fail(EC_ERR_INVALID,
                   "%s: the CUDA launch needs a workspace of %llu bytes and got %llu (Note "
                   "[Reduction workspace]: ask ecu_%s_workspace, then ecu_set_workspace)",
                   op, (unsigned long long)need, (unsigned long long)have, op);
}

/* ---------------------------------------------------------------- tuning */

static int sm_counts[64];
static int target_per_sm = 1024; /* threads per SM a launch aims to fill */

static int sm_count(void) {
    int dev = ecu_device();
    if (dev < 0 || dev >= 64) return 132;
    if (!sm_counts[dev]) {
        int v = 0;
        if (ecu_device_attribute(dev, ECU_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &v) != EC_OK ||
            v <= 0)
            v = 132;
        sm_counts[dev] = v;
    }
    return sm_counts[dev];
}

void ecu_reduce_tuning(int threads_per_sm) {
    target_per_sm = threads_per_sm > 0 ? threads_per_sm : 1024;
}

static int64_t pow2ceil(int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ------------------------------------------------------------------ plan */

typedef struct ecu_rplan {
    int64_t kind, bx, by, gx, gy, chunk, smem, ws;
} ecu_rplan;

/* Note [CUDA reductions]: the launch configuration for O outputs of R
 * elements each (itemsize isz), `inner` when the reduced elements are the
 * fast-moving ones, on a GPU of `sms` multiprocessors. */
static void plan_of(int64_t O, int64_t R, int isz, int inner, int sms, ecu_rplan* p) {
    /* a split's partials cost a second pass: the outer kernel, whose lanes
     * already read coalesced, splits only to reach half the inner's target
     * (on an H200: column sums of 4096 x 4096 float32 in 45 us instead of 53) */
    int64_t target = (int64_t)sms * (inner ? target_per_sm : target_per_sm / 2);
    memset(p, 0, sizeof *p);
    p->gy = 1;
    p->chunk = R;
    if (R == 0) inner = 0;
    if (inner) {
        int64_t vec = isz >= 4 ? 16 / isz : 4;
        p->kind = ECU_RED_INNER;
        /* lanes per output: each gets at least 16 vector loads (4 rounds of
         * 4 in flight) before the row needs more lanes */
        p->bx = 32;
        while (p->bx < 512 && p->bx * vec * 16 < R) p->bx <<= 1;
        p->by = 512 / p->bx;
        if (p->by > pow2ceil(O)) p->by = pow2ceil(O);
        p->gx = cdiv(O, p->by);
        int64_t threads = p->gx * p->bx * p->by;
        if (O * R >= ECU_RED_SPLIT_MIN && threads < target) {
            int64_t want = cdiv(target, threads), most = R / (p->bx * vec * 16);
            p->gy = want < most ? want : most;
        }
        p->smem = p->bx > 32 ? p->by * (p->bx / 32) * ECU_RED_SLOT : 0;
    } else {
        p->kind = ECU_RED_OUTER;
        p->bx = O < 32 ? pow2ceil(O) : 32;
        p->by = 1;
        while (p->by * 2 * p->bx <= 512 && p->by * 2 * 16 <= R) p->by <<= 1;
        p->gx = cdiv(O, p->bx);
        int64_t threads = p->gx * p->bx * p->by;
        if (O * R >= ECU_RED_SPLIT_MIN && threads < target) {
            int64_t want = cdiv(target, threads), most = R / (p->by * 16);
            p->gy = want < most ? want : most;
        }
        p->smem = p->by > 1 ? p->bx * p->by * ECU_RED_SLOT : 0;
    }
    if (p->gy > 65535) p->gy = 65535;
    if (p->gy > 1) {
        p->chunk = cdiv(cdiv(R, p->gy), 16) * 16; /* keeps each split's start aligned */
        p->gy = cdiv(R, p->chunk);
    }
    if (p->gy <= 1) {
        p->gy = 1;
        p->chunk = R;
    }
    p->ws = p->gy > 1 ? p->gy * O * ECU_RED_SLOT : 0;
}

/* The reduced geometry of layout's reduced part (bytes; dims of size 1
 * dropped, contiguous neighbours merged in order). */
static int reduced_geometry(int ndim_red, const int64_t* rshape, const int64_t* rst, int isz,
                            ecu_rgeo* g) {
    int64_t shape[EC_MAX_DIMS], st[EC_MAX_DIMS];
    int nd = 0;
    g->numel = 1;
    for (int k = 0; k < ndim_red; k++) {
        if (rshape[k] < 0) return ec_fail(EC_ERR_INVALID, "reduce: negative size");
        g->numel *= rshape[k];
        if (rshape[k] == 1) continue;
        int64_t s = rst[k] * isz;
        if (nd > 0 && st[nd - 1] == s * rshape[k]) {
            shape[nd - 1] *= rshape[k];
            st[nd - 1] = s;
            continue;
        }
        shape[nd] = rshape[k];
        st[nd] = s;
        nd++;
    }
    if (g->numel == 0) { /* nothing to read: every output gets the empty result */
        g->ndim = 0;
        g->i32 = 1;
        return EC_OK;
    }
    if (nd > ECU_RED_DIMS)
        return ec_fail(EC_ERR_INVALID,
                       "CUDA reductions take at most %d reduced dims that cannot be merged; this "
                       "layout has %d (make the tensor contiguous first)", ECU_RED_DIMS, nd);
    g->ndim = nd;
    g->i32 = g->numel < (1ll << 31);
    for (int k = 0; k < nd; k++) {
        g->size[k] = shape[k];
        g->stride[k] = st[k];
        ecu_make_divisor(&g->div[k], shape[k] < (1ll << 31) ? (uint32_t)shape[k] : 1u);
    }
    return EC_OK;
}

/* Geometries and plan of a reduction. */
typedef struct rsetup {
    ecu_geo og;
    ecu_rgeo rg;
    ecu_rplan plan;
    int64_t nout, count;
} rsetup;

static int setup(int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
                 int sms, rsetup* s) {
    if (!ec_valid_dtype(dtype) || !ec_valid_dtype(out_dtype))
        return ec_fail(EC_ERR_INVALID, "reduce: bad dtype %d/%d", dtype, out_dtype);
    if (ndim_out < 0 || ndim_red < 0 || ndim_out > EC_MAX_DIMS || ndim_red > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "reduce: bad dims %d/%d", ndim_out, ndim_red);
    int isz = ec_itemsize[dtype];
    /* output space: shape, then out, idx and input strides (idx as out's) */
    int64_t olay[1 + 3 * EC_MAX_DIMS];
    for (int k = 0; k < ndim_out; k++) {
        olay[k] = layout[k];
        olay[ndim_out + k] = layout[ndim_out + k];
        olay[2 * ndim_out + k] = layout[ndim_out + k];
        olay[3 * ndim_out + k] = layout[2 * ndim_out + k];
    }
    int sizes[3] = {ec_itemsize[out_dtype], 8, isz};
    int i32;
    int st = ecu_geometry(3, ndim_out, olay, sizes, &s->og, &i32);
    if (st != EC_OK) return st;
    s->nout = s->og.numel;
    st = reduced_geometry(ndim_red, layout + 3 * ndim_out, layout + 3 * ndim_out + ndim_red, isz,
                          &s->rg);
    if (st != EC_OK) return st;
    s->count = s->rg.numel;
    int64_t rs = s->rg.ndim ? llabs(s->rg.stride[s->rg.ndim - 1]) : 0;
    int64_t os = s->og.ndim ? llabs(s->og.stride[2][s->og.ndim - 1]) : INT64_MAX;
    int inner = s->rg.ndim > 0 && rs < os && (s->count >= 32 || s->nout == 1);
    plan_of(s->nout, s->count, isz, inner, sms, &s->plan);
    if (s->plan.gx > 0x7fffffffLL)
        return ec_fail(EC_ERR_INVALID, "reduce: %lld outputs are too many for one CUDA launch",
                       (long long)s->nout);
    return EC_OK;
}

int ecu_reduce_plan(int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
                    int sms, int64_t* plan) {
    rsetup s;
    int st = setup(dtype, out_dtype, ndim_out, ndim_red, layout, sms, &s);
    if (st != EC_OK) return st;
    memcpy(plan, &s.plan, sizeof s.plan);
    return EC_OK;
}

uint64_t ecu_reduce_workspace(int op, int dtype, int out_dtype, int ndim_out, int ndim_red,
                              const int64_t* layout) {
    if (ecu_ready() != EC_OK) return 0;
    rsetup s;
    if (setup(dtype, out_dtype, ndim_out, ndim_red, layout, sm_count(), &s) != EC_OK) return 0;
    return s.nout ? (uint64_t)s.plan.ws : 0;
}

static int float_only(int op) {
    return op == EC_R_MEAN || op == EC_R_NANSUM || op == EC_R_VAR || op == EC_R_STD ||
           op == EC_R_NORM || op == EC_R_LOGSUMEXP;
}

int ecu_reduce(int op, int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
               ec_ptr out, ec_ptr idx, ec_ptr x, double p0) {
    char* ws;
    uint64_t have;
    take_workspace(&ws, &have);
    if (op < 0 || op >= EC_NUM_REDUCE)
        return ec_fail(EC_ERR_INVALID, "reduce: bad op %d", op);
    if (float_only(op) && !ec_is_float(dtype))
        return ec_fail(EC_ERR_DTYPE,
                       "reduce: on CUDA this reduction takes floating-point inputs (dtype %d)",
                       dtype);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    rsetup s;
    st = setup(dtype, out_dtype, ndim_out, ndim_red, layout, sm_count(), &s);
    if (st != EC_OK || s.nout == 0) return st;
    const ecu_rplan* pl = &s.plan;
    st = check_workspace((uint64_t)pl->ws, have, "reduce");
    if (st != EC_OK) return st;
    ecu_rprm prm;
    memset(&prm, 0, sizeof prm);
    prm.count = s.count;
    prm.nout = s.nout;
    prm.chunk = pl->chunk;
    prm.p0 = p0;
    prm.out = (char*)out;
    prm.idx = (char*)idx;
    prm.x = (const char*)x;
    prm.ws = ws;
    prm.out_dtype = out_dtype;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_REDUCE, op, dtype, 0, (int)pl->kind, &f);
    if (st != EC_OK) return st;
    void* args[] = {&s.og, &s.rg, &prm};
    st = ecu_launch(f, (unsigned)pl->gx, (unsigned)pl->gy, 1, (unsigned)pl->bx, (unsigned)pl->by,
                    1, (unsigned)pl->smem, args);
    if (st != EC_OK || pl->gy == 1) return st;
    st = ecu_get_function(ECU_FAM_REDUCE, op, dtype, 0, ECU_RED_FINAL, &f);
    if (st != EC_OK) return st;
    int gy = (int)pl->gy;
    void* fargs[] = {&s.og, &prm, &gy};
    return ecu_launch(f, (unsigned)cdiv(s.nout, 8), 1, 1, 32, 8, 1, 0, fargs);
}

/* ------------------------------------------------------------------ scans */

typedef struct ecu_sprm {
    int64_t len, nlines, chunk;
    int64_t ost, ist, xst;
    char* out;
    const char* x;
    char* idx;
    char* ws;
    int32_t out_dtype, fl;
} ecu_sprm;

typedef struct ssetup {
    ecu_geo lg;
    ecu_sprm prm;
    int64_t kind, gy, ws;
} ssetup;

/* Note [CUDA reductions], scans: one thread per line when lines are short,
 * or are neighbours in memory and many; otherwise blocks scan a line in tiles,
 * and a line too long for the blocks the lines alone give is split: a first
 * pass writes each split's total, the second starts each split from the
 * in-order total of the splits before it. */
static int scan_setup(int dtype, int out_dtype, int ndim, int dim, const int64_t* layout, int sms,
                      ssetup* s) {
    if (!ec_valid_dtype(dtype) || !ec_valid_dtype(out_dtype) || ndim < 1 || ndim > EC_MAX_DIMS ||
        dim < 0 || dim >= ndim)
        return ec_fail(EC_ERR_INVALID, "scan: bad arguments");
    int isz = ec_itemsize[dtype], osz = ec_itemsize[out_dtype];
    const int64_t* shape = layout;
    const int64_t* ost = layout + ndim;
    const int64_t* ist = layout + 2 * ndim;
    const int64_t* xst = layout + 3 * ndim;
    int64_t llay[3 * EC_MAX_DIMS + 1];
    int m = ndim - 1, k = 0;
    for (int d = 0; d < ndim; d++) {
        if (d == dim) continue;
        llay[k] = shape[d];
        llay[m + k] = ost[d];
        llay[2 * m + k] = ist[d];
        llay[3 * m + k] = xst[d];
        k++;
    }
    int sizes[3] = {osz, isz, 8};
    int i32;
    int st = ecu_geometry(3, m, llay, sizes, &s->lg, &i32);
    if (st != EC_OK) return st;
    memset(&s->prm, 0, sizeof s->prm);
    int64_t L = s->lg.numel, N = shape[dim];
    s->prm.len = N;
    s->prm.nlines = L;
    s->prm.ost = ost[dim] * osz;
    s->prm.ist = ist[dim] * isz;
    s->prm.xst = xst[dim] * 8;
    s->prm.out_dtype = out_dtype;
    s->prm.fl = ec_is_float(dtype) || ec_is_float(out_dtype);
    s->gy = 1;
    s->ws = 0;
    s->prm.chunk = N;
    int adjacent = s->lg.ndim > 0 && llabs(s->lg.stride[1][s->lg.ndim - 1]) < llabs(s->prm.ist);
    if (N <= 32 || (adjacent && L >= 1024)) {
        s->kind = ECU_SCAN_SEQ;
        return EC_OK;
    }
    s->kind = ECU_SCAN_LINE;
    if (L > 0x7fffffffLL)
        return ec_fail(EC_ERR_INVALID, "scan: %lld lines are too many for one CUDA launch",
                       (long long)L);
    const int64_t bx = ECU_SCAN_BLOCK, tile = ECU_SCAN_BLOCK * 4;
    int64_t target = (int64_t)sms * target_per_sm;
    if (L * bx < target && L * N >= ECU_RED_SPLIT_MIN) {
        int64_t want = cdiv(target, L * bx), most = N / (4 * tile);
        int64_t gy = want < most ? want : most;
        if (gy > 65535) gy = 65535;
        if (gy > 1) {
            s->prm.chunk = cdiv(cdiv(N, gy), tile) * tile;
            s->gy = cdiv(N, s->prm.chunk);
        }
    }
    if (s->gy <= 1) {
        s->gy = 1;
        s->prm.chunk = N;
    }
    s->ws = s->gy > 1 ? L * s->gy * ECU_RED_SLOT : 0;
    return EC_OK;
}

int ecu_scan_plan(int dtype, int out_dtype, int ndim, int dim, const int64_t* layout, int sms,
                  int64_t* plan) {
    ssetup s;
    int st = scan_setup(dtype, out_dtype, ndim, dim, layout, sms, &s);
    if (st != EC_OK) return st;
    plan[0] = s.kind;
    plan[1] = s.gy;
    plan[2] = s.prm.chunk;
    plan[3] = s.ws;
    return EC_OK;
}

uint64_t ecu_scan_workspace(int op, int dtype, int out_dtype, int ndim, int dim,
                            const int64_t* layout) {
    if (ecu_ready() != EC_OK) return 0;
    ssetup s;
    if (scan_setup(dtype, out_dtype, ndim, dim, layout, sm_count(), &s) != EC_OK) return 0;
    return (uint64_t)s.ws;
}

int ecu_scan(int op, int dtype, int out_dtype, int ndim, int dim, const int64_t* layout,
             ec_ptr out, ec_ptr idx, ec_ptr x) {
    char* ws;
    uint64_t have;
    take_workspace(&ws, &have);
    if (op < 0 || op >= EC_NUM_SCAN) return ec_fail(EC_ERR_INVALID, "scan: bad op %d", op);
    if (op == EC_S_LOGCUMSUMEXP && !ec_is_float(dtype))
        return ec_fail(EC_ERR_DTYPE, "logcumsumexp: floating-point inputs only on CUDA");
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ssetup s;
    st = scan_setup(dtype, out_dtype, ndim, dim, layout, sm_count(), &s);
    if (st != EC_OK || s.prm.nlines == 0 || s.prm.len == 0) return st;
    st = check_workspace((uint64_t)s.ws, have, "scan");
    if (st != EC_OK) return st;
    s.prm.out = (char*)out;
    s.prm.x = (const char*)x;
    s.prm.idx = (char*)idx;
    s.prm.ws = ws;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_SCAN, op, dtype, 0, (int)s.kind, &f);
    if (st != EC_OK) return st;
    if (s.kind == ECU_SCAN_SEQ) {
        void* args[] = {&s.lg, &s.prm};
        return ecu_launch(f, (unsigned)cdiv(s.prm.nlines, 256), 1, 1, 256, 1, 1, 0, args);
    }
    unsigned smem = (ECU_SCAN_BLOCK / 32) * ECU_RED_SLOT;
    int mode = 0;
    void* args[] = {&s.lg, &s.prm, &mode};
    if (s.gy > 1) {
        st = ecu_launch(f, (unsigned)s.prm.nlines, (unsigned)s.gy, 1, ECU_SCAN_BLOCK, 1, 1, smem,
                        args);
        if (st != EC_OK) return st;
    }
    mode = 1;
    return ecu_launch(f, (unsigned)s.prm.nlines, (unsigned)s.gy, 1, ECU_SCAN_BLOCK, 1, 1, smem,
                      args);
}
