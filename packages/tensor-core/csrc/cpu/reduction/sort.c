/* Sorting and selection along one dim (sort, topk, kthvalue/median, mode),
 * binary search (searchsorted) and counting (bincount, histc).
 *
 * Note [Sort keys]
 * Every element becomes an unsigned integer key whose order is the element's
 * order: integers with the sign bit flipped; floats by their bits (negatives
 * inverted), -0.0 as +0.0 and every NaN as the largest key, so NaN sorts last
 * ascending and first descending, as in PyTorch.  Descending order inverts the
 * key.  Keys of dtypes up to 4 bytes are packed with the element's index into
 * one uint64 (key high, index low); wider keys travel with their index as a
 * pair.  Either way elements compare by (key, index), a strict total order, so
 * every sort here is stable and selections break ties by position.
 *
 * Sorting is an LSD radix sort by 11-bit digits (passes whose digit is the same
 * for every key are skipped), insertion sort for short lines.  One long line is split
 * between threads and the sorted runs merged (merge path: each thread writes
 * its own share of the output).  Lines are spread across threads otherwise.
 */
#include <pthread.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core.h"

#ifndef _OPENMP
#define omp_get_thread_num() 0
#define omp_get_num_threads() 1
#endif

/* ------------------------------------------------------------- scratch */

/* Each thread keeps its last scratch buffer (up to SCRATCH_KEEP bytes) for its
 * next call, so that repeated sorts of large lines do not fault in fresh pages
 * every time; a thread's buffer is freed when the thread exits. */
#define SCRATCH_KEEP ((size_t)32 << 20)

typedef struct scratch {
    void* ptr;
    size_t size;
} scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void* p) {
    scratch* s = p;
    free(s->ptr);
    free(s);
}

static void scratch_init(void) { pthread_key_create(&scratch_key, scratch_free); }

