/* Indexing kernels: advanced indexing (get, put, accumulate), which also serves
 * gather/scatter, index_select/index_add/index_copy/index_fill, take and put;
 * and the mask kernels (masked_select, masked_scatter, nonzero).
 *
 * Note [Index iteration]
 * Every indexing op is an iteration over one N-d space (the result's shape for a
 * get, the shape of the written values for a put) with a few strided operands:
 * the values, `x` restrided so that its indexed dims have stride 0, and the
 * int64 index tensors broadcast into the space.  At each point the address in x
 * is x's strided offset plus, for each index k, idx_k * xstride_k (negative
 * values wrap once; anything else out of range fails with EC_ERR_INDEX).
 *
 * Note [Deterministic writes]
 * Puts and accumulations give the serial result: duplicates resolve last-wins
 * and sums add in index order, so results never depend on the thread count.
 * They run in parallel only over an outer dim that addresses x directly
 * (distinct coordinates there are distinct elements, so threads never write the
 * same element); otherwise serially, as PyTorch's CPU index_add_ and
 * accumulating index_put_ do.
 */
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core.h"

#ifndef _OPENMP
#define omp_get_thread_num() 0
#define omp_get_num_threads() 1
#endif

#define IX_MAX_OPS (EC_MAX_DIMS + 2)

/* ------------------------------------------------------------ iteration */

typedef struct ixspace {
    int nd, nops;
    int64_t total;
    int64_t shape[EC_MAX_DIMS];
    int64_t st[IX_MAX_OPS][EC_MAX_DIMS]; /* element strides */
} ixspace;

/* Build the space from a shape and each operand's element strides: drop size-1
 * dims, merge dims contiguous for every operand.  Returns the element count. */
static int64_t ix_setup(ixspace* s, int nops, int ndim, const int64_t* shape,
                        const int64_t* const* strides) {
    s->nops = nops;
    int nd = 0;
    int64_t total = 1;
    for (int d = 0; d < ndim; d++) {
        int64_t n = shape[d];
        total *= n;
        if (n == 1) continue;
        if (nd > 0) {
            int merge = 1;
            for (int k = 0; k < nops; k++) merge &= s->st[k][nd - 1] == strides[k][d] * n;
            if (merge) {
                s->shape[nd - 1] *= n;
                for (int k = 0; k < nops; k++) s->st[k][nd - 1] = strides[k][d];
                continue;
            }
        }
        s->shape[nd] = n;
        for (int k = 0; k < nops; k++) s->st[k][nd] = strides[k][d];
        nd++;
    }
    s->nd = nd;
    s->total = total;
    return total;
}

/* A run: n points along the inner dim; off[k] is operand k's element offset at
 * the first point, st[k] its inner stride. */
typedef void (*ix_run)(void* ctx, int64_t n, const int64_t* off, const int64_t* st);

/* Visit flat points [lo, hi) of the space in runs along its inner dim. */
static void ix_range(const ixspace* s, void* ctx, ix_run run, int64_t lo, int64_t hi) {
    int nd = s->nd, nops = s->nops;
    int64_t off[IX_MAX_OPS], inner[IX_MAX_OPS];
    if (nd == 0) {
        for (int k = 0; k < nops; k++) off[k] = inner[k] = 0;
        if (lo < hi) run(ctx, 1, off, inner);
        return;
    }
    int64_t idx[EC_MAX_DIMS];
    int64_t rem = lo;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % s->shape[d];
        rem /= s->shape[d];
    }
    for (int k = 0; k < nops; k++) {
        off[k] = 0;
        for (int d = 0; d < nd; d++) off[k] += idx[d] * s->st[k][d];
        inner[k] = s->st[k][nd - 1];
    }
    int64_t len = s->shape[nd - 1];
    int64_t pos = lo;
    while (pos < hi) {
        int64_t n = len - idx[nd - 1];
        if (n > hi - pos) n = hi - pos;
        run(ctx, n, off, inner);
        pos += n;
        if (pos >= hi) break;
        idx[nd - 1] += n;
        for (int k = 0; k < nops; k++) off[k] += n * inner[k];
        for (int d = nd - 1; d > 0 && idx[d] == s->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int k = 0; k < nops; k++) off[k] += s->st[k][d - 1] - s->shape[d] * s->st[k][d];
        }
    }
}

