/* Indexing kernels on CUDA: advanced indexing (get, put, accumulate) -- which
 * also serves gather/scatter, index_select/index_add/index_copy/index_fill,
 * take and put -- and the mask kernels (masked_select, masked_scatter,
 * nonzero).  Launchers: cuda/indexing_launch.c, with index.c's parameters
 * (Note [Index iteration] there).  Needs prelude.cuh, ember_codes.h,
 * dtype_lists.h and store.cuh.
 *
 * Note [CUDA index writes]
 * A put writes each point with a plain store: duplicate indices leave one of
 * the written values (which one is unspecified, as in PyTorch on CUDA; the CPU
 * keeps the last).  Accumulations (add, mul, max, min) are atomic read-modify-
 * writes, so duplicates all count; floating-point sums then add in an
 * unspecified order (again as PyTorch's CUDA index_put_/scatter_add_).
 * Out-of-range indices are reported through the device's error word (Note
 * [Device-side errors] in runtime.c) and raise at the next synchronisation;
 * the in-range points of that launch are still written. */
#ifndef EMBER_CUDA_INDEXING_CUH
#define EMBER_CUDA_INDEXING_CUH

/* ec_index's modes (enum ec_index_mode of ember_core.h, which kernels do not see) */
enum { ECU_IX_GET, ECU_IX_PUT, ECU_IX_ADD, ECU_IX_MUL, ECU_IX_MAX, ECU_IX_MIN };

#define ECU_IX_MAX_IDX 6
#define ECU_IX_OPS (2 + ECU_IX_MAX_IDX)

/* The iteration space of ec_index (host twin: ecu_ixgeo in indexing_launch.c):
 * sizes, element strides of values, x and each index tensor; per index the
 * size of the dim it addresses and x's stride along it. */
struct ecu_ixgeo {
    int32_t ndim, nidx;
    int64_t numel;
    int64_t size[ECU_MAX_DIMS];
    int64_t stride[ECU_IX_OPS][ECU_MAX_DIMS];
    int64_t isize[ECU_IX_MAX_IDX];
    int64_t ixst[ECU_IX_MAX_IDX];
    const int64_t* idx[ECU_IX_MAX_IDX];
};

/* Record an out-of-range index in the error word (the first one wins). */
static __device__ __forceinline__ void ecu_report_index(int* err, int64_t value, int64_t size) {
    if (atomicCAS(err, 0, (int)EC_ERR_INDEX) == 0) {
        ((volatile int64_t*)err)[1] = value;
        ((volatile int64_t*)err)[2] = size;
        __threadfence_system();
    }
}

/* Element offsets of point i for the first nops operands. */
template <bool I32>
static __device__ __forceinline__ void ecu_ix_offsets(const ecu_ixgeo& g, int64_t i, int nops,
                                                      int64_t* off) {
    for (int k = 0; k < nops; k++) off[k] = 0;
    for (int d = g.ndim - 1; d >= 0; d--) {
        int64_t r;
        if (I32) {
            uint32_t n = (uint32_t)g.size[d], u = (uint32_t)i;
            uint32_t q = u / n;
            r = (int64_t)(u - q * n);
            i = q;
        } else {
            int64_t q = i / g.size[d];
            r = i - q * g.size[d];
            i = q;
        }
        for (int k = 0; k < nops; k++) off[k] += r * g.stride[k][d];
    }
}

/* ------------------------------------------------------------ atomics */

/* p[0] = f(p[0]) atomically, by compare-and-swap on the item's bits (1-byte
 * items through their aligned 32-bit word). */
template <int SIZE>
struct ecu_cas;

template <>
struct ecu_cas<8> {
    template <class T, class F>
    static __device__ __forceinline__ void apply(T* p, F f) {
        union U {
            unsigned long long u;
            T t;
        };
        unsigned long long* a = (unsigned long long*)p;
        U old, nw;
        old.u = *(volatile unsigned long long*)a;
        for (;;) {
            nw.t = f(old.t);
            unsigned long long prev = atomicCAS(a, old.u, nw.u);
            if (prev == old.u) return;
            old.u = prev;
        }
    }
};

template <>
struct ecu_cas<4> {
    template <class T, class F>
    static __device__ __forceinline__ void apply(T* p, F f) {
        union U {
            unsigned int u;
            T t;
        };
        unsigned int* a = (unsigned int*)p;
        U old, nw;
        old.u = *(volatile unsigned int*)a;
        for (;;) {
            nw.t = f(old.t);
            unsigned int prev = atomicCAS(a, old.u, nw.u);
            if (prev == old.u) return;
            old.u = prev;
        }
    }
};

template <>
struct ecu_cas<2> {
    template <class T, class F>
    static __device__ __forceinline__ void apply(T* p, F f) {
        union U {
            unsigned short u;
            T t;
        };
        unsigned short* a = (unsigned short*)p;
        U old, nw;
        old.u = *(volatile unsigned short*)a;
        for (;;) {
            nw.t = f(old.t);
            unsigned short prev = atomicCAS(a, old.u, nw.u);
            if (prev == old.u) return;
            old.u = prev;
        }
    }
};