/* A buffer of at least n bytes, owned by the calling thread until scratch_done. */
static void* scratch_get(size_t n) {
    pthread_once(&scratch_once, scratch_init);
    scratch* s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(scratch_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (n > s->size) {
        free(s->ptr);
        s->ptr = malloc(n);
        s->size = s->ptr ? n : 0;
    }
    return s->ptr;
}

/* Done with this thread's scratch: keep it unless it is large. */
static void scratch_done(void) {
    scratch* s = pthread_getspecific(scratch_key);
    if (s && s->size > SCRATCH_KEEP) {
        free(s->ptr);
        s->ptr = NULL;
        s->size = 0;
    }
}

/* A single line is split between threads from this length on: below it the
 * serial sort is fast already, and the forks, barriers and merge of the split
 * cost more than they save (much more on a machine busy with other work). */
#define PARALLEL_LINE ((int64_t)1 << 21)

/* ---------------------------------------------------------------- keys */

static inline uint32_t key32_float(float f) {
    if (f != f) return UINT32_MAX;
    if (f == 0.0f) f = 0.0f; /* -0.0 sorts with +0.0 */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline uint64_t key64_double(double f) {
    if (f != f) return UINT64_MAX;
    if (f == 0.0) f = 0.0;
    uint64_t u;
    memcpy(&u, &f, sizeof u);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

static inline int wide_key(int dtype) { return dtype == EC_INT64 || dtype == EC_FLOAT64; }

/* The key of the element at p (Note [Sort keys]); 32-bit dtypes use the low half. */
static inline uint64_t key_of(int dtype, const char* p) {
    switch (dtype) {
        case EC_BOOL: return *(const uint8_t*)p != 0;
        case EC_UINT8: return *(const uint8_t*)p;
        case EC_INT8: return (uint32_t)(int32_t)*(const int8_t*)p ^ 0x80000000u;
        case EC_INT16: return (uint32_t)(int32_t)*(const int16_t*)p ^ 0x80000000u;
        case EC_INT32: return (uint32_t)*(const int32_t*)p ^ 0x80000000u;
        case EC_INT64: return (uint64_t)*(const int64_t*)p ^ 0x8000000000000000ull;
        case EC_FLOAT16: return key32_float((float)*(const ec_f16*)p);
        case EC_BFLOAT16: return key32_float(ec_bf16_to_f32(*(const ec_bf16*)p));
        case EC_FLOAT32: return key32_float(*(const float*)p);
        default: return key64_double(*(const double*)p);
    }
}

static inline int is_nan_at(int dtype, const char* p) {
    switch (dtype) {
        case EC_FLOAT16: { float f = (float)*(const ec_f16*)p; return f != f; }
        case EC_BFLOAT16: { float f = ec_bf16_to_f32(*(const ec_bf16*)p); return f != f; }
        case EC_FLOAT32: { float f = *(const float*)p; return f != f; }
        case EC_FLOAT64: { double f = *(const double*)p; return f != f; }
        default: return 0;
    }
}

/* A (key, index) pair for wide keys. */
typedef struct kv {
    uint64_t key;
    int64_t idx;
} kv;

/* ----------------------------------------------------- sorting primitives */

#define P_KEY(e) ((e) >> 32)
#define P_IDX(e) ((int64_t)((e) & 0xffffffffu))
#define P_LESS(a, b) ((a) < (b))
#define W_LESS(a, b) ((a).key < (b).key || ((a).key == (b).key && (a).idx < (b).idx))

/* Generates: insertion sort, radix sort (returns the buffer holding the result),
 * merge of two sorted runs, and select (k smallest first). */
#define SORT_FUNCS(SFX, T, LESS, KEY64, FIRST_BIT, NDIG)                                     \
    static void isort_##SFX(T* a, int64_t n) {                                              \
        for (int64_t i = 1; i < n; i++) {                                                   \
            T v = a[i];                                                                     \
            int64_t j = i - 1;                                                              \
            while (j >= 0 && LESS(v, a[j])) {                                               \
                a[j + 1] = a[j];                                                            \
                j--;                                                                        \
            }                                                                               \
            a[j + 1] = v;                                                                   \
        }                                                                                   \
    }                                                                                       \
    static T* rsort_##SFX(T* a, T* tmp, int64_t n) {                                        \
        if (n <= 48) {                                                                      \
            isort_##SFX(a, n);                                                              \
            return a;                                                                       \
        }                                                                                   \
        int64_t hist[NDIG][RADIX_SIZE];                                                     \
        memset(hist, 0, sizeof hist);                                                       \
        for (int64_t i = 0; i < n; i++)                                                     \
            for (int d = 0; d < NDIG; d++) hist[d][DIGIT(KEY64(a[i]), FIRST_BIT, d)]++;     \
        T* src = a;                                                                         \
        T* dst = tmp;                                                                       \
        for (int d = 0; d < NDIG; d++) {                                                    \
            int64_t* h = hist[d];                                                           \
            if (h[DIGIT(KEY64(src[0]), FIRST_BIT, d)] == n) continue; /* one digit value */ \
            int64_t pos = 0;                                                                \
            for (int v = 0; v < RADIX_SIZE; v++) {                                          \
                int64_t c = h[v];                                                           \
                h[v] = pos;                                                                 \
                pos += c;                                                                   \
            }                                                                               \
            for (int64_t i = 0; i < n; i++) dst[h[DIGIT(KEY64(src[i]), FIRST_BIT, d)]++] = src[i]; \
            T* t = src;                                                                     \
            src = dst;                                                                      \
            dst = t;                                                                        \
        }                                                                                   \
        return src;                                                                         \
    }                                                                                       \
    /* out[lo, hi) of the merge of sorted a[0, na) and b[0, nb) (merge path). */            \
    static void merge_part_##SFX(const T* a, int64_t na, const T* b, int64_t nb, T* out,    \
                                 int64_t lo, int64_t hi) {                                  \
        /* find i + j = lo with a[i-1] < b[j] and b[j-1] < a[i] */                          \
        int64_t l = lo > nb ? lo - nb : 0, r = lo < na ? lo : na;                           \
        while (l < r) {                                                                     \
            int64_t i = (l + r) / 2, j = lo - i;                                            \
            if (LESS(a[i], b[j - 1])) l = i + 1;                                            \
            else r = i;                                                                     \
        }                                                                                   \
        int64_t i = l, j = lo - l;                                                          \
        for (int64_t o = lo; o < hi; o++) {                                                 \
            if (j >= nb || (i < na && LESS(a[i], b[j]))) out[o] = a[i++];                   \
            else out[o] = b[j++];                                                           \
        }                                                                                   \
    }                                                                                       \
    /* Rearrange a[0, n) so that a[0, k) holds the k smallest (k >= 1). */                  \
    static void select_##SFX(T* a, T* tmp, int64_t n, int64_t k) {                          \
        int64_t lo = 0, hi = n, budget = 64;                                                \
        while (hi - lo > 32) {                                                              \
            if (budget-- == 0) { /* bad pivots: sort what is left */                        \
                T* r = rsort_##SFX(a + lo, tmp, hi - lo);                                   \
                if (r != a + lo) memcpy(a + lo, r, (size_t)(hi - lo) * sizeof(T));          \
                return;                                                                     \
            }                                                                               \
            int64_t mid = lo + (hi - lo) / 2;                                               \
            T x = a[lo], y = a[mid], z = a[hi - 1], p;                                      \
            if (LESS(x, y)) p = LESS(y, z) ? y : (LESS(x, z) ? z : x);                      \
            else p = LESS(x, z) ? x : (LESS(y, z) ? z : y);                                 \
            /* three-way split: < p, == p (one element: the order is strict), > p */        \
            int64_t i = lo, j = hi - 1;                                                     \
            while (i <= j) {                                                                \
                while (LESS(a[i], p)) i++;                                                  \
                while (LESS(p, a[j])) j--;                                                  \
                if (i <= j) {                                                               \
                    T t = a[i];                                                             \
                    a[i] = a[j];                                                            \
                    a[j] = t;                                                               \
                    i++;                                                                    \
                    j--;                                                                    \
                }                                                                           \
            }                                                                               \
            if (k <= j + 1) hi = j + 1;                                                     \
            else if (k >= i) lo = i;                                                        \
            else return;                                                                    \
        }                                                                                   \
        isort_##SFX(a + lo, hi - lo);                                                       \
    }