/* ------------------------------------------------------ advanced indexing */

typedef struct ixctx {
    int mode, dtype, isz, nidx;
    char* v;       /* values: read by puts, written by gets */
    char* x;
    const int64_t* idx[EC_MAX_DIMS];
    int64_t size[EC_MAX_DIMS];
    int64_t xst[EC_MAX_DIMS];
    double alpha;
    int64_t ialpha;
    /* the first out-of-range index seen */
    int err, err_k;
    int64_t err_value;
} ixctx;

static void note_bad(ixctx* c, int k, int64_t v) {
#pragma omp critical(ec_index_error)
    {
        if (!c->err) {
            c->err = 1;
            c->err_k = k;
            c->err_value = v;
        }
    }
}

/* The element offset into x of point i of a run (operands: 0 values, 1 x,
 * 2.. indices) in *o; 0 when an index is out of range (recorded). */
static inline int x_offset(ixctx* c, const int64_t* off, const int64_t* st, int64_t i,
                           int64_t* o) {
    int64_t r = off[1] + i * st[1];
    for (int k = 0; k < c->nidx; k++) {
        int64_t v = c->idx[k][off[2 + k] + i * st[2 + k]];
        int64_t n = c->size[k];
        if (v < 0) v += n;
        if ((uint64_t)v >= (uint64_t)n) {
            note_bad(c, k, c->idx[k][off[2 + k] + i * st[2 + k]]);
            return 0;
        }
        r += v * c->xst[k];
    }
    *o = r;
    return 1;
}

/* Get with one index: the hot path of x[idx], index_select, gather, take. */
#define GET1(T)                                                                  \
    do {                                                                         \
        T* vp = (T*)c->v;                                                        \
        const T* xp = (const T*)c->x;                                            \
        const int64_t* ip = c->idx[0] + off[2];                                  \
        int64_t n0 = c->size[0], xs = c->xst[0], is = st[2];                     \
        int64_t vo = off[0], vs = st[0], xo = off[1], xis = st[1];               \
        for (int64_t i = 0; i < n; i++) {                                        \
            int64_t j = ip[i * is];                                              \
            if (j < 0) j += n0;                                                  \
            if ((uint64_t)j >= (uint64_t)n0) {                                   \
                note_bad(c, 0, ip[i * is]);                                      \
                return;                                                          \
            }                                                                    \
            vp[vo + i * vs] = xp[xo + i * xis + j * xs];                         \
        }                                                                        \
    } while (0)

static void run_get(void* ctx, int64_t n, const int64_t* off, const int64_t* st) {
    ixctx* c = ctx;
    if (c->err) return;
    if (c->nidx == 1) {
        switch (c->isz) {
            case 1: GET1(uint8_t); return;
            case 2: GET1(uint16_t); return;
            case 4: GET1(uint32_t); return;
            case 8: GET1(uint64_t); return;
            default: break; /* complex128: the copy loop below */
        }
    }
    int isz = c->isz;
    for (int64_t i = 0; i < n; i++) {
        int64_t o;
        if (!x_offset(c, off, st, i, &o)) return;
        memcpy(c->v + (off[0] + i * st[0]) * isz, c->x + o * isz, (size_t)isz);
    }
}

static void run_check(void* ctx, int64_t n, const int64_t* off, const int64_t* st) {
    ixctx* c = ctx;
    for (int k = 0; k < c->nidx && !c->err; k++) {
        const int64_t* ip = c->idx[k] + off[2 + k];
        int64_t s = st[2 + k], sz = c->size[k];
        for (int64_t i = 0; i < n; i++) {
            int64_t v = ip[i * s];
            if (v < 0 ? v + sz < 0 : v >= sz) {
                note_bad(c, k, v);
                return;
            }
        }
    }
}

/* Writes (put and the reductions) of one point; x_o is x's element offset. */
#define REDUCE_STORE(CODE, sfx, T, C, K)                                             \
    case CODE: {                                                               \
        T* xp = (T*)c->x + xo;                                                       \
        C a = EC_LOAD_##sfx(*xp), b = EC_LOAD_##sfx(((const T*)c->v)[vo]);           \
        C r;                                                                         \
        switch (c->mode) {                                                           \
            case EC_INDEX_ADD: r = ADD_##K(a, b, C); break;                          \
            case EC_INDEX_MUL: r = MUL_##K(a, b, C); break;                          \
            case EC_INDEX_MAX: r = MAX_##K(a, b); break;                             \
            default: r = MIN_##K(a, b); break;                                       \
        }                                                                            \
        *xp = EC_STORE_##sfx(r);                                                     \
        break;                                                                       \
    }

