/* Reductions over any set of dims, and scans along one dim.
 *
 * A reduction walks, for each output element, the flat index space of the
 * reduced dims in "lines" along the innermost reduced dim.  Each op keeps a
 * small state (rstate) that a line updates and that two partial results can
 * merge; this lets one output be split across threads (a full reduction) or
 * many outputs be spread across threads, with the same code.
 *
 * Float sums accumulate in blocks of float lanes (which the compiler
 * vectorises) whose totals are added in double: fast and accurate.  When the
 * output's innermost dim is contiguous in the input and the reduced dims are
 * not (column sums, bias gradients), SUM and MEAN take a "vertical" path that
 * adds whole rows into a buffer of accumulators instead.
 */
#include <float.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core.h"

typedef struct rstate {
    double f;      /* sum, product, running max/min, mean (var), max (logsumexp) */
    double g;      /* M2 (var), sum of exp (logsumexp) */
    int64_t i;     /* integer sum/product/max/min */
    int64_t idx;   /* arg index of max/min */
    int64_t n;     /* count (var, count_nonzero) */
    int nan;       /* a NaN was seen (max/min propagate it) */
} rstate;

typedef struct rdesc {
    int op, dtype, is_float, itemsize;
    double p0;
} rdesc;

static inline double load_f(int dtype, const char* p) {
    switch (dtype) {
        case EC_FLOAT16: return (double)*(const ec_f16*)p;
        case EC_BFLOAT16: return (double)ec_bf16_to_f32(*(const ec_bf16*)p);
        case EC_FLOAT32: return (double)*(const float*)p;
        case EC_FLOAT64: return *(const double*)p;
        case EC_BOOL: return (double)(*(const uint8_t*)p != 0);
        case EC_UINT8: return (double)*(const uint8_t*)p;
        case EC_INT8: return (double)*(const int8_t*)p;
        case EC_INT16: return (double)*(const int16_t*)p;
        case EC_INT32: return (double)*(const int32_t*)p;
        default: return (double)*(const int64_t*)p;
    }
}

static inline int64_t load_i(int dtype, const char* p) {
    switch (dtype) {
        case EC_BOOL: return *(const uint8_t*)p != 0;
        case EC_UINT8: return *(const uint8_t*)p;
        case EC_INT8: return *(const int8_t*)p;
        case EC_INT16: return *(const int16_t*)p;
        case EC_INT32: return *(const int32_t*)p;
        case EC_INT64: return *(const int64_t*)p;
        default: return (int64_t)load_f(dtype, p);
    }
}

static inline int is_nonzero(int dtype, const char* p) {
    switch (ec_itemsize[dtype]) {
        case 1: return *(const uint8_t*)p != 0;
        case 2:
            if (dtype == EC_INT16) return *(const int16_t*)p != 0;
            return load_f(dtype, p) != 0;
        case 4:
            if (dtype == EC_INT32) return *(const int32_t*)p != 0;
            return *(const float*)p != 0;
        default:
            if (dtype == EC_INT64) return *(const int64_t*)p != 0;
            return *(const double*)p != 0;
    }
}

/* ------------------------------------------------------- fast float sums */

#define SUM_BLOCK 4096
#define LANES 32

/* The lanes are folded in halves (a vector add per step) rather than one by
 * one: a sequential chain of LANES adds cost more than the whole sum of a
 * short line (softmax rows, sums over a last dim of 64), and short lines skip
 * the lanes altogether. */