/* LSD radix digits of 11 bits: 3 passes for packed 32-bit keys, 6 for wide ones
 * (fewer when a digit is the same for every key). */
#define RADIX_BITS 11
#define RADIX_SIZE (1 << RADIX_BITS)
#define DIGIT(k, first, d) (((k) >> ((first) + RADIX_BITS * (d))) & (RADIX_SIZE - 1))
#define P_KEY64(e) (e)
#define W_KEY64(e) ((e).key)
SORT_FUNCS(p, uint64_t, P_LESS, P_KEY64, 32, 3)
SORT_FUNCS(w, kv, W_LESS, W_KEY64, 0, 6)

/* ------------------------------------------------------------ lines */

/* Lines along the sorted dim: layout = [shape (ndim batch dims), then strides of
 * x, values, indices over those dims]. */
typedef struct lines {
    int ndim;
    int64_t count;
    const int64_t* shape;
    const int64_t* st[3];
} lines;

static void lines_init(lines* L, int ndim, const int64_t* layout) {
    L->ndim = ndim;
    L->shape = layout;
    L->count = 1;
    for (int d = 0; d < ndim; d++) L->count *= layout[d];
    for (int k = 0; k < 3; k++) L->st[k] = layout + ndim * (1 + k);
}

/* Element offsets of line r in x, values, indices. */
static void line_offsets(const lines* L, int64_t r, int64_t* off) {
    off[0] = off[1] = off[2] = 0;
    for (int d = L->ndim - 1; d >= 0; d--) {
        int64_t c = r % L->shape[d];
        r /= L->shape[d];
        for (int k = 0; k < 3; k++) off[k] += c * L->st[k][d];
    }
}

typedef struct linectx {
    int dtype, isz, desc, wide;
    const char* x;
    char* v;
    int64_t* ix;
    int64_t n, xs, vs, is;
} linectx;

/* Fill a line's keys (packed or wide) from x. */
static void load_keys(const linectx* c, const char* x, int64_t lo, int64_t hi, void* buf) {
    uint64_t flip = c->desc ? (c->wide ? UINT64_MAX : 0xffffffffull) : 0;
    if (c->wide) {
        kv* w = buf;
        for (int64_t i = lo; i < hi; i++) {
            w[i - lo].key = key_of(c->dtype, x + i * c->xs * c->isz) ^ flip;
            w[i - lo].idx = i;
        }
    } else {
        uint64_t* p = buf;
        if (c->dtype == EC_FLOAT32 && c->xs == 1) {
            const float* f = (const float*)x;
            for (int64_t i = lo; i < hi; i++) p[i - lo] = ((uint64_t)(key32_float(f[i]) ^ flip) << 32) | (uint64_t)i;
        } else {
            for (int64_t i = lo; i < hi; i++)
                p[i - lo] = ((key_of(c->dtype, x + i * c->xs * c->isz) ^ flip) << 32) | (uint64_t)i;
        }
    }
}

#define STORE_LINE(T)                                                                  \
    do {                                                                               \
        T* vt = (T*)v;                                                                 \
        const T* xt = (const T*)x;                                                     \
        int64_t vs = c->vs, xs = c->xs, is = c->is;                                    \
        if (c->wide) {                                                                 \
            const kv* w = buf;                                                         \
            for (int64_t i = lo; i < hi; i++) {                                        \
                int64_t j = w[i].idx;                                                  \
                if (vt) vt[i * vs] = xt[j * xs];                                       \
                if (ix) ix[i * is] = j;                                                \
            }                                                                          \
        } else {                                                                       \
            const uint64_t* p = buf;                                                   \
            for (int64_t i = lo; i < hi; i++) {                                        \
                int64_t j = P_IDX(p[i]);                                               \
                if (vt) vt[i * vs] = xt[j * xs];                                       \
                if (ix) ix[i * is] = j;                                                \
            }                                                                          \
        }                                                                              \
    } while (0)

/* Packed keys of float32 and the narrow integers decode back to their values,
 * which saves reading x at random; zeros and NaNs (whose keys forget the sign or
 * payload) are read from x.  flip: the key inversion of descending order. */
static void store_packed_decoded(const linectx* c, const char* x, char* v, int64_t* ix,
                                 const uint64_t* p, int64_t lo, int64_t hi) {
    uint32_t flip = c->desc ? 0xffffffffu : 0;
    int64_t vs = c->vs, xs = c->xs, is = c->is;
    for (int64_t i = lo; i < hi; i++) {
        uint32_t key = (uint32_t)(p[i] >> 32) ^ flip;
        int64_t j = P_IDX(p[i]);
        if (ix) ix[i * is] = j;
        if (!v) continue;
        switch (c->dtype) {
            case EC_FLOAT32:
                if (key == 0x80000000u || key == 0xffffffffu) {
                    ((float*)v)[i * vs] = ((const float*)x)[j * xs];
                } else {
                    uint32_t u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
                    memcpy((float*)v + i * vs, &u, sizeof u);
                }
                break;
            case EC_INT32: ((int32_t*)v)[i * vs] = (int32_t)(key ^ 0x80000000u); break;
            case EC_INT16: ((int16_t*)v)[i * vs] = (int16_t)(int32_t)(key ^ 0x80000000u); break;
            case EC_INT8: ((int8_t*)v)[i * vs] = (int8_t)(int32_t)(key ^ 0x80000000u); break;
            default: ((uint8_t*)v)[i * vs] = (uint8_t)key; break; /* uint8, bool */
        }
    }
}

