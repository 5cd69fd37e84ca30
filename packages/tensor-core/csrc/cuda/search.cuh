/* Binary search and counting on CUDA: searchsorted (and bucketize), bincount
 * and histc.  Launchers: cuda/sort_launch.c, with sort.c's parameters.  Needs
 * prelude.cuh, ember_codes.h, dtype_lists.h, store.cuh and indexing.cuh (the
 * error word). */
#ifndef EMBER_CUDA_SEARCH_CUH
#define EMBER_CUDA_SEARCH_CUH

/* One thread per value: PyTorch's predicates (sort.c's BSEARCH), compared in
 * the dtype's compute type (exact for every dtype, as sort.c's double/int64).
 * A sorter entry out of range is reported through the error word. */
template <class D>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_searchsorted_k(int64_t rows, int64_t nseq, const char* seq, int64_t seq_rs, int64_t nval,
                       const char* vals, char* out, int out_int32, int right,
                       const int64_t* sorter, int64_t sorter_rs, int* err) {
    typedef typename D::T T;
    typedef typename D::C C;
    int64_t total = rows * nval, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        int64_t r = i / nval;
        const T* s = (const T*)seq + r * seq_rs;
        const int64_t* sp = sorter ? sorter + r * sorter_rs : 0;
        C val = D::load(((const T*)vals)[i]);
        int64_t lo = 0, hi = nseq;
        while (lo < hi) {
            int64_t mid = lo + ((hi - lo) >> 1);
            int64_t at = sp ? sp[mid] : mid;
            if (sp && (at < 0 || at >= nseq)) {
                ecu_report_index(err, at, nseq);
                break;
            }
            C sv = D::load(s[at]);
            bool go_right = right ? !(val < sv) : !(val <= sv);
            if (go_right)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (out_int32)
            ((int32_t*)out)[i] = (int32_t)lo;
        else
            ((int64_t*)out)[i] = lo;
    }
}

/* bincount: out (zeroed) += 1 or the weight, atomically.  OUT: the output's
 * dtype descriptor (int64 counts, float32 or float64 sums); W: the weights'. */
template <class OUT, class W>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_bincount_k(int64_t n, const int64_t* x, const char* w, char* out, int64_t nbins) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t b = x[i];
        if (b < 0 || b >= nbins) continue; /* checked by the caller */
        if (!w) {
            atomicAdd((unsigned long long*)out + b, 1ull);
            continue;
        }
        double v = (double)W::load(((const typename W::T*)w)[i]);
        if (sizeof(typename OUT::T) == 4)
            atomicAdd((float*)out + b, (float)v);
        else
            atomicAdd((double*)out + b, v);
    }
}

/* The bin of v (sort.c's ec_histc), or -1 outside [lo, hi] (NaN too). */
static __device__ __forceinline__ int64_t ecu_histc_bin(double v, int64_t bins, double lo,
                                                        double hi) {
    if (!(v >= lo && v <= hi)) return -1;
    int64_t b = (int64_t)((v - lo) * (double)bins / (hi - lo));
    return b >= bins ? bins - 1 : b;
}

/* histc of float32/float64: atomic increments of out (zeroed), exact below
 * 2**24 (float32) elements per bin. */
template <class D>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_histc_k(int64_t n, const char* x, char* out, int64_t bins, double lo, double hi) {
    typedef typename D::T T;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t b = ecu_histc_bin((double)D::load(((const T*)x)[i]), bins, lo, hi);
        if (b < 0) continue;
        if (sizeof(T) == 4)
            atomicAdd((float*)out + b, 1.0f);
        else
            atomicAdd((double*)out + b, 1.0);
    }
}

/* histc of float16/bfloat16, whose sums of ones are inexact early: one block
 * counts a chunk of bins in shared memory at a time and stores each count
 * rounded once, as the CPU does. */
#define ECU_HISTC_CHUNK 4096
template <class D>
__global__ void __launch_bounds__(1024)
    ecu_histc_small_k(int64_t n, const char* x, char* out, int64_t bins, double lo, double hi,
                      int dtype) {
    typedef typename D::T T;
    __shared__ unsigned int counts[ECU_HISTC_CHUNK];
    for (int64_t b0 = 0; b0 < bins; b0 += ECU_HISTC_CHUNK) {
        for (int t = threadIdx.x; t < ECU_HISTC_CHUNK; t += blockDim.x) counts[t] = 0;
        __syncthreads();
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            int64_t b = ecu_histc_bin((double)D::load(((const T*)x)[i]), bins, lo, hi) - b0;
            if (b >= 0 && b < ECU_HISTC_CHUNK) atomicAdd(&counts[b], 1u);
        }
        __syncthreads();
        for (int t = threadIdx.x; t < ECU_HISTC_CHUNK && b0 + t < bins; t += blockDim.x)
            ecu_store_f(dtype, out + (b0 + t) * (int64_t)sizeof(T), (double)counts[t]);
        __syncthreads();
    }
}

#endif