__attribute__((target_clones("avx2", "default"))) static double sum_f32(const float* x, int64_t n) {
    if (n < LANES) {
        float s = 0;
        for (int64_t j = 0; j < n; j++) s += x[j];
        return s;
    }
    double total = 0;
    for (int64_t i = 0; i < n; i += SUM_BLOCK) {
        int64_t m = n - i < SUM_BLOCK ? n - i : SUM_BLOCK;
        float acc[LANES] = {0};
        int64_t j = 0;
        for (; j + LANES <= m; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += x[i + j + k];
        for (int w = LANES / 2; w >= 1; w /= 2)
            for (int k = 0; k < w; k++) acc[k] += acc[k + w];
        float s = acc[0];
        for (; j < m; j++) s += x[i + j];
        total += s;
    }
    return total;
}

__attribute__((target_clones("avx2", "default"))) static double sum_f64(const double* x, int64_t n) {
    double acc[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[j + k];
    double s = 0;
    for (; j < n; j++) s += x[j];
    for (int k = 0; k < 8; k++) s += acc[k];
    return s;
}

static double sumsq_dev_f32(const float* x, int64_t n, float mean) {
    double total = 0;
    for (int64_t i = 0; i < n; i += SUM_BLOCK) {
        int64_t m = n - i < SUM_BLOCK ? n - i : SUM_BLOCK;
        float acc[LANES] = {0};
        int64_t j = 0;
        for (; j + LANES <= m; j += LANES)
            for (int k = 0; k < LANES; k++) {
                float d = x[i + j + k] - mean;
                acc[k] += d * d;
            }
        float s = 0;
        for (; j < m; j++) s += (x[i + j] - mean) * (x[i + j] - mean);
        for (int k = 0; k < LANES; k++) s += acc[k];
        total += s;
    }
    return total;
}

/* ------------------------------------------------------------ the ops */

static void state_init(const rdesc* d, rstate* s) {
    memset(s, 0, sizeof *s);
    s->idx = -1;
    switch (d->op) {
        case EC_R_PROD: s->f = 1; s->i = 1; break;
        case EC_R_MAX: s->f = -INFINITY; s->i = INT64_MIN; break;
        case EC_R_MIN: s->f = INFINITY; s->i = INT64_MAX; break;
        case EC_R_ALL: s->i = 1; break;
        case EC_R_LOGSUMEXP: s->f = -INFINITY; break;
        case EC_R_NORM:
            if (d->p0 == -INFINITY) s->f = INFINITY;
            break;
        default: break;
    }
}

/* Accumulate n elements at p (byte stride st) whose flat reduced index starts at
 * base into s. */
static void state_line(const rdesc* d, rstate* s, const char* p, int64_t n, int64_t st,
                       int64_t base) {
    int dt = d->dtype;
    switch (d->op) {
        case EC_R_SUM:
        case EC_R_MEAN:
            if (!d->is_float) {
                int64_t acc = 0;
                for (int64_t i = 0; i < n; i++) acc += load_i(dt, p + i * st);
                s->i += acc;
            } else if (dt == EC_FLOAT32 && st == 4) {
                s->f += sum_f32((const float*)p, n);
            } else if (dt == EC_FLOAT64 && st == 8) {
                s->f += sum_f64((const double*)p, n);
            } else {
                double acc = 0;
                for (int64_t i = 0; i < n; i++) acc += load_f(dt, p + i * st);
                s->f += acc;
            }
            s->n += n;
            break;
        case EC_R_NANSUM: {
            double acc = 0;
            for (int64_t i = 0; i < n; i++) {
                double v = load_f(dt, p + i * st);
                if (v == v) acc += v;
            }
            s->f += acc;
            break;
        }
        case EC_R_PROD:
            if (d->is_float)
                for (int64_t i = 0; i < n; i++) s->f *= load_f(dt, p + i * st);
            else
                for (int64_t i = 0; i < n; i++) s->i = (int64_t)((uint64_t)s->i * (uint64_t)load_i(dt, p + i * st));
            break;
        case EC_R_MAX:
        case EC_R_MIN: {
            int is_max = d->op == EC_R_MAX;
            if (d->is_float) {
                if (s->nan) break;
                for (int64_t i = 0; i < n; i++) {
                    double v = load_f(dt, p + i * st);
                    if (v != v) {
                        s->nan = 1;
                        s->f = v;
                        s->idx = base + i;
                        break;
                    }
                    if (s->idx < 0 || (is_max ? v > s->f : v < s->f)) {
                        s->f = v;
                        s->idx = base + i;
                    }
                }
            } else {
                for (int64_t i = 0; i < n; i++) {
                    int64_t v = load_i(dt, p + i * st);
                    if (s->idx < 0 || (is_max ? v > s->i : v < s->i)) {
                        s->i = v;
                        s->idx = base + i;
                    }
                }
            }
            break;
        }
        case EC_R_ALL:
            for (int64_t i = 0; i < n && s->i; i++) s->i = is_nonzero(dt, p + i * st);
            break;
        case EC_R_ANY:
            for (int64_t i = 0; i < n && !s->i; i++) s->i = is_nonzero(dt, p + i * st);
            break;
        case EC_R_COUNT_NONZERO:
            for (int64_t i = 0; i < n; i++) s->n += is_nonzero(dt, p + i * st);
            break;
        case EC_R_VAR:
        case EC_R_STD: {
            /* two passes over the line, then Chan's merge into the running state */
            double mean;
            if (dt == EC_FLOAT32 && st == 4) mean = sum_f32((const float*)p, n) / (double)n;
            else {
                double acc = 0;
                for (int64_t i = 0; i < n; i++) acc += load_f(dt, p + i * st);
                mean = acc / (double)n;
            }
            double m2;
            if (dt == EC_FLOAT32 && st == 4) m2 = sumsq_dev_f32((const float*)p, n, (float)mean);
            else {
                m2 = 0;
                for (int64_t i = 0; i < n; i++) {
                    double dv = load_f(dt, p + i * st) - mean;
                    m2 += dv * dv;
                }
            }
            if (s->n == 0) {
                s->n = n;
                s->f = mean;
                s->g = m2;
            } else {
                double na = (double)s->n, nb = (double)n, delta = mean - s->f;
                double tot = na + nb;
                s->f += delta * nb / tot;
                s->g += m2 + delta * delta * na * nb / tot;
                s->n += n;
            }
            break;
        }
        case EC_R_NORM: {
            double ord = d->p0;
            for (int64_t i = 0; i < n; i++) {
                double v = fabs(load_f(dt, p + i * st));
                if (v != v) { s->nan = 1; continue; }
                if (ord == 2) s->f += v * v;
                else if (ord == 1) s->f += v;
                else if (ord == INFINITY) s->f = v > s->f ? v : s->f;
                else if (ord == -INFINITY) s->f = v < s->f ? v : s->f;
                else if (ord == 0) s->f += v != 0;
                else s->f += pow(v, ord);
            }
            break;
        }
        case EC_R_LOGSUMEXP: {
            double m = -INFINITY;
            for (int64_t i = 0; i < n; i++) {
                double v = load_f(dt, p + i * st);
                if (v != v) s->nan = 1;
                if (v > m) m = v;
            }
            if (m == -INFINITY) break;
            double acc = 0;
            if (m == INFINITY) {
                acc = 1;
            } else {
                for (int64_t i = 0; i < n; i++) acc += exp(load_f(dt, p + i * st) - m);
            }
            if (m > s->f) {
                s->g = s->g * exp(s->f - m) + acc;
                s->f = m;
            } else {
                s->g += acc * exp(m - s->f);
            }
            break;
        }
    }
}

/* Merge partial state b (covering later indices) into a. */
static void state_merge(const rdesc* d, rstate* a, const rstate* b) {
    switch (d->op) {
        case EC_R_SUM: case EC_R_MEAN:
            a->f += b->f; a->i += b->i; a->n += b->n; break;
        case EC_R_NANSUM: a->f += b->f; break;
        case EC_R_PROD: a->f *= b->f; a->i = (int64_t)((uint64_t)a->i * (uint64_t)b->i); break;
        case EC_R_MAX: case EC_R_MIN: {
            if (a->nan || b->idx < 0) break;
            if (b->nan || a->idx < 0) { *a = *b; break; }
            int is_max = d->op == EC_R_MAX;
            if (d->is_float ? (is_max ? b->f > a->f : b->f < a->f)
                            : (is_max ? b->i > a->i : b->i < a->i))
                *a = *b;
            break;
        }
        case EC_R_ALL: a->i = a->i && b->i; break;
        case EC_R_ANY: a->i = a->i || b->i; break;
        case EC_R_COUNT_NONZERO: a->n += b->n; break;
        case EC_R_VAR: case EC_R_STD:
            if (b->n == 0) break;
            if (a->n == 0) { *a = *b; break; }
            {
                double na = (double)a->n, nb = (double)b->n, delta = b->f - a->f, tot = na + nb;
                a->f += delta * nb / tot;
                a->g += b->g + delta * delta * na * nb / tot;
                a->n += b->n;
            }
            break;
        case EC_R_NORM:
            a->nan |= b->nan;
            if (d->p0 == INFINITY) a->f = b->f > a->f ? b->f : a->f;
            else if (d->p0 == -INFINITY) a->f = b->f < a->f ? b->f : a->f;
            else a->f += b->f;
            break;
        case EC_R_LOGSUMEXP:
            a->nan |= b->nan;
            if (b->f == -INFINITY) break;
            if (b->f > a->f) { a->g = a->g * exp(a->f - b->f) + b->g; a->f = b->f; }
            else a->g += b->g * exp(b->f - a->f);
            break;
    }
}

static void store_value(int dtype, char* out, double f, int64_t i, int use_int) {
    switch (dtype) {
        case EC_BOOL: *(uint8_t*)out = use_int ? i != 0 : f != 0; break;
        case EC_UINT8: *(uint8_t*)out = (uint8_t)(use_int ? i : ec_f2i64(f)); break;
        case EC_INT8: *(int8_t*)out = (int8_t)(use_int ? i : ec_f2i64(f)); break;
        case EC_INT16: *(int16_t*)out = (int16_t)(use_int ? i : ec_f2i64(f)); break;
        case EC_INT32: *(int32_t*)out = (int32_t)(use_int ? i : ec_f2i64(f)); break;
        case EC_INT64: *(int64_t*)out = use_int ? i : ec_f2i64(f); break;
        case EC_FLOAT16: *(ec_f16*)out = (ec_f16)(use_int ? (double)i : f); break;
        case EC_BFLOAT16: *(ec_bf16*)out = ec_f32_to_bf16((float)(use_int ? (double)i : f)); break;
        case EC_FLOAT32: *(float*)out = (float)(use_int ? (double)i : f); break;
        default: *(double*)out = use_int ? (double)i : f; break;
    }
}

static void state_final(const rdesc* d, const rstate* s, int out_dtype, char* out, char* idx,
                        int64_t count) {
    int fl = d->is_float;
    switch (d->op) {
        case EC_R_SUM: store_value(out_dtype, out, s->f, s->i, !fl); break;
        case EC_R_NANSUM: store_value(out_dtype, out, s->f, 0, 0); break;
        case EC_R_MEAN:
            store_value(out_dtype, out, (fl ? s->f : (double)s->i) / (double)count, 0, 0);
            break;
        case EC_R_PROD: store_value(out_dtype, out, s->f, s->i, !fl); break;
        case EC_R_MAX: case EC_R_MIN:
            store_value(out_dtype, out, s->f, s->i, !fl);
            if (idx) *(int64_t*)idx = s->idx < 0 ? 0 : s->idx;
            break;
        case EC_R_ALL: case EC_R_ANY: store_value(out_dtype, out, 0, s->i, 1); break;
        case EC_R_COUNT_NONZERO: store_value(out_dtype, out, 0, s->n, 1); break;
        case EC_R_VAR: case EC_R_STD: {
            /* M2 / max(0, n - correction): 0/0 = NaN for a single element, as PyTorch */
            double dof = (double)s->n - d->p0;
            double v = s->g / (dof > 0 ? dof : 0);
            store_value(out_dtype, out, d->op == EC_R_STD ? sqrt(v) : v, 0, 0);
            break;
        }
        case EC_R_NORM: {
            double ord = d->p0, v = s->f;
            if (s->nan) v = NAN;
            else if (ord == 2) v = sqrt(v);
            else if (ord != 1 && ord != 0 && !isinf(ord)) v = pow(v, 1.0 / ord);
            store_value(out_dtype, out, v, 0, 0);
            break;
        }
        case EC_R_LOGSUMEXP: {
            double v = s->nan ? NAN : (s->f == -INFINITY ? -INFINITY : s->f + log(s->g));
            store_value(out_dtype, out, v, 0, 0);
            break;
        }
    }
}

/* ----------------------------------------------------------- the driver */

typedef struct rspace {
    int nd;
    int64_t shape[EC_MAX_DIMS];
    int64_t st[EC_MAX_DIMS]; /* bytes */
} rspace;

/* Reduce flat indices [lo, hi) of the reduced space starting at p into s. */
static void reduce_range(const rdesc* d, const rspace* r, const char* p, int64_t lo, int64_t hi,
                         rstate* s) {
    int nd = r->nd;
    if (lo >= hi) return; /* nothing (an empty reduced space has a zero in its shape) */
    if (nd == 0) {
        state_line(d, s, p, 1, 0, 0);
        return;
    }
    int64_t idx[EC_MAX_DIMS];
    int64_t rem = lo;
    for (int k = nd - 1; k >= 0; k--) {
        idx[k] = rem % r->shape[k];
        rem /= r->shape[k];
    }
    const char* ptr = p;
    for (int k = 0; k < nd; k++) ptr += idx[k] * r->st[k];
    int64_t inner = r->shape[nd - 1], inner_st = r->st[nd - 1], pos = lo;
    while (pos < hi) {
        int64_t n = inner - idx[nd - 1];
        if (n > hi - pos) n = hi - pos;
        state_line(d, s, ptr, n, inner_st, pos);
        pos += n;
        if (pos >= hi) break;
        idx[nd - 1] += n;
        ptr += n * inner_st;
        for (int k = nd - 1; k > 0 && idx[k] == r->shape[k]; k--) {
            idx[k] = 0;
            idx[k - 1]++;
            ptr += r->st[k - 1] - r->shape[k] * r->st[k];
        }
    }
}

static void coalesce(rspace* r) {
    int nd = 0;
    for (int k = 0; k < r->nd; k++) {
        if (r->shape[k] == 1) continue;
        if (nd > 0 && r->st[nd - 1] == r->st[k] * r->shape[k]) {
            r->shape[nd - 1] *= r->shape[k];
            r->st[nd - 1] = r->st[k];
            continue;
        }
        r->shape[nd] = r->shape[k];
        r->st[nd] = r->st[k];
        nd++;
    }
    r->nd = nd;
}

/* Pointer offsets of output element `o` (flat) in out, idx and input. */
static void out_offsets(int no, const int64_t* shape, const int64_t* ost, const int64_t* ist,
                        int64_t o, int64_t* out_off, int64_t* in_off) {
    int64_t oo = 0, io = 0;
    for (int k = no - 1; k >= 0; k--) {
        int64_t i = o % shape[k];
        o /= shape[k];
        oo += i * ost[k];
        io += i * ist[k];
    }
    *out_off = oo;
    *in_off = io;
}

/* acc[j] += sum over the n_red reduced rows (the rspace r, from base) of row[j],
 * j < m <= 256.  float32 rows are summed in float over blocks of VROWS rows
 * (a vector add per 8 elements), each block's sums then added in double, as
 * sum_f32 does along a line. */
#define VROWS 64
#define NEXT_ROW(idx, r)                                \
    for (int k = (r)->nd - 1; k >= 0; k--) {            \
        if (++idx[k] < (r)->shape[k]) break;            \
        idx[k] = 0;                                     \
    }

__attribute__((target_clones("avx2", "default"))) static void vertical_rows_f32(
    const char* base, const rspace* r, int64_t n_red, int64_t m, double* acc) {
    int64_t idx[EC_MAX_DIMS] = {0};
    float part[256];
    for (int64_t rr = 0; rr < n_red;) {
        int64_t rows = n_red - rr < VROWS ? n_red - rr : VROWS;
        for (int64_t j = 0; j < m; j++) part[j] = 0;
        for (int64_t q = 0; q < rows; q++, rr++) {
            int64_t off = 0;
            for (int k = 0; k < r->nd; k++) off += idx[k] * r->st[k];
            const float* row = (const float*)(base + off);
            for (int64_t j = 0; j < m; j++) part[j] += row[j];
            NEXT_ROW(idx, r)
        }
        for (int64_t j = 0; j < m; j++) acc[j] += part[j];
    }
}

__attribute__((target_clones("avx2", "default"))) static void vertical_rows_f64(
    const char* base, const rspace* r, int64_t n_red, int64_t m, double* acc) {
    int64_t idx[EC_MAX_DIMS] = {0};
    for (int64_t rr = 0; rr < n_red; rr++) {
        int64_t off = 0;
        for (int k = 0; k < r->nd; k++) off += idx[k] * r->st[k];
        const double* row = (const double*)(base + off);
        for (int64_t j = 0; j < m; j++) acc[j] += row[j];
        NEXT_ROW(idx, r)
    }
}

/* Vertical SUM/MEAN of float32/float64: out[j] = sum_r x[r, j] with j contiguous. */
static int try_vertical(const rdesc* d, int out_dtype, int no, const int64_t* oshape,
                        const int64_t* ost_b, const int64_t* ist_b, const rspace* r, char* out,
                        const char* x, int64_t count) {
    if (d->op != EC_R_SUM && d->op != EC_R_MEAN) return 0;
    if (d->dtype != out_dtype || (d->dtype != EC_FLOAT32 && d->dtype != EC_FLOAT64)) return 0;
    if (no < 1 || r->nd < 1) return 0;
    int isz = d->itemsize;
    if (ist_b[no - 1] != isz || ost_b[no - 1] != isz) return 0;
    /* the reduced dims must not be the fastest-moving ones */
    for (int k = 0; k < r->nd; k++)
        if (llabs(r->st[k]) < (int64_t)isz * oshape[no - 1] && r->st[k] != 0) return 0;
    int64_t inner = oshape[no - 1];
    int64_t n_outer = 1;
    for (int k = 0; k < no - 1; k++) n_outer *= oshape[k];
    int64_t n_red = 1;
    for (int k = 0; k < r->nd; k++) n_red *= r->shape[k];
    const int64_t CH = 256;
    int64_t n_chunks = (inner + CH - 1) / CH;
    int64_t tasks = n_outer * n_chunks;
    int nt = ec_threads_for(n_outer * inner * n_red, EC_GRAIN);
    if (nt > tasks) nt = (int)tasks;
    double scale = d->op == EC_R_MEAN ? 1.0 / (double)count : 1.0;
#pragma omp parallel for num_threads(nt > 0 ? nt : 1) schedule(static) if(nt > 1)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t oi = t / n_chunks, c0 = (t % n_chunks) * CH;
        int64_t m = inner - c0 < CH ? inner - c0 : CH;
        int64_t ooff = 0, ioff = 0, rem = oi;
        for (int k = no - 2; k >= 0; k--) {
            int64_t i = rem % oshape[k];
            rem /= oshape[k];
            ooff += i * ost_b[k];
            ioff += i * ist_b[k];
        }
        double acc[256];
        for (int64_t j = 0; j < m; j++) acc[j] = 0;
        const char* base = x + ioff + c0 * isz;
        if (d->dtype == EC_FLOAT32) vertical_rows_f32(base, r, n_red, m, acc);
        else vertical_rows_f64(base, r, n_red, m, acc);
        char* o = out + ooff + c0 * isz;
        if (d->dtype == EC_FLOAT32)
            for (int64_t j = 0; j < m; j++) ((float*)o)[j] = (float)(acc[j] * scale);
        else
            for (int64_t j = 0; j < m; j++) ((double*)o)[j] = acc[j] * scale;
    }
    return 1;
}

/* SUM/MEAN of float32/float64 over one contiguous line per output, the outputs
 * one flat dim apart (sums over the last dim: softmax-style rows).  The
 * general path works out every output's offsets with divisions, which cost
 * more than summing a line of 64; here they are multiples of one stride. */
static int try_rows(const rdesc* d, int out_dtype, int no, const int64_t* oshape,
                    const int64_t* ost_b, const int64_t* ist_b, const rspace* r, char* out,
                    const char* x, int64_t count, int64_t n_out) {
    if (d->op != EC_R_SUM && d->op != EC_R_MEAN) return 0;
    if (d->dtype != out_dtype || (d->dtype != EC_FLOAT32 && d->dtype != EC_FLOAT64)) return 0;
    if (r->nd != 1 || r->st[0] != d->itemsize || r->shape[0] != count || count < 1) return 0;
    int64_t so = 0, si = 0, span = 0; /* the outputs as one dim: strides, extent */
    for (int k = no - 1; k >= 0; k--) {
        if (oshape[k] == 1) continue;
        if (span == 0) {
            so = ost_b[k];
            si = ist_b[k];
            span = oshape[k];
        } else if (ost_b[k] == so * span && ist_b[k] == si * span) {
            span *= oshape[k];
        } else {
            return 0;
        }
    }
    const int mean = d->op == EC_R_MEAN, f32 = d->dtype == EC_FLOAT32;
    int nt = ec_threads_for(n_out * count, EC_GRAIN);
    if (n_out < nt) return 0; /* few long lines: the general path splits each across threads */
#pragma omp parallel for num_threads(nt > 0 ? nt : 1) schedule(static) if(nt > 1)
    for (int64_t o = 0; o < n_out; o++) {
        const char* line = x + o * si;
        if (f32) {
            double v = sum_f32((const float*)line, count);
            *(float*)(out + o * so) = (float)(mean ? v / (double)count : v);
        } else {
            double v = sum_f64((const double*)line, count);
            *(double*)(out + o * so) = mean ? v / (double)count : v;
        }
    }
    return 1;
}

/* Reduce the whole reduced space of output element `o` (flat). */
static void reduce_output(const rdesc* d, const rspace* r, int ndim_out, const int64_t* oshape,
                          const int64_t* ost, const int64_t* ost_b, const int64_t* ist_b, int64_t o,
                          int out_dtype, void* out, void* idx, const void* x, int64_t count) {
    int64_t ooff, ioff;
    out_offsets(ndim_out, oshape, ost_b, ist_b, o, &ooff, &ioff);
    rstate s;
    state_init(d, &s);
    reduce_range(d, r, (const char*)x + ioff, 0, count, &s);
    int64_t io = 0;
    if (idx) {
        int64_t rem = o;
        for (int k = ndim_out - 1; k >= 0; k--) {
            io += (rem % oshape[k]) * ost[k] * 8;
            rem /= oshape[k];
        }
    }
    state_final(d, &s, out_dtype, (char*)out + ooff, idx ? (char*)idx + io : NULL, count);
}

int ec_reduce(int op, int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
              ec_ptr out_addr, ec_ptr idx_addr, ec_ptr x_addr, double p0) {
    EC_REQUIRE_BASE_DTYPE("reduce", dtype);
    EC_REQUIRE_BASE_DTYPE("reduce", out_dtype);
    void* out = (void*)out_addr;
    void* idx = (void*)idx_addr;
    const void* x = (const void*)x_addr;
    if (op < 0 || op >= EC_NUM_REDUCE || !ec_valid_dtype(dtype) || !ec_valid_dtype(out_dtype))
        return ec_fail(EC_ERR_INVALID, "reduce: bad op %d or dtype %d/%d", op, dtype, out_dtype);
    if (ndim_out < 0 || ndim_red < 0 || ndim_out > EC_MAX_DIMS || ndim_red > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "reduce: bad dims %d/%d", ndim_out, ndim_red);
    rdesc d = {op, dtype, ec_is_float(dtype), ec_itemsize[dtype], p0};
    int isz = d.itemsize, osz = ec_itemsize[out_dtype];
    const int64_t* oshape = layout;
    const int64_t* ost = layout + ndim_out;
    const int64_t* ist = layout + 2 * ndim_out;
    const int64_t* rshape = layout + 3 * ndim_out;
    const int64_t* rst = layout + 3 * ndim_out + ndim_red;
    int64_t ost_b[EC_MAX_DIMS], ist_b[EC_MAX_DIMS];
    int64_t n_out = 1;
    for (int k = 0; k < ndim_out; k++) {
        n_out *= oshape[k];
        ost_b[k] = ost[k] * osz;
        ist_b[k] = ist[k] * isz;
    }
    rspace r;
    r.nd = ndim_red;
    int64_t count = 1;
    for (int k = 0; k < ndim_red; k++) {
        r.shape[k] = rshape[k];
        r.st[k] = rst[k] * isz;
        count *= rshape[k];
    }
    if (n_out == 0) return EC_OK;
    coalesce(&r);
    if (count > 0 && !idx &&
        try_vertical(&d, out_dtype, ndim_out, oshape, ost_b, ist_b, &r, (char*)out, (const char*)x, count))
        return EC_OK;
    if (!idx && try_rows(&d, out_dtype, ndim_out, oshape, ost_b, ist_b, &r, (char*)out,
                         (const char*)x, count, n_out))
        return EC_OK;

    int nt = ec_threads_for(n_out * (count > 0 ? count : 1), EC_GRAIN);
    if (n_out >= nt || nt <= 1) {
        /* one thread per group of outputs (no OpenMP region for one thread:
         * entering one costs more than reducing a small tensor) */
        if (nt <= 1) {
            for (int64_t o = 0; o < n_out; o++)
                reduce_output(&d, &r, ndim_out, oshape, ost, ost_b, ist_b, o, out_dtype, out, idx, x, count);
        } else {
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
            for (int64_t o = 0; o < n_out; o++)
                reduce_output(&d, &r, ndim_out, oshape, ost, ost_b, ist_b, o, out_dtype, out, idx, x, count);
        }
        return EC_OK;
    }
    /* few outputs, much work each: split every output's reduced range */
    rstate* parts = malloc(sizeof(rstate) * (size_t)nt);
    if (!parts) return ec_fail(EC_ERR_NOMEM, "reduce: no scratch memory");
    for (int64_t o = 0; o < n_out; o++) {
        int64_t ooff, ioff;
        out_offsets(ndim_out, oshape, ost_b, ist_b, o, &ooff, &ioff);
#pragma omp parallel num_threads(nt)
        {
#ifdef _OPENMP
            int t = omp_get_thread_num(), n = omp_get_num_threads();
#else
            int t = 0, n = 1;
#endif
            int64_t lo = count * t / n, hi = count * (t + 1) / n;
            state_init(&d, &parts[t]);
            reduce_range(&d, &r, (const char*)x + ioff, lo, hi, &parts[t]);
            if (t == 0 && n < nt)
                for (int u = n; u < nt; u++) state_init(&d, &parts[u]);
        }
        rstate s = parts[0];
        for (int t = 1; t < nt; t++) state_merge(&d, &s, &parts[t]);
        int64_t io = 0;
        if (idx) {
            int64_t rem = o;
            for (int k = ndim_out - 1; k >= 0; k--) {
                io += (rem % oshape[k]) * ost[k] * 8;
                rem /= oshape[k];
            }
        }
        state_final(&d, &s, out_dtype, (char*)out + ooff, idx ? (char*)idx + io : NULL, count);
    }
    free(parts);
    return EC_OK;
}

/* ------------------------------------------------------------------ scans */

int ec_scan(int op, int dtype, int out_dtype, int ndim, int dim, const int64_t* layout, ec_ptr out_addr,
            ec_ptr idx_addr, ec_ptr x_addr) {
    EC_REQUIRE_BASE_DTYPE("scan", dtype);
    EC_REQUIRE_BASE_DTYPE("scan", out_dtype);
    void* out = (void*)out_addr;
    void* idx = (void*)idx_addr;
    const void* x = (const void*)x_addr;
    if (op < 0 || op >= EC_NUM_SCAN || !ec_valid_dtype(dtype) || !ec_valid_dtype(out_dtype) ||
        dim < 0 || dim >= ndim || ndim > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "scan: bad arguments");
    const int64_t* shape = layout;
    const int64_t* ost = layout + ndim;
    const int64_t* ist = layout + 2 * ndim;
    const int64_t* xst = layout + 3 * ndim;
    int isz = ec_itemsize[dtype], osz = ec_itemsize[out_dtype];
    int fl = ec_is_float(dtype) || ec_is_float(out_dtype);
    int64_t n_lines = 1;
    for (int k = 0; k < ndim; k++)
        if (k != dim) n_lines *= shape[k];
    int64_t len = shape[dim];
    if (n_lines == 0 || len == 0) return EC_OK;
    int nt = ec_threads_for(n_lines * len, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t l = 0; l < n_lines; l++) {
        int64_t rem = l, ooff = 0, ioff = 0, xoff = 0;
        for (int k = ndim - 1; k >= 0; k--) {
            if (k == dim) continue;
            int64_t i = rem % shape[k];
            rem /= shape[k];
            ooff += i * ost[k];
            ioff += i * ist[k];
            xoff += i * xst[k];
        }
        char* o = (char*)out + ooff * osz;
        const char* in = (const char*)x + ioff * isz;
        char* ix = idx ? (char*)idx + xoff * 8 : NULL;
        double facc = op == EC_S_CUMPROD ? 1 : 0;
        int64_t iacc = op == EC_S_CUMPROD ? 1 : 0;
        double best = 0;
        int64_t besti = 0, best_int = 0;
        double lse_m = -INFINITY, lse_s = 0;
        for (int64_t j = 0; j < len; j++) {
            const char* pin = in + j * ist[dim] * isz;
            char* pout = o + j * ost[dim] * osz;
            switch (op) {
                case EC_S_CUMSUM:
                    if (fl) { facc += load_f(dtype, pin); store_value(out_dtype, pout, facc, 0, 0); }
                    else { iacc += load_i(dtype, pin); store_value(out_dtype, pout, 0, iacc, 1); }
                    break;
                case EC_S_CUMPROD:
                    if (fl) { facc *= load_f(dtype, pin); store_value(out_dtype, pout, facc, 0, 0); }
                    else {
                        iacc = (int64_t)((uint64_t)iacc * (uint64_t)load_i(dtype, pin));
                        store_value(out_dtype, pout, 0, iacc, 1);
                    }
                    break;
                case EC_S_CUMMAX:
                case EC_S_CUMMIN: {
                    /* ties move the index forward; a NaN, once seen, stays */
                    int is_max = op == EC_S_CUMMAX;
                    if (fl) {
                        double v = load_f(dtype, pin);
                        if (j == 0 || (best == best && (v != v || (is_max ? v >= best : v <= best)))) {
                            best = v;
                            besti = j;
                        }
                        store_value(out_dtype, pout, best, 0, 0);
                    } else {
                        int64_t v = load_i(dtype, pin);
                        if (j == 0 || (is_max ? v >= best_int : v <= best_int)) {
                            best_int = v;
                            besti = j;
                        }
                        store_value(out_dtype, pout, 0, best_int, 1);
                    }
                    if (ix) *(int64_t*)(ix + j * xst[dim] * 8) = besti;
                    break;
                }
                case EC_S_LOGCUMSUMEXP: {
                    double v = load_f(dtype, pin);
                    if (v != v || lse_m != lse_m) {
                        lse_m = NAN;
                    } else if (v > lse_m) {
                        lse_s = (lse_m == -INFINITY ? 0 : lse_s * exp(lse_m - v)) + 1;
                        lse_m = v;
                    } else if (v != -INFINITY) {
                        lse_s += exp(v - lse_m);
                    }
                    double res = lse_m != lse_m ? NAN
                                 : (isinf(lse_m) ? lse_m : lse_m + log(lse_s));
                    store_value(out_dtype, pout, res, 0, 0);
                    break;
                }
            }
        }
    }
    return EC_OK;
}