/* Write sorted elements [lo, hi) of buf to a line's values/indices (either may be
 * NULL); values are exact (NaN payloads and -0.0 survive). */
static void store_line(const linectx* c, const char* x, char* v, int64_t* ix, const void* buf,
                       int64_t lo, int64_t hi) {
    if (!c->wide && c->dtype != EC_FLOAT16 && c->dtype != EC_BFLOAT16) {
        store_packed_decoded(c, x, v, ix, buf, lo, hi);
        return;
    }
    switch (c->isz) {
        case 1: STORE_LINE(uint8_t); break;
        case 2: STORE_LINE(uint16_t); break;
        case 4: STORE_LINE(uint32_t); break;
        default: STORE_LINE(uint64_t); break;
    }
}

static void* sort_buf(const linectx* c, void* a, void* tmp, int64_t n) {
    return c->wide ? (void*)rsort_w(a, tmp, n) : (void*)rsort_p(a, tmp, n);
}

int ec_sort(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
            int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int descending) {
    EC_REQUIRE_BASE_DTYPE("sort", dtype);
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS || n < 0)
        return ec_fail(EC_ERR_INVALID, "sort: bad arguments");
    if (n > 0xffffffffll && !wide_key(dtype))
        return ec_fail(EC_ERR_INVALID, "sort: lines longer than 2**32 elements are not supported");
    lines L;
    lines_init(&L, ndim, layout);
    if (L.count == 0 || n == 0) return EC_OK;
    linectx c = {dtype, ec_itemsize[dtype], descending, wide_key(dtype), (const char*)x,
                 (char*)values, (int64_t*)indices, n, x_st, v_st, i_st};
    size_t esz = c.wide ? sizeof(kv) : sizeof(uint64_t);
    int nt = ec_threads_for(L.count * n, EC_GRAIN / 8);
    int failed = 0;
    if (L.count == 1 && nt > 1 && n >= PARALLEL_LINE) {
        /* one long line: sort a run per thread, then merge the runs pairwise */
        char* a = scratch_get((size_t)n * esz * 2);
        if (!a) return ec_fail(EC_ERR_NOMEM, "sort: no memory for %lld elements", (long long)n);
        char* b = a + (size_t)n * esz;
        int64_t bounds[65];
        int runs = nt > 64 ? 64 : nt;
        for (int t = 0; t <= runs; t++) bounds[t] = n * t / runs;
        const char* xl = c.x;
#pragma omp parallel for num_threads(runs) schedule(static, 1)
        for (int t = 0; t < runs; t++) {
            int64_t lo = bounds[t], hi = bounds[t + 1];
            char* ap = (char*)a + lo * esz;
            char* bp = (char*)b + lo * esz;
            load_keys(&c, xl, lo, hi, ap);
            void* r = sort_buf(&c, ap, bp, hi - lo);
            if (r != ap) memcpy(ap, r, (size_t)(hi - lo) * esz);
        }
        /* merge rounds: runs of width w -> 2w, each round writing all of n */
        void* src = a;
        void* dst = b;
        for (int w = 1; w < runs; w *= 2) {
#pragma omp parallel num_threads(nt)
            {
                int t = omp_get_thread_num(), m = omp_get_num_threads();
                for (int r0 = 0; r0 < runs; r0 += 2 * w) {
                    int64_t lo = bounds[r0];
                    int64_t mid = bounds[r0 + w < runs ? r0 + w : runs];
                    int64_t hi = bounds[r0 + 2 * w < runs ? r0 + 2 * w : runs];
                    int64_t len = hi - lo;
                    int64_t plo = len * t / m, phi = len * (t + 1) / m;
                    if (c.wide)
                        merge_part_w((const kv*)src + lo, mid - lo, (const kv*)src + mid, hi - mid,
                                     (kv*)dst + lo, plo, phi);
                    else
                        merge_part_p((const uint64_t*)src + lo, mid - lo, (const uint64_t*)src + mid,
                                     hi - mid, (uint64_t*)dst + lo, plo, phi);
                }
            }
            void* t = src;
            src = dst;
            dst = t;
        }
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), m = omp_get_num_threads();
            store_line(&c, c.x, c.v, c.ix, src, n * t / m, n * (t + 1) / m);
        }
        scratch_done();
        return EC_OK;
    }
    if (nt > L.count) nt = (int)L.count; /* threads beyond the lines would only idle */
