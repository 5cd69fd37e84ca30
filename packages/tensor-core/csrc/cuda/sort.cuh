/* Sorting and selection along one dim on CUDA: sort/argsort, topk, kthvalue
 * (median, nanmedian) and mode.  Launchers: cuda/sort_launch.c, with sort.c's
 * parameters.  Needs prelude.cuh, ember_codes.h, dtype_lists.h and store.cuh.
 *
 * Note [CUDA sort]
 * Elements compare by (key, position) with sort.c's keys (Note [Sort keys]:
 * an unsigned integer whose order is the element's, NaN largest, -0.0 equal to
 * +0.0, inverted for descending order), a strict total order: every sort is
 * stable and selections break ties by position, exactly as on the CPU, so the
 * results are the CPU's bit for bit.
 *
 * The network is a bitonic sort in its "flip" form, where every comparator
 * puts the smaller element first; a line of n elements is padded (virtually)
 * to a power of two with elements larger than any real one, which never move,
 * so any n works.  A line that fits a tile (ECU_SORT_TILE elements) is sorted
 * in shared memory by one block and the result written directly.  Longer
 * lines are sorted as positions in a working array of int64 (the indices
 * output for sort, else a workspace): tiles are sorted in shared memory, then
 * each merge stage runs its wide steps as one launch over global memory and
 * its steps narrower than a tile in shared memory; a last kernel writes the
 * result of each line (values, the first k, the k-th, the mode). */
#ifndef EMBER_CUDA_SORT_CUH
#define EMBER_CUDA_SORT_CUH

#define ECU_SORT_TILE 2048

/* What a line's sorted order is for (the finish step; host twin in
 * sort_launch.c). */
enum { ECU_SORT_OUT_SORT, ECU_SORT_OUT_TOPK, ECU_SORT_OUT_KTH, ECU_SORT_OUT_MODE };
/* ec_kthvalue's modes (enum ec_kth_mode of ember_core.h) */
enum { ECU_KTH_VALUE, ECU_KTH_MEDIAN, ECU_KTH_NANMEDIAN };

/* The lines: batch sizes (size-1 dims dropped) and the element strides of x,
 * values and indices over them. */
struct ecu_lines {
    int32_t ndim, pad;
    int64_t count;
    int64_t size[ECU_MAX_DIMS];
    int64_t st[3][ECU_MAX_DIMS];
};

/* Everything a sort kernel needs besides the lines. */
struct ecu_sortp {
    int64_t n, k;                /* line length; k of topk/kthvalue */
    int64_t x_st, v_st, i_st;    /* strides along the line */
    int64_t w_line, w_st;        /* working array: line r at r * w_line (or the
                                    indices' line offset when w_line < 0), stride w_st */
    int32_t desc, out, kth_mode, tile;
    int64_t kstep, jstep;        /* global step: merge size, comparator distance */
};

static __device__ __forceinline__ void ecu_line_offsets(const ecu_lines& L, int64_t r,
                                                        int64_t* off) {
    off[0] = off[1] = off[2] = 0;
    for (int d = L.ndim - 1; d >= 0; d--) {
        int64_t q = r / L.size[d], i = r - q * L.size[d];
        off[0] += i * L.st[0][d];
        off[1] += i * L.st[1][d];
        off[2] += i * L.st[2][d];
        r = q;
    }
}

/* ----------------------------------------------------------------- keys */