template <>
struct ecu_cas<1> {
    template <class T, class F>
    static __device__ __forceinline__ void apply(T* p, F f) {
        union U {
            unsigned char u;
            T t;
        };
        unsigned long long addr = (unsigned long long)p;
        unsigned int* a = (unsigned int*)(addr & ~3ull);
        unsigned int shift = (unsigned int)(addr & 3ull) * 8u;
        unsigned int old = *(volatile unsigned int*)a;
        for (;;) {
            U cur, nw;
            cur.u = (unsigned char)(old >> shift);
            nw.t = f(cur.t);
            unsigned int word = (old & ~(0xffu << shift)) | ((unsigned int)nw.u << shift);
            unsigned int prev = atomicCAS(a, old, word);
            if (prev == old) return;
            old = prev;
        }
    }
};

/* Storing a compute-type result back (the dtype's EC_STORE_<sfx>). */
template <class D>
struct ecu_ix_st;
#define ECU_IX_STORE_DESC(DC, sfx, T_, C_, K)                                          \
    template <>                                                                        \
    struct ecu_ix_st<ecu_dt_##sfx> {                                                   \
        static __device__ __forceinline__ T_ store(C_ r) { return EC_STORE_##sfx(r); } \
    };
EC_ALL_DTYPES(ECU_IX_STORE_DESC)

/* The accumulating writes of index.c (REDUCE_STORE), per dtype kind. */
template <class D, int MODE>
struct ecu_ix_reduce {
    typedef typename D::T T;
    typedef typename D::C C;
    double alpha;
    int64_t ialpha;
    T v;
    __device__ __forceinline__ T operator()(T old) const {
        C a = D::load(old), b = D::load(v), r;
        if (D::kind == ECU_KIND_B)
            r = (MODE == ECU_IX_ADD || MODE == ECU_IX_MAX) ? (C)(a || b) : (C)(a && b);
        else if (MODE == ECU_IX_ADD)
            r = D::kind == ECU_KIND_I ? (C)(a + (C)(ialpha * (int64_t)b)) : (C)(a + (C)(alpha * b));
        else if (MODE == ECU_IX_MUL)
            r = (C)(a * b);
        else if (MODE == ECU_IX_MAX)
            r = (a != a || a > b) ? a : b; /* NaN propagating */
        else
            r = (a != a || a < b) ? a : b;
        return ecu_ix_st<D>::store(r);
    }
};

/* Native atomics where the hardware has them (the sums of float, double,
 * int32 and int64), compare-and-swap otherwise. */
template <class D, int MODE>
static __device__ __forceinline__ void ecu_ix_accumulate(typename D::T* p, typename D::T v,
                                                         double alpha, int64_t ialpha) {
    typedef typename D::T T;
    if (MODE == ECU_IX_ADD) {
        if (sizeof(T) == 4 && D::kind == ECU_KIND_F) {
            atomicAdd((float*)p, (float)(alpha * (double)*(float*)&v));
            return;
        }
        if (sizeof(T) == 8 && D::kind == ECU_KIND_F) {
            atomicAdd((double*)p, alpha * *(double*)&v);
            return;
        }
        if (sizeof(T) == 4 && D::kind == ECU_KIND_I) {
            atomicAdd((unsigned int*)p, (unsigned int)(ialpha * (int64_t)*(int32_t*)&v));
            return;
        }
        if (sizeof(T) == 8 && D::kind == ECU_KIND_I) {
            atomicAdd((unsigned long long*)p,
                      (unsigned long long)ialpha * (unsigned long long)*(int64_t*)&v);
            return;
        }
    }
    ecu_ix_reduce<D, MODE> f;
    f.alpha = alpha;
    f.ialpha = ialpha;
    f.v = v;
    ecu_cas<sizeof(T)>::apply(p, f);
}

/* ------------------------------------------------------------ ec_index */

template <class D, int MODE, bool I32>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_index_k(ecu_ixgeo g, char* values, char* x, double alpha, int64_t ialpha, int* err) {
    typedef typename D::T T;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    int nops = 2 + g.nidx;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.numel; i += step) {
        int64_t off[ECU_IX_OPS];
        ecu_ix_offsets<I32>(g, i, nops, off);
        int64_t xo = off[1];
        bool ok = true;
        for (int k = 0; k < g.nidx; k++) {
            int64_t v = g.idx[k][off[2 + k]], n = g.isize[k];
            int64_t w = v < 0 ? v + n : v;
            if ((uint64_t)w >= (uint64_t)n) {
                ecu_report_index(err, v, n);
                ok = false;
                break;
            }
            xo += w * g.ixst[k];
        }
        if (!ok) continue;
        T* xp = (T*)x + xo;
        T* vp = (T*)values + off[0];
        if (MODE == ECU_IX_GET)
            *vp = *xp;
        else if (MODE == ECU_IX_PUT)
            *xp = *vp;
        else
            ecu_ix_accumulate<D, MODE>(xp, *vp, alpha, ialpha);
    }
}