#pragma omp parallel num_threads(nt)
    {
        char* a = scratch_get((size_t)n * esz * 2);
        char* b = a ? a + (size_t)n * esz : NULL;
        if (!a) {
#pragma omp atomic write
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 16)
            for (int64_t r = 0; r < L.count; r++) {
                int64_t off[3];
                line_offsets(&L, r, off);
                const char* xl = c.x + off[0] * c.isz;
                load_keys(&c, xl, 0, n, a);
                void* s = sort_buf(&c, a, b, n);
                store_line(&c, xl, c.v ? c.v + off[1] * c.isz : NULL, c.ix ? c.ix + off[2] : NULL, s, 0, n);
            }
        }
        scratch_done();
    }
    if (failed) return ec_fail(EC_ERR_NOMEM, "sort: no memory for %lld elements", (long long)n);
    return EC_OK;
}

/* --------------------------------------------------------------- topk */

/* Streaming selection for small k: keys are made a chunk at a time and only
 * those below the k-th best kept so far enter a buffer, which is cut back to its
 * k best whenever it fills.  For most inputs nearly every element is rejected by
 * one comparison, so the line is read once and little is written. */
#define STREAM_CHUNK 2048
#define STREAM_FUNCS(SFX, T, LESS)                                                         \
    static void stream_select_##SFX(const linectx* c, const char* x, int64_t lo, int64_t hi, \
                                    int64_t k, T* buf, T* tmp, int64_t cap, T* chunk) {      \
        int64_t count = 0;                                                                 \
        int have = 0;                                                                      \
        T thr;                                                                             \
        memset(&thr, 0, sizeof thr);                                                       \
        for (int64_t s = lo; s < hi; s += STREAM_CHUNK) {                                  \
            int64_t e = hi - s < STREAM_CHUNK ? hi : s + STREAM_CHUNK;                     \
            load_keys(c, x, s, e, chunk);                                                  \
            for (int64_t i = 0; i < e - s; i++) {                                          \
                if (have && !LESS(chunk[i], thr)) continue;                                \
                buf[count++] = chunk[i];                                                   \
                if (count == cap) {                                                        \
                    select_##SFX(buf, tmp, count, k);                                      \
                    thr = buf[0];                                                          \
                    for (int64_t j = 1; j < k; j++)                                        \
                        if (LESS(thr, buf[j])) thr = buf[j];                               \
                    have = 1;                                                              \
                    count = k;                                                             \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        if (count > k) select_##SFX(buf, tmp, count, k);                                   \
    }
STREAM_FUNCS(p, uint64_t, P_LESS)
STREAM_FUNCS(w, kv, W_LESS)

static int64_t stream_cap(int64_t k) { return 2 * k > 1024 ? 2 * k : 1024; }

/* The k best of x[lo, hi) into buf[0, k): streaming for small k, else a full select. */
static void select_range(const linectx* c, const char* x, int64_t lo, int64_t hi, int64_t k,
                         char* buf, char* tmp, char* chunk) {
    int64_t n = hi - lo;
    if (k * 16 <= n) {
        if (c->wide)
            stream_select_w(c, x, lo, hi, k, (kv*)buf, (kv*)tmp, stream_cap(k), (kv*)chunk);
        else
            stream_select_p(c, x, lo, hi, k, (uint64_t*)buf, (uint64_t*)tmp, stream_cap(k), (uint64_t*)chunk);
        return;
    }
    load_keys(c, x, lo, hi, buf);
    if (k < n) {
        if (c->wide) select_w((kv*)buf, (kv*)tmp, n, k);
        else select_p((uint64_t*)buf, (uint64_t*)tmp, n, k);
    }
}

static void select_buf(const linectx* c, void* a, void* tmp, int64_t n, int64_t k) {
    if (c->wide) select_w(a, tmp, n, k);
    else select_p(a, tmp, n, k);
}

int ec_topk(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
            int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int largest,
            int sorted) {
    EC_REQUIRE_BASE_DTYPE("topk", dtype);
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS || k < 0 || k > n)
        return ec_fail(EC_ERR_INVALID, "topk: bad arguments");
    if (n > 0xffffffffll && !wide_key(dtype))
        return ec_fail(EC_ERR_INVALID, "topk: lines longer than 2**32 elements are not supported");
    lines L;
    lines_init(&L, ndim, layout);
    if (L.count == 0 || k == 0) return EC_OK;
    /* keys are inverted for the largest, so that selection always takes the smallest */
    linectx c = {dtype, ec_itemsize[dtype], largest, wide_key(dtype), (const char*)x,
                 (char*)values, (int64_t*)indices, n, x_st, v_st, i_st};
    size_t esz = c.wide ? sizeof(kv) : sizeof(uint64_t);
    int nt = ec_threads_for(L.count * n, EC_GRAIN / 4);
    /* scratch per selection: n keys (or the streaming buffer) twice, and a chunk */
    int64_t cap = k * 16 <= n ? stream_cap(k) : n;
    size_t need = (size_t)(2 * cap + STREAM_CHUNK) * esz;
    int failed = 0;
    if (L.count == 1 && nt > 1 && n >= PARALLEL_LINE && k * 16 > n / nt && k * 4 <= n / nt) {
        /* one long line, k too large to stream (which reads the line once, at memory
         * speed): each thread selects its part's k best, then the best of those */
        char* cand = malloc((size_t)k * nt * esz);
        char* tmp = malloc((size_t)k * nt * esz);
        if (!cand || !tmp) {
            free(cand);
            free(tmp);
            return ec_fail(EC_ERR_NOMEM, "topk: no memory for %lld candidates", (long long)(k * nt));
        }
#pragma omp parallel for num_threads(nt) schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
            int64_t pcap = k * 16 <= hi - lo ? stream_cap(k) : hi - lo;
            char* a = scratch_get((size_t)(2 * pcap + STREAM_CHUNK) * esz);
            if (!a) {
#pragma omp atomic write
                failed = 1;
            } else {
                select_range(&c, c.x, lo, hi, k, a, a + pcap * esz, a + 2 * pcap * esz);
                memcpy(cand + (size_t)t * k * esz, a, (size_t)k * esz);
                scratch_done();
            }
        }
        if (!failed) {
            select_buf(&c, cand, tmp, k * nt, k);
            void* s = sorted ? sort_buf(&c, cand, tmp, k) : cand;
            store_line(&c, c.x, c.v, c.ix, s, 0, k);
        }
        free(cand);
        free(tmp);
        if (failed) return ec_fail(EC_ERR_NOMEM, "topk: no scratch memory");
        return EC_OK;
    }
    if (nt > L.count) nt = (int)L.count; /* threads beyond the lines would only idle */
#pragma omp parallel num_threads(nt)
    {
        char* a = scratch_get(need);
        if (!a) {
#pragma omp atomic write
            failed = 1;
        } else {
            char* b = a + cap * esz;
            char* chunk = a + 2 * cap * esz;
#pragma omp for schedule(dynamic, 16)
            for (int64_t r = 0; r < L.count; r++) {
                int64_t off[3];
                line_offsets(&L, r, off);
                const char* xl = c.x + off[0] * c.isz;
                select_range(&c, xl, 0, n, k, a, b, chunk);
                void* s = sorted ? sort_buf(&c, a, b, k) : a;
                store_line(&c, xl, c.v + off[1] * c.isz, c.ix + off[2], s, 0, k);
            }
        }
        scratch_done();
    }
    if (failed) return ec_fail(EC_ERR_NOMEM, "topk: no scratch memory for lines of %lld", (long long)n);
    return EC_OK;
}

/* --------------------------------------------------- kthvalue, median, mode */

/* One element per line: the k-th smallest (0-based); EC_KTH_MEDIAN: the lower
 * median, or the first NaN if there is one; EC_KTH_NANMEDIAN: the lower median
 * of the non-NaN elements (NaN, at index 0, when all are NaN). */
int ec_kthvalue(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
                int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int mode) {
    EC_REQUIRE_BASE_DTYPE("kthvalue", dtype);
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS || n < 1 || k < 0 || k >= n)
        return ec_fail(EC_ERR_INVALID, "kthvalue: bad arguments");
    if (n > 0xffffffffll && !wide_key(dtype))
        return ec_fail(EC_ERR_INVALID, "kthvalue: lines longer than 2**32 elements are not supported");
    lines L;
    lines_init(&L, ndim, layout);
    if (L.count == 0) return EC_OK;
    linectx c = {dtype, ec_itemsize[dtype], 0, wide_key(dtype), (const char*)x,
                 (char*)values, (int64_t*)indices, n, x_st, v_st, i_st};
    size_t esz = c.wide ? sizeof(kv) : sizeof(uint64_t);
    int nt = ec_threads_for(L.count * n, EC_GRAIN / 4);
    int failed = 0;
    if (nt > L.count) nt = (int)L.count; /* threads beyond the lines would only idle */
#pragma omp parallel num_threads(nt)
    {
        char* a = scratch_get((size_t)n * esz * 2);
        char* b = a ? a + (size_t)n * esz : NULL;
        if (!a) {
#pragma omp atomic write
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 16)
            for (int64_t r = 0; r < L.count; r++) {
                int64_t off[3];
                line_offsets(&L, r, off);
                const char* xl = c.x + off[0] * c.isz;
                char* vl = c.v + off[1] * c.isz;
                int64_t* il = c.ix + off[2];
                int64_t kk = k, nans = 0, first_nan = -1;
                if (mode != EC_KTH_VALUE)
                    for (int64_t i = 0; i < n; i++)
                        if (is_nan_at(c.dtype, xl + i * c.xs * c.isz)) {
                            if (first_nan < 0) first_nan = i;
                            nans++;
                        }
                if (mode == EC_KTH_MEDIAN && nans) {
                    memcpy(vl, xl + first_nan * c.xs * c.isz, (size_t)c.isz);
                    *il = first_nan;
                    continue;
                }
                if (mode == EC_KTH_NANMEDIAN) {
                    if (nans == n) {
                        memcpy(vl, xl, (size_t)c.isz);
                        *il = 0;
                        continue;
                    }
                    kk = (n - nans - 1) / 2;
                }
                load_keys(&c, xl, 0, n, a);
                select_buf(&c, a, b, n, kk + 1);
                /* the (kk+1)-th smallest is the largest of the first kk+1 */
                int64_t best = 0;
                if (c.wide) {
                    kv* w = (kv*)a;
                    for (int64_t i = 1; i <= kk; i++)
                        if (W_LESS(w[best], w[i])) best = i;
                } else {
                    uint64_t* p = (uint64_t*)a;
                    for (int64_t i = 1; i <= kk; i++)
                        if (p[best] < p[i]) best = i;
                }
                store_line(&c, xl, vl, il, (char*)a + best * esz, 0, 1);
            }
        }
        scratch_done();
    }
    if (failed) return ec_fail(EC_ERR_NOMEM, "kthvalue: no memory for %lld elements", (long long)n);
    return EC_OK;
}

