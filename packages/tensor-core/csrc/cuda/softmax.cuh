/* softmax and log_softmax on CUDA, forward and backward (the ops of
 * csrc/cpu/nn/softmax.c), over the middle dim of x viewed as (outer, dim, inner),
 * contiguous, in float32 or float64 (Note [nn kernel dtypes]).
 *
 * Forward keeps an online maximum and sum (m, s) -- exp(m) * s is the sum of
 * exp(x) so far -- so each row is read twice (the second time from L2 for
 * rows that fit) and written once.  Results follow the CPU kernel's: a NaN or
 * an infinite maximum makes the row NaN, a row of -inf is NaN.
 *
 * Names the launcher asks for (ember_core/_cuda/kernels.py):
 * ecu_softmax_rows<float, false>, ecu_softmax_cols<double, true>, ... */
#ifndef EMBER_CUDA_SOFTMAX_CUH
#define EMBER_CUDA_SOFTMAX_CUH

template <class T>
struct ecu_ms {
    T m, s;
};

/* exp(m) * s gains x (a -inf adds nothing; a NaN makes s NaN). */
template <class T>
static __device__ __forceinline__ void ecu_ms_fold(ecu_ms<T>& a, T x) {
    if (x > a.m) {
        a.s = (a.s == (T)0 ? (T)0 : a.s * exp(a.m - x)) + (T)1;
        a.m = x;
    } else if (x != -(T)INFINITY) {
        a.s += exp(x - a.m);
    }
}

template <class T>
static __device__ __forceinline__ ecu_ms<T> ecu_ms_merge(ecu_ms<T> a, ecu_ms<T> b) {
    ecu_ms<T> r;
    r.m = a.m > b.m ? a.m : b.m;
    r.s = (a.s == (T)0 ? (T)0 : a.s * exp(a.m - r.m)) + (b.s == (T)0 ? (T)0 : b.s * exp(b.m - r.m));
    return r;
}

template <class T>
static __device__ __forceinline__ ecu_ms<T> ecu_ms_shfl(ecu_ms<T> a, int d) {
    ecu_ms<T> r;
    r.m = __shfl_xor_sync(0xffffffffu, a.m, d);
    r.s = __shfl_xor_sync(0xffffffffu, a.s, d);
    return r;
}

extern __shared__ __align__(16) unsigned char ecu_sm_smem[];

/* Sum (backward) or (m, s) (forward) of the lanes of block row threadIdx.y,
 * in every lane of the row.  blockDim.x is a multiple of 32. */
template <class V, class Merge>
static __device__ __forceinline__ V ecu_row_allreduce(V v, Merge merge, V* part) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = merge(v, merge.shfl(v, d));
    const int wpr = blockDim.x >> 5;
    if (wpr > 1) {
        const int w = threadIdx.x >> 5;
        if ((threadIdx.x & 31) == 0) part[threadIdx.y * wpr + w] = v;
        __syncthreads();
        v = part[threadIdx.y * wpr];
        for (int k = 1; k < wpr; k++) v = merge(v, part[threadIdx.y * wpr + k]);
    }
    return v;
}

template <class T>
struct ecu_ms_merger {
    __device__ __forceinline__ ecu_ms<T> operator()(ecu_ms<T> a, ecu_ms<T> b) const {
        return ecu_ms_merge(a, b);
    }
    __device__ __forceinline__ ecu_ms<T> shfl(ecu_ms<T> a, int d) const { return ecu_ms_shfl(a, d); }
};

template <class T>
struct ecu_sum_merger {
    __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
    __device__ __forceinline__ T shfl(T a, int d) const { return __shfl_xor_sync(0xffffffffu, a, d); }
};

/* The row's (m, s) finished: an infinite maximum makes the sum NaN, as the
 * CPU's sum of exp(x - m) has exp(inf - inf) in it. */
template <class T>
static __device__ __forceinline__ ecu_ms<T> ecu_ms_final(ecu_ms<T> a) {
    if (a.m == (T)INFINITY) a.s = (T)NAN;
    return a;
}

/* Rows (inner == 1): lanes threadIdx.x of block row threadIdx.y handle row
 * blockIdx.x * blockDim.y + threadIdx.y.  Forward: y = softmax(x); backward
 * (BWD): y is grad_in, x the gradient, z the forward output. */