/* ------------------------------------------------------------- masks */

/* Note [Ordered compaction]: masked_select, masked_scatter and nonzero keep
 * the row-major order of the selected elements, so each needs every selected
 * element's rank.  One block walks the space in tiles of its size, ranks a
 * tile's flags with warp ballots and a scan of the warp counts, and carries
 * the running count to the next tile: one launch, no workspace, no
 * synchronisation with the host. */
#define ECU_COMPACT_BLOCK 1024

/* Exclusive rank of this thread's flag within the block's tile, and the
 * tile's total (every thread of the block must call it). */
static __device__ __forceinline__ int ecu_block_rank(bool flag, int* warp_counts, int* total) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned b = __ballot_sync(0xffffffffu, flag);
    int before = __popc(b & ((1u << lane) - 1u));
    if (lane == 0) warp_counts[warp] = __popc(b);
    __syncthreads();
    if (threadIdx.x == 0) {
        int s = 0, nw = (int)(blockDim.x >> 5);
        for (int w = 0; w < nw; w++) {
            int c = warp_counts[w];
            warp_counts[w] = s;
            s += c;
        }
        warp_counts[32] = s;
    }
    __syncthreads();
    int r = warp_counts[warp] + before;
    *total = warp_counts[32];
    __syncthreads(); /* the counts are rewritten by the next tile */
    return r;
}

/* masked_select (SCATTER false: out[rank] = x[i]) and masked_scatter (SCATTER
 * true: x[i] = src[rank], src holding n elements).  Operands of g: 0 x, 1 mask
 * (byte strides).  T: an unsigned type of the item's size. */
template <class T, bool SCATTER, bool I32>
__global__ void __launch_bounds__(ECU_COMPACT_BLOCK)
    ecu_masked_k(ecu_geo g, char* x, const char* mask, T* buf, int64_t n, int* err) {
    __shared__ int warp_counts[33];
    int64_t base = 0;
    for (int64_t t0 = 0; t0 < g.numel; t0 += blockDim.x) {
        int64_t i = t0 + threadIdx.x;
        int64_t off[2] = {0, 0};
        bool flag = false;
        if (i < g.numel) {
            if (I32)
                ecu_offsets32<2>(g, (uint32_t)i, off);
            else
                ecu_offsets64<2>(g, i, off);
            flag = mask[off[1]] != 0;
        }
        int total;
        int r = ecu_block_rank(flag, warp_counts, &total);
        if (flag) {
            int64_t pos = base + r;
            if (!SCATTER)
                buf[pos] = *(const T*)(x + off[0]);
            else if (pos < n)
                *(T*)(x + off[0]) = buf[pos];
            else
                ecu_report_index(err, pos, n); /* fewer source elements than mask ones */
        }
        base += total;
    }
}

#define ECU_NZ_MAX_DIMS 64 /* EC_MAX_DIMS */

/* nonzero's geometry: x's shape and element strides, undropped (coordinates
 * are written in the tensor's own dims). */
struct ecu_nzgeo {
    int32_t ndim, pad;
    int64_t numel;
    int64_t shape[ECU_NZ_MAX_DIMS];
    int64_t stride[ECU_NZ_MAX_DIMS];
};

template <class D>
__global__ void __launch_bounds__(ECU_COMPACT_BLOCK)
    ecu_nonzero_k(ecu_nzgeo g, int64_t* out, int64_t st_n, int64_t st_d, const char* x, int64_t n,
                  int* err) {
    typedef typename D::T T;
    __shared__ int warp_counts[33];
    int64_t base = 0;
    for (int64_t t0 = 0; t0 < g.numel; t0 += blockDim.x) {
        int64_t i = t0 + threadIdx.x;
        int64_t xo = 0;
        bool flag = false;
        if (i < g.numel) {
            int64_t rem = i;
            for (int d = g.ndim - 1; d >= 0; d--) {
                int64_t q = rem / g.shape[d];
                xo += (rem - q * g.shape[d]) * g.stride[d];
                rem = q;
            }
            flag = D::load(((const T*)x)[xo]) != 0;
        }
        int total;
        int r = ecu_block_rank(flag, warp_counts, &total);
        if (flag) {
            int64_t pos = base + r;
            if (pos < n) {
                int64_t rem = i;
                for (int d = g.ndim - 1; d >= 0; d--) {
                    int64_t q = rem / g.shape[d];
                    out[pos * st_n + d * st_d] = rem - q * g.shape[d];
                    rem = q;
                }
            } else {
                ecu_report_index(err, pos, n); /* the tensor changed since it was counted */
            }
        }
        base += total;
    }
}

#endif