/* The most frequent value of each line (the smallest among equally frequent
 * ones) and the index of its last occurrence. */
int ec_mode(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
            int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x) {
    EC_REQUIRE_BASE_DTYPE("mode", dtype);
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS || n < 1)
        return ec_fail(EC_ERR_INVALID, "mode: bad arguments");
    if (n > 0xffffffffll && !wide_key(dtype))
        return ec_fail(EC_ERR_INVALID, "mode: lines longer than 2**32 elements are not supported");
    lines L;
    lines_init(&L, ndim, layout);
    if (L.count == 0) return EC_OK;
    linectx c = {dtype, ec_itemsize[dtype], 0, wide_key(dtype), (const char*)x,
                 (char*)values, (int64_t*)indices, n, x_st, v_st, i_st};
    size_t esz = c.wide ? sizeof(kv) : sizeof(uint64_t);
    int nt = ec_threads_for(L.count * n, EC_GRAIN / 8);
    int failed = 0;
    if (nt > L.count) nt = (int)L.count; /* threads beyond the lines would only idle */
#pragma omp parallel num_threads(nt)
    {
        char* a = scratch_get((size_t)n * esz * 2);
        char* b = a ? a + (size_t)n * esz : NULL;
        if (!a) {
#pragma omp atomic write
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 16)
            for (int64_t r = 0; r < L.count; r++) {
                int64_t off[3];
                line_offsets(&L, r, off);
                const char* xl = c.x + off[0] * c.isz;
                load_keys(&c, xl, 0, n, a);
                void* s = sort_buf(&c, a, b, n);
                int64_t best_end = 0, best_len = 0, run = 0;
                for (int64_t i = 0; i < n; i++) {
                    uint64_t ki = c.wide ? ((kv*)s)[i].key : P_KEY(((uint64_t*)s)[i]);
                    uint64_t kp = i == 0 ? 0 : (c.wide ? ((kv*)s)[i - 1].key : P_KEY(((uint64_t*)s)[i - 1]));
                    run = (i > 0 && ki == kp) ? run + 1 : 1;
                    if (run > best_len) {
                        best_len = run;
                        best_end = i;
                    }
                }
                /* extend to the end of the winning run: the last occurrence */
                int64_t e = best_end;
                while (e + 1 < n) {
                    uint64_t k1 = c.wide ? ((kv*)s)[e + 1].key : P_KEY(((uint64_t*)s)[e + 1]);
                    uint64_t k0 = c.wide ? ((kv*)s)[e].key : P_KEY(((uint64_t*)s)[e]);
                    if (k1 != k0) break;
                    e++;
                }
                store_line(&c, xl, c.v + off[1] * c.isz, c.ix + off[2], (char*)s + e * esz, 0, 1);
            }
        }
        scratch_done();
    }
    if (failed) return ec_fail(EC_ERR_NOMEM, "mode: no memory for %lld elements", (long long)n);
    return EC_OK;
}