template <class T, bool BWD>
__global__ void __launch_bounds__(512)
    ecu_softmax_rows(int64_t rows, int64_t n, T* y, const T* x, const T* z, int is_log) {
    enum { VEC = 16 / sizeof(T) };
    typedef ecu_vec<T, VEC> V;
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const int bx = blockDim.x, tx = threadIdx.x;
    const bool live = row < rows;
    const T* xr = x + (live ? row : 0) * n;
    const T* zr = BWD ? z + (live ? row : 0) * n : (const T*)0;
    T* yr = y + (live ? row : 0) * n;
    /* vector loads when every row pointer is 16-byte aligned */
    const bool vec = (n % VEC) == 0 &&
                     (((unsigned long long)xr | (unsigned long long)yr |
                       (BWD ? (unsigned long long)zr : 0ull)) & 15ull) == 0;
    const int64_t nv = vec ? n / VEC : 0;
    if (!BWD) {
        ecu_ms<T> a;
        a.m = -(T)INFINITY;
        a.s = 0;
        if (live) {
            for (int64_t v = tx; v < nv; v += bx) {
                V xv = reinterpret_cast<const V*>(xr)[v];
#pragma unroll
                for (int k = 0; k < VEC; k++) ecu_ms_fold(a, xv.v[k]);
            }
            for (int64_t i = nv * VEC + tx; i < n; i += bx) ecu_ms_fold(a, xr[i]);
        }
        a = ecu_ms_final(ecu_row_allreduce(a, ecu_ms_merger<T>(),
                                           reinterpret_cast<ecu_ms<T>*>(ecu_sm_smem)));
        if (!live) return;
        if (is_log) {
            const T ls = log(a.s);
            for (int64_t v = tx; v < nv; v += bx) {
                V xv = reinterpret_cast<const V*>(xr)[v];
#pragma unroll
                for (int k = 0; k < VEC; k++) xv.v[k] = (xv.v[k] - a.m) - ls;
                reinterpret_cast<V*>(yr)[v] = xv;
            }
            for (int64_t i = nv * VEC + tx; i < n; i += bx) yr[i] = (xr[i] - a.m) - ls;
        } else {
            const T inv = (T)1 / a.s;
            for (int64_t v = tx; v < nv; v += bx) {
                V xv = reinterpret_cast<const V*>(xr)[v];
#pragma unroll
                for (int k = 0; k < VEC; k++) xv.v[k] = exp(xv.v[k] - a.m) * inv;
                reinterpret_cast<V*>(yr)[v] = xv;
            }
            for (int64_t i = nv * VEC + tx; i < n; i += bx) yr[i] = exp(xr[i] - a.m) * inv;
        }
    } else {
        /* softmax: gi = z * (g - sum(g * z)); log_softmax: gi = g - exp(z) * sum(g) */
        T s = 0;
        if (live) {
            for (int64_t v = tx; v < nv; v += bx) {
                V gv = reinterpret_cast<const V*>(xr)[v], zv = reinterpret_cast<const V*>(zr)[v];
#pragma unroll
                for (int k = 0; k < VEC; k++) s += is_log ? gv.v[k] : gv.v[k] * zv.v[k];
            }
            for (int64_t i = nv * VEC + tx; i < n; i += bx) s += is_log ? xr[i] : xr[i] * zr[i];
        }
        s = ecu_row_allreduce(s, ecu_sum_merger<T>(), reinterpret_cast<T*>(ecu_sm_smem));
        if (!live) return;
        for (int64_t v = tx; v < nv; v += bx) {
            V gv = reinterpret_cast<const V*>(xr)[v], zv = reinterpret_cast<const V*>(zr)[v];
#pragma unroll
            for (int k = 0; k < VEC; k++)
                gv.v[k] = is_log ? gv.v[k] - exp(zv.v[k]) * s : zv.v[k] * (gv.v[k] - s);
            reinterpret_cast<V*>(yr)[v] = gv;
        }
        for (int64_t i = nv * VEC + tx; i < n; i += bx)
            yr[i] = is_log ? xr[i] - exp(zr[i]) * s : zr[i] * (xr[i] - s);
    }
}

/* Columns (inner > 1): thread (threadIdx.x, threadIdx.y) of block b handles
 * inner position (b % nib) * blockDim.x + threadIdx.x of slab b / nib, with
 * the blockDim.y threads of its column splitting the softmax dim. */
template <class T, bool BWD>
__global__ void __launch_bounds__(256) ecu_softmax_cols(int64_t outer, int64_t n, int64_t inner,
                                                        T* y, const T* x, const T* z, int is_log) {
    const int64_t nib = (inner + blockDim.x - 1) / blockDim.x;
    const int64_t slab = blockIdx.x / nib;
    const int64_t col = (blockIdx.x % nib) * blockDim.x + threadIdx.x;
    const int ty = threadIdx.y, by = blockDim.y;
    const bool live = slab < outer && col < inner;
    const int64_t base = live ? slab * n * inner + col : 0;
    const T* xc = x + base;
    const T* zc = BWD ? z + base : (const T*)0;
    T* yc = y + base;
    if (!BWD) {
        ecu_ms<T> a;
        a.m = -(T)INFINITY;
        a.s = 0;
        if (live)
            for (int64_t d = ty; d < n; d += by) ecu_ms_fold(a, xc[d * inner]);
        ecu_ms<T>* part = reinterpret_cast<ecu_ms<T>*>(ecu_sm_smem);
        part[ty * blockDim.x + threadIdx.x] = a;
        __syncthreads();
        a = part[threadIdx.x];
        for (int k = 1; k < by; k++) a = ecu_ms_merge(a, part[k * blockDim.x + threadIdx.x]);
        a = ecu_ms_final(a);
        if (!live) return;
        if (is_log) {
            const T ls = log(a.s);
            for (int64_t d = ty; d < n; d += by) yc[d * inner] = (xc[d * inner] - a.m) - ls;
        } else {
            const T inv = (T)1 / a.s;
            for (int64_t d = ty; d < n; d += by) yc[d * inner] = exp(xc[d * inner] - a.m) * inv;
        }
    } else {
        T s = 0;
        if (live)
            for (int64_t d = ty; d < n; d += by)
                s += is_log ? xc[d * inner] : xc[d * inner] * zc[d * inner];
        T* part = reinterpret_cast<T*>(ecu_sm_smem);
        part[ty * blockDim.x + threadIdx.x] = s;
        __syncthreads();
        s = part[threadIdx.x];
        for (int k = 1; k < by; k++) s += part[k * blockDim.x + threadIdx.x];
        if (!live) return;
        for (int64_t d = ty; d < n; d += by) {
            T g = xc[d * inner], o = zc[d * inner];
            yc[d * inner] = is_log ? g - exp(o) * s : o * (g - s);
        }
    }
}

#endif