#define ADD_B(a, b, C) ((a) || (b))
#define ADD_I(a, b, C) ((C)((a) + (C)(c->ialpha * (b))))
#define ADD_F(a, b, C) ((a) + (C)(c->alpha * (b)))
#define MUL_B(a, b, C) ((a) && (b))
#define MUL_I(a, b, C) ((C)((a) * (b)))
#define MUL_F(a, b, C) ((a) * (b))
#define MAX_B(a, b) ((a) || (b))
#define MIN_B(a, b) ((a) && (b))
#define MAX_I(a, b) ((a) > (b) ? (a) : (b))
#define MIN_I(a, b) ((a) < (b) ? (a) : (b))
/* NaN propagating, as PyTorch's scatter_reduce amax/amin */
#define MAX_F(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))
#define MIN_F(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b))


static inline void write_point(ixctx* c, int64_t xo, int64_t vo) {
    if (c->mode == EC_INDEX_PUT) {
        int isz = c->isz;
        memcpy(c->x + xo * isz, c->v + vo * isz, (size_t)isz);
        return;
    }
    if (c->mode == EC_INDEX_ADD && c->dtype == EC_FLOAT32 && c->alpha == 1.0) {
        ((float*)c->x)[xo] += ((const float*)c->v)[vo];
        return;
    }
    switch (c->dtype) { EC_ALL_DTYPES(REDUCE_STORE) }
}

/* Puts with one index (index_add, index_copy, scatter, x[idx] = v, ...); the
 * indices were validated before. */
#define PUT1(T, OP)                                                                  \
    do {                                                                             \
        T* xp = (T*)c->x;                                                            \
        const T* vp = (const T*)c->v;                                                \
        const int64_t* ip = c->idx[0] + off[2];                                      \
        int64_t n0 = c->size[0], xs = c->xst[0], is = st[2];                         \
        int64_t vo = off[0], vs = st[0], xo = off[1], xis = st[1];                   \
        for (int64_t i = 0; i < n; i++) {                                            \
            int64_t j = ip[i * is];                                                  \
            if (j < 0) j += n0;                                                      \
            T* dst = xp + xo + i * xis + j * xs;                                     \
            T src = vp[vo + i * vs];                                                 \
            OP;                                                                      \
        }                                                                            \
    } while (0)

static int put1_fast(ixctx* c, int64_t n, const int64_t* off, const int64_t* st) {
    if (c->mode == EC_INDEX_PUT) {
        switch (c->isz) {
            case 1: PUT1(uint8_t, *dst = src); return 1;
            case 2: PUT1(uint16_t, *dst = src); return 1;
            case 4: PUT1(uint32_t, *dst = src); return 1;
            case 8: PUT1(uint64_t, *dst = src); return 1;
            default: return 0; /* complex128: write_point's copy */
        }
    }
    if (c->mode != EC_INDEX_ADD) return 0;
    double a = c->alpha;
    int64_t ia = c->ialpha;
    switch (c->dtype) {
        case EC_FLOAT32:
            if (a == 1.0) PUT1(float, *dst += src);
            else PUT1(float, *dst += (float)(a * src));
            return 1;
        case EC_FLOAT64: PUT1(double, *dst += a * src); return 1;
        case EC_INT64: PUT1(int64_t, *dst = (int64_t)((uint64_t)*dst + (uint64_t)ia * (uint64_t)src)); return 1;
        case EC_INT32: PUT1(int32_t, *dst = (int32_t)(*dst + (int32_t)(ia * src))); return 1;
        default: return 0;
    }
}

static void run_put(void* ctx, int64_t n, const int64_t* off, const int64_t* st) {
    ixctx* c = ctx;
    if (c->nidx == 1 && put1_fast(c, n, off, st)) return;
    for (int64_t i = 0; i < n; i++) {
        int64_t o;
        if (!x_offset(c, off, st, i, &o)) return;
        write_point(c, o, off[0] + i * st[0]);
    }
}