/* --------------------------------------------------------- searchsorted */

static inline double load_d(int dtype, const char* p) {
    switch (dtype) {
        case EC_FLOAT16: return (double)*(const ec_f16*)p;
        case EC_BFLOAT16: return (double)ec_bf16_to_f32(*(const ec_bf16*)p);
        case EC_FLOAT32: return (double)*(const float*)p;
        default: return *(const double*)p;
    }
}

static inline int64_t load_int(int dtype, const char* p) {
    switch (dtype) {
        case EC_BOOL: return *(const uint8_t*)p != 0;
        case EC_UINT8: return *(const uint8_t*)p;
        case EC_INT8: return *(const int8_t*)p;
        case EC_INT16: return *(const int16_t*)p;
        case EC_INT32: return *(const int32_t*)p;
        default: return *(const int64_t*)p;
    }
}

/* PyTorch's predicates: lower bound moves right while !(val <= s), upper bound
 * while !(val < s); so a NaN value lands at the end. */
#define BSEARCH(LOAD, T)                                                                \
    do {                                                                                \
        T val = LOAD(dtype, vp + j * isz);                                              \
        int64_t lo = 0, hi = nseq;                                                      \
        while (lo < hi) {                                                               \
            int64_t mid = lo + ((hi - lo) >> 1);                                        \
            int64_t at = sp ? sp[mid] : mid;                                            \
            T s = LOAD(dtype, seq + at * isz);                                          \
            int go_right = right ? !(val < s) : !(val <= s);                            \
            if (go_right) lo = mid + 1;                                                 \
            else hi = mid;                                                              \
        }                                                                               \
        if (out_int32) ((int32_t*)out)[r * nval + j] = (int32_t)lo;                     \
        else ((int64_t*)out)[r * nval + j] = lo;                                        \
    } while (0)