static __device__ __forceinline__ uint32_t ecu_key32f(float f) {
    if (f != f) return 0xffffffffu;
    if (f == 0.0f) f = 0.0f; /* -0.0 sorts with +0.0 */
    uint32_t u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static __device__ __forceinline__ uint64_t ecu_key64f(double f) {
    if (f != f) return 0xffffffffffffffffull;
    if (f == 0.0) f = 0.0;
    uint64_t u = (uint64_t)__double_as_longlong(f);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

template <class D>
struct ecu_sort_key {
    typedef typename D::T T;
    typedef typename ecu_if<sizeof(T) == 8, uint64_t, uint32_t>::type K;
    static __device__ __forceinline__ K of(T v) {
        if (D::kind == ECU_KIND_B) return (K)(v != 0);
        if (D::kind == ECU_KIND_F) {
            if (sizeof(T) == 8) return (K)ecu_key64f((double)D::load(v));
            return (K)ecu_key32f((float)D::load(v));
        }
        if ((T)-1 > (T)0) return (K)v; /* uint8 */
        if (sizeof(T) == 8) return (K)((uint64_t)(int64_t)v ^ 0x8000000000000000ull);
        return (K)((uint32_t)(int32_t)v ^ 0x80000000u);
    }
    static __device__ __forceinline__ bool is_nan(T v) {
        if (D::kind != ECU_KIND_F) return false;
        typename D::C c = D::load(v);
        return c != c;
    }
};

/* (key, position) of the element at line position p. */
template <class D>
static __device__ __forceinline__ typename ecu_sort_key<D>::K ecu_key_at(const char* xl,
                                                                         int64_t x_st, int64_t p,
                                                                         int desc) {
    typedef typename ecu_sort_key<D>::K K;
    K k = ecu_sort_key<D>::of(((const typename D::T*)xl)[p * x_st]);
    return desc ? (K)~k : k;
}

template <class K>
static __device__ __forceinline__ bool ecu_greater(K ka, int64_t ia, K kb, int64_t ib) {
    return ka > kb || (ka == kb && ia > ib);
}

/* ------------------------------------------------ the network in a tile */

/* Sort tile positions [0, tile) of keys/pos ascending by (key, pos); every
 * thread of the block calls it.  tile: a power of two, 2 * blockDim.x; from
 * merge size `first` on (2: a full sort; tile: only the last stage's
 * half-cleaners, the wider steps having run in global memory). */
template <class K>
static __device__ void ecu_tile_network(K* keys, int64_t* pos, int tile, int first) {
    int half = tile >> 1;
    for (int k = first; k <= tile; k <<= 1) {
        if (k > 1 && first < tile) { /* flip step of merge size k */
            for (int c = threadIdx.x; c < half; c += blockDim.x) {
                int hk = k >> 1, blk = c / hk, o = c - blk * hk;
                int a = blk * k + o, b = blk * k + k - 1 - o;
                if (ecu_greater(keys[a], pos[a], keys[b], pos[b])) {
                    K t = keys[a];
                    keys[a] = keys[b];
                    keys[b] = t;
                    int64_t u = pos[a];
                    pos[a] = pos[b];
                    pos[b] = u;
                }
            }
            __syncthreads();
        }
        for (int j = (first < tile ? k >> 2 : k >> 1); j > 0; j >>= 1) {
            for (int c = threadIdx.x; c < half; c += blockDim.x) {
                int a = (c / j) * 2 * j + (c % j), b = a + j;
                if (ecu_greater(keys[a], pos[a], keys[b], pos[b])) {
                    K t = keys[a];
                    keys[a] = keys[b];
                    keys[b] = t;
                    int64_t u = pos[a];
                    pos[a] = pos[b];
                    pos[b] = u;
                }
            }
            __syncthreads();
        }
    }
}

/* ------------------------------------------------ writing the results */

/* The result of one sorted line (every thread of the block calls it): the
 * p-th smallest element is at line position sorted[p * sst]. */
template <class D>
static __device__ void ecu_sort_finish(const ecu_sortp& P, const char* xl, char* vl,
                                       int64_t* il, const int64_t* sorted, int64_t sst,
                                       bool indices_written) {
    typedef typename D::T T;
    typedef typename ecu_sort_key<D>::K K;
    const T* x = (const T*)xl;
    T* v = (T*)vl;
    if (P.out == ECU_SORT_OUT_SORT || P.out == ECU_SORT_OUT_TOPK) {
        int64_t m = P.out == ECU_SORT_OUT_SORT ? P.n : P.k;
        for (int64_t p = threadIdx.x; p < m; p += blockDim.x) {
            int64_t s = sorted[p * sst];
            if (v) v[p * P.v_st] = x[s * P.x_st];
            if (il && !indices_written) il[p * P.i_st] = s;
        }
        return;
    }
    if (threadIdx.x != 0) return;
    int64_t n = P.n, at;
    if (P.out == ECU_SORT_OUT_KTH) {
        at = P.k;
        if (P.kth_mode != ECU_KTH_VALUE) {
            /* NaNs sort last: the first NaN's sorted position, by bisection */
            int64_t lo = 0, hi = n;
            while (lo < hi) {
                int64_t mid = lo + ((hi - lo) >> 1);
                if (ecu_sort_key<D>::is_nan(x[sorted[mid * sst] * P.x_st]))
                    hi = mid;
                else
                    lo = mid + 1;
            }
            int64_t nans = n - lo;
            if (P.kth_mode == ECU_KTH_MEDIAN && nans) {
                at = lo; /* the first NaN by position (stable order) */
            } else if (P.kth_mode == ECU_KTH_NANMEDIAN) {
                if (nans == n) {
                    v[0] = x[0];
                    il[0] = 0;
                    return;
                }
                at = (n - nans - 1) / 2;
            }
        }
    } else { /* mode: the longest run of equal keys, the first (smallest) of equals */
        int64_t best_end = 0, best_len = 0, run = 0;
        K prev = 0;
        for (int64_t p = 0; p < n; p++) {
            K kp = ecu_sort_key<D>::of(x[sorted[p * sst] * P.x_st]);
            run = (p > 0 && kp == prev) ? run + 1 : 1;
            if (run > best_len) {
                best_len = run;
                best_end = p;
            }
            prev = kp;
        }
        /* to the end of the winning run: its last occurrence */
        K kb = ecu_sort_key<D>::of(x[sorted[best_end * sst] * P.x_st]);
        while (best_end + 1 < n &&
               ecu_sort_key<D>::of(x[sorted[(best_end + 1) * sst] * P.x_st]) == kb)
            best_end++;
        at = best_end;
    }
    int64_t s = sorted[at * sst];
    v[0] = x[s * P.x_st];
    il[0] = s;
}

/* ------------------------------------------------------------- kernels */

/* Lines that fit a tile: one block per line sorts it in shared memory and
 * writes the result.  Dynamic shared memory: tile positions then tile keys. */
template <class D>
__global__ void __launch_bounds__(ECU_SORT_TILE / 2)
    ecu_sort_small_k(ecu_lines L, ecu_sortp P, const char* x, char* values, int64_t* indices) {
    typedef typename ecu_sort_key<D>::K K;
    extern __shared__ int64_t ecu_sort_smem[];
    int64_t* pos = ecu_sort_smem;
    K* keys = (K*)(pos + P.tile);
    int isz = (int)sizeof(typename D::T);
    for (int64_t r = blockIdx.x; r < L.count; r += gridDim.x) {
        int64_t off[3];
        ecu_line_offsets(L, r, off);
        const char* xl = x + off[0] * isz;
        for (int t = threadIdx.x; t < P.tile; t += blockDim.x) {
            if (t < P.n) {
                keys[t] = ecu_key_at<D>(xl, P.x_st, t, P.desc);
                pos[t] = t;
            } else { /* padding: larger than every element */
                keys[t] = (K)~(K)0;
                pos[t] = INT64_MAX;
            }
        }
        __syncthreads();
        ecu_tile_network(keys, pos, P.tile, 2);
        ecu_sort_finish<D>(P, xl, values ? values + off[1] * isz : 0,
                           indices ? indices + off[2] : 0, pos, 1, false);
        __syncthreads(); /* the tile is reused by the next line */
    }
}

/* The working array's line r. */
static __device__ __forceinline__ int64_t* ecu_work_line(const ecu_lines& L, const ecu_sortp& P,
                                                         int64_t* work, int64_t r) {
    if (P.w_line >= 0) return work + r * P.w_line;
    int64_t off[3];
    ecu_line_offsets(L, r, off);
    return work + off[2];
}

/* Long lines, first pass (first = 2) and the narrow steps of each merge stage
 * (first = tile): one block per tile of a line, in shared memory. */
template <class D>
__global__ void __launch_bounds__(ECU_SORT_TILE / 2)
    ecu_sort_tiles_k(ecu_lines L, ecu_sortp P, const char* x, int64_t* work, int first) {
    typedef typename ecu_sort_key<D>::K K;
    extern __shared__ int64_t ecu_sort_smem[];
    int64_t* pos = ecu_sort_smem;
    K* keys = (K*)(pos + P.tile);
    int isz = (int)sizeof(typename D::T);
    int64_t tiles = (P.n + P.tile - 1) / P.tile;
    for (int64_t b = blockIdx.x; b < L.count * tiles; b += gridDim.x) {
        int64_t r = b / tiles, t0 = (b - r * tiles) * P.tile;
        int64_t off[3];
        ecu_line_offsets(L, r, off);
        const char* xl = x + off[0] * isz;
        int64_t* w = ecu_work_line(L, P, work, r);
        for (int t = threadIdx.x; t < P.tile; t += blockDim.x) {
            int64_t p = t0 + t;
            if (p < P.n) {
                int64_t s = first == 2 ? p : w[p * P.w_st];
                keys[t] = ecu_key_at<D>(xl, P.x_st, s, P.desc);
                pos[t] = s;
            } else {
                keys[t] = (K)~(K)0;
                pos[t] = INT64_MAX;
            }
        }
        __syncthreads();
        ecu_tile_network(keys, pos, P.tile, first);
        for (int t = threadIdx.x; t < P.tile; t += blockDim.x)
            if (t0 + t < P.n) w[(t0 + t) * P.w_st] = pos[t];
        __syncthreads();
    }
}

/* Long lines: one wide step of merge size P.kstep over global memory (the
 * flip when jstep is 0, else the half-cleaner of distance jstep). */
template <class D>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_sort_step_k(ecu_lines L, ecu_sortp P, const char* x, int64_t* work, int64_t pow2) {
    typedef typename ecu_sort_key<D>::K K;
    int isz = (int)sizeof(typename D::T);
    int64_t half = pow2 >> 1, total = L.count * half;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        int64_t r = i / half, c = i - r * half, a, b;
        if (P.jstep == 0) {
            int64_t hk = P.kstep >> 1, blk = c / hk, o = c - blk * hk;
            a = blk * P.kstep + o;
            b = blk * P.kstep + P.kstep - 1 - o;
        } else {
            a = (c / P.jstep) * 2 * P.jstep + (c % P.jstep);
            b = a + P.jstep;
        }
        if (b >= P.n) continue; /* b is padding: already in order */
        int64_t off[3];
        ecu_line_offsets(L, r, off);
        const char* xl = x + off[0] * isz;
        int64_t* w = ecu_work_line(L, P, work, r);
        int64_t sa = w[a * P.w_st], sb = w[b * P.w_st];
        K ka = ecu_key_at<D>(xl, P.x_st, sa, P.desc), kb = ecu_key_at<D>(xl, P.x_st, sb, P.desc);
        if (ecu_greater(ka, sa, kb, sb)) {
            w[a * P.w_st] = sb;
            w[b * P.w_st] = sa;
        }
    }
}

/* Long lines: the result of each sorted line (one block per line). */
template <class D>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_sort_finish_k(ecu_lines L, ecu_sortp P, const char* x, char* values, int64_t* indices,
                      int64_t* work) {
    int isz = (int)sizeof(typename D::T);
    for (int64_t r = blockIdx.x; r < L.count; r += gridDim.x) {
        int64_t off[3];
        ecu_line_offsets(L, r, off);
        ecu_sort_finish<D>(P, x + off[0] * isz, values ? values + off[1] * isz : 0,
                           indices ? indices + off[2] : 0, ecu_work_line(L, P, work, r), P.w_st,
                           P.w_line < 0);
    }
}

#endif