int ec_index(int mode, int dtype, int ndim, const int64_t* layout, ec_ptr values, ec_ptr x,
             int nidx, const ec_ptr* idx, const int64_t* sizes, const int64_t* xstrides,
             const int64_t* dims, double alpha) {
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS || nidx < 1 || nidx > EC_MAX_DIMS ||
        mode < EC_INDEX_GET || mode > EC_INDEX_MIN)
        return ec_fail(EC_ERR_INVALID, "index: bad arguments (%d dims, %d indices)", ndim, nidx);
    if (mode != EC_INDEX_GET && mode != EC_INDEX_PUT) EC_REQUIRE_BASE_DTYPE("index reduction", dtype);
    const int64_t* strides[IX_MAX_OPS];
    for (int k = 0; k < 2 + nidx; k++) strides[k] = layout + ndim * (1 + k);
    ixspace s;
    if (ix_setup(&s, 2 + nidx, ndim, layout, strides) == 0) return EC_OK;
    ixctx c;
    memset(&c, 0, sizeof c);
    c.mode = mode;
    c.dtype = dtype;
    c.isz = ec_itemsize[dtype];
    c.nidx = nidx;
    c.v = (char*)values;
    c.x = (char*)x;
    c.alpha = alpha;
    c.ialpha = (int64_t)alpha;
    for (int k = 0; k < nidx; k++) {
        c.idx[k] = (const int64_t*)idx[k];
        c.size[k] = sizes[k];
        c.xst[k] = xstrides[k];
    }
    int nt = ec_threads_for(s.total, EC_GRAIN / 4);
    if (mode == EC_INDEX_GET) {
        if (nt <= 1) {
            ix_range(&s, &c, run_get, 0, s.total);
        } else {
#pragma omp parallel num_threads(nt)
            {
                int t = omp_get_thread_num(), m = omp_get_num_threads();
                ix_range(&s, &c, run_get, s.total * t / m, s.total * (t + 1) / m);
            }
        }
    } else {
        /* validate every index before the first write: a failed put changes nothing */
        ix_range(&s, &c, run_check, 0, s.total);
        if (!c.err) {
            /* Note [Deterministic writes]: whole rows of a direct outer dim per thread */
            int outer_direct = s.nd > 0 && s.st[1][0] != 0 && s.shape[0] >= nt;
            if (nt <= 1 || !outer_direct) {
                ix_range(&s, &c, run_put, 0, s.total);
            } else {
                int64_t rows = s.shape[0], row = s.total / rows;
#pragma omp parallel num_threads(nt)
                {
                    int t = omp_get_thread_num(), m = omp_get_num_threads();
                    ix_range(&s, &c, run_put, rows * t / m * row, rows * (t + 1) / m * row);
                }
            }
        }
    }
    if (c.err)
        return ec_fail(EC_ERR_INDEX, "index %lld is out of bounds for dimension %lld with size %lld",
                       (long long)c.err_value, (long long)dims[c.err_k], (long long)c.size[c.err_k]);
    return EC_OK;
}

/* ------------------------------------------------------------- masks */

/* Operands: 0 x (or self), 1 mask. */
typedef struct maskctx {
    int isz;
    char* x;
    const uint8_t* mask;
    char* buf;      /* masked_select: output; masked_scatter: source */
    int64_t pos;    /* elements taken so far */
    int64_t limit;  /* masked_scatter: source elements */
    int overflow;
} maskctx;

static void run_select(void* ctx, int64_t n, const int64_t* off, const int64_t* st) {
    maskctx* c = ctx;
    int isz = c->isz;
    const uint8_t* m = c->mask + off[1];
    for (int64_t i = 0; i < n; i++)
        if (m[i * st[1]]) {
            memcpy(c->buf + c->pos * isz, c->x + (off[0] + i * st[0]) * isz, (size_t)isz);
            c->pos++;
        }
}

static void run_scatter(void* ctx, int64_t n, const int64_t* off, const int64_t* st) {
    maskctx* c = ctx;
    int isz = c->isz;
    const uint8_t* m = c->mask + off[1];
    for (int64_t i = 0; i < n; i++)
        if (m[i * st[1]]) {
            if (c->pos >= c->limit) {
                c->overflow = 1;
                return;
            }
            memcpy(c->x + (off[0] + i * st[0]) * isz, c->buf + c->pos * isz, (size_t)isz);
            c->pos++;
        }
}