int ec_searchsorted(int dtype, int64_t rows, int64_t nseq, ec_ptr seq_addr, int64_t seq_rs,
                    int64_t nval, ec_ptr vals, ec_ptr out, int out_int32, int right,
                    ec_ptr sorter, int64_t sorter_rs) {
    EC_REQUIRE_BASE_DTYPE("searchsorted", dtype);
    if (!ec_valid_dtype(dtype) || rows < 0 || nseq < 0 || nval < 0)
        return ec_fail(EC_ERR_INVALID, "searchsorted: bad arguments");
    int isz = ec_itemsize[dtype];
    int fl = ec_is_float(dtype);
    const int64_t* srt = (const int64_t*)sorter;
    if (srt) {
        for (int64_t r = 0; r < (seq_rs ? rows : 1); r++)
            for (int64_t i = 0; i < nseq; i++) {
                int64_t v = srt[r * sorter_rs + i];
                if (v < 0 || v >= nseq)
                    return ec_fail(EC_ERR_VALUE, "sorter index out of range: %lld not in [0, %lld)",
                                   (long long)v, (long long)nseq);
            }
    }
    int nt = ec_threads_for(rows * nval, EC_GRAIN / 8);
#pragma omp parallel for num_threads(nt) schedule(static) collapse(2)
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < nval; j++) {
            const char* seq = (const char*)seq_addr + r * seq_rs * isz;
            const char* vp = (const char*)vals + r * nval * isz;
            const int64_t* sp = srt ? srt + r * sorter_rs : NULL;
            if (fl) BSEARCH(load_d, double);
            else BSEARCH(load_int, int64_t);
        }
    }
    return EC_OK;
}

/* ---------------------------------------------------------- counting */

int ec_bincount(int64_t n, ec_ptr x, ec_ptr w, int w_dtype, ec_ptr out, int out_dtype,
                int64_t nbins) {
    if (w) EC_REQUIRE_BASE_DTYPE("bincount", w_dtype);
    EC_REQUIRE_BASE_DTYPE("bincount", out_dtype);
    const int64_t* xi = (const int64_t*)x;
    if (n < 0 || nbins < 0 || (w && !ec_valid_dtype(w_dtype)))
        return ec_fail(EC_ERR_INVALID, "bincount: bad arguments");
    for (int64_t i = 0; i < n; i++)
        if (xi[i] < 0 || xi[i] >= nbins)
            return ec_fail(EC_ERR_VALUE, "bincount only supports 1-d non-negative integral inputs.");
    if (!w) {
        int64_t* o = (int64_t*)out;
        for (int64_t i = 0; i < n; i++) o[xi[i]]++;
        return EC_OK;
    }
    int wsz = ec_itemsize[w_dtype];
    const char* wp = (const char*)w;
    if (out_dtype == EC_FLOAT32) {
        float* o = (float*)out;
        for (int64_t i = 0; i < n; i++) o[xi[i]] += (float)(ec_is_float(w_dtype) ? load_d(w_dtype, wp + i * wsz) : (double)load_int(w_dtype, wp + i * wsz));
    } else {
        double* o = (double*)out;
        for (int64_t i = 0; i < n; i++) o[xi[i]] += ec_is_float(w_dtype) ? load_d(w_dtype, wp + i * wsz) : (double)load_int(w_dtype, wp + i * wsz);
    }
    return EC_OK;
}

int ec_histc(int dtype, int64_t n, ec_ptr x, ec_ptr out, int64_t bins, double lo, double hi) {
    EC_REQUIRE_BASE_DTYPE("histc", dtype);
    if (!ec_is_float(dtype) || n < 0 || bins < 1)
        return ec_fail(EC_ERR_INVALID, "histc: bad arguments");
    int64_t* counts = calloc((size_t)bins, sizeof(int64_t));
    if (!counts) return ec_fail(EC_ERR_NOMEM, "histc: no memory for %lld bins", (long long)bins);
    int isz = ec_itemsize[dtype];
    const char* xp = (const char*)x;
    for (int64_t i = 0; i < n; i++) {
        double v = load_d(dtype, xp + i * isz);
        if (!(v >= lo && v <= hi)) continue; /* NaN too */
        int64_t b = (int64_t)((v - lo) * (double)bins / (hi - lo));
        if (b >= bins) b = bins - 1;
        counts[b]++;
    }
    for (int64_t b = 0; b < bins; b++) {
        double v = (double)counts[b];
        switch (dtype) {
            case EC_FLOAT16: ((ec_f16*)out)[b] = (ec_f16)v; break;
            case EC_BFLOAT16: ((ec_bf16*)out)[b] = ec_f32_to_bf16((float)v); break;
            case EC_FLOAT32: ((float*)out)[b] = (float)v; break;
            default: ((double*)out)[b] = v; break;
        }
    }
    free(counts);
    return EC_OK;
}