static int mask_space(ixspace* s, int ndim, const int64_t* layout) {
    const int64_t* strides[2] = {layout + ndim, layout + 2 * ndim};
    return ix_setup(s, 2, ndim, layout, strides) != 0;
}

int ec_masked_select(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                     ec_ptr mask) {
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "masked_select: bad arguments");
    ixspace s;
    if (!mask_space(&s, ndim, layout)) return EC_OK;
    maskctx c = {ec_itemsize[dtype], (char*)x, (const uint8_t*)mask, (char*)out, 0, 0, 0};
    ix_range(&s, &c, run_select, 0, s.total);
    return EC_OK;
}

int ec_masked_scatter(int dtype, int ndim, const int64_t* layout, ec_ptr self, ec_ptr mask,
                      ec_ptr src, int64_t src_numel) {
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "masked_scatter: bad arguments");
    ixspace s;
    if (!mask_space(&s, ndim, layout)) return EC_OK;
    maskctx c = {ec_itemsize[dtype], (char*)self, (const uint8_t*)mask, (char*)src, 0, src_numel, 0};
    ix_range(&s, &c, run_scatter, 0, s.total);
    if (c.overflow)
        return ec_fail(EC_ERR_VALUE, "Number of elements of source < number of ones in mask");
    return EC_OK;
}

/* nonzero: coordinates of the non-zero elements, in row-major order. */
static inline int nonzero_at(int dtype, const char* p) {
    switch (dtype) {
        case EC_BOOL:
        case EC_UINT8:
        case EC_INT8: return *(const uint8_t*)p != 0;
        case EC_INT16: return *(const int16_t*)p != 0;
        case EC_INT32: return *(const int32_t*)p != 0;
        case EC_INT64: return *(const int64_t*)p != 0;
        case EC_FLOAT16: return (float)*(const ec_f16*)p != 0.0f;
        case EC_BFLOAT16: return ec_bf16_to_f32(*(const ec_bf16*)p) != 0.0f;
        case EC_FLOAT32: return *(const float*)p != 0.0f;
        case EC_UINT16: return *(const uint16_t*)p != 0;
        case EC_UINT32: return *(const uint32_t*)p != 0;
        case EC_UINT64: return *(const uint64_t*)p != 0;
        case EC_COMPLEX64: return *(const ec_c64*)p != 0;
        case EC_COMPLEX128: return *(const ec_c128*)p != 0;
        default: return *(const double*)p != 0.0;
    }
}

int ec_nonzero(int dtype, int ndim, const int64_t* layout, ec_ptr out, int64_t st_n, int64_t st_d,
               ec_ptr x, int64_t n) {
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "nonzero: bad arguments");
    const int64_t* shape = layout;
    const int64_t* st = layout + ndim;
    int64_t total = 1;
    for (int d = 0; d < ndim; d++) total *= shape[d];
    if (total == 0 || n == 0) return EC_OK;
    int isz = ec_itemsize[dtype];
    const char* base = (const char*)x;
    int64_t* o = (int64_t*)out;
    int64_t coord[EC_MAX_DIMS] = {0};
    int64_t off = 0, pos = 0;
    int64_t inner = ndim ? shape[ndim - 1] : 1, ist = ndim ? st[ndim - 1] : 0;
    for (int64_t start = 0; start < total; start += inner) {
        for (int64_t j = 0; j < inner; j++) {
            if (nonzero_at(dtype, base + (off + j * ist) * isz)) {
                if (pos >= n) return ec_fail(EC_ERR_VALUE, "nonzero: the tensor changed while counting");
                for (int d = 0; d < ndim - 1; d++) o[pos * st_n + d * st_d] = coord[d];
                if (ndim) o[pos * st_n + (ndim - 1) * st_d] = j;
                pos++;
            }
        }
        /* next row: carry through the outer coordinates */
        for (int d = ndim - 2; d >= 0; d--) {
            coord[d]++;
            off += st[d];
            if (coord[d] < shape[d]) break;
            off -= coord[d] * st[d];
            coord[d] = 0;
        }
    }
    return EC_OK;
}
