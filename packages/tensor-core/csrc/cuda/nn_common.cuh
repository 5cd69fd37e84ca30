/* Device helpers shared by ember's nn kernels on CUDA (nn_*.cuh): block-wide
 * sums in a fixed order (so a loss or a statistic is the same from run to
 * run), and the report of a bad index through the device's error word (Note
 * [Device-side errors] in runtime.c). */
#ifndef EMBER_CUDA_NN_COMMON_CUH
#define EMBER_CUDA_NN_COMMON_CUH

/* Sum of v over the whole block, returned to every thread.  `part` holds one
 * slot per warp (32 slots cover 1024 threads); the warps' sums are added in
 * warp order, so the result does not depend on timing. */
template <class A>
static __device__ __forceinline__ A ecu_nn_block_sum(A v, A* part) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    const int tid = threadIdx.x + threadIdx.y * blockDim.x;
    const int nw = (blockDim.x * blockDim.y + 31) >> 5;
    __syncthreads(); /* the slots may still be read by a previous call */
    if ((tid & 31) == 0) part[tid >> 5] = v;
    __syncthreads();
    A r = 0;
    for (int k = 0; k < nw; k++) r += part[k];
    return r;
}

/* Sum (or max) of v over the lanes of block row threadIdx.y (blockDim.x a
 * multiple of 32), in every lane of the row; `part` holds blockDim.y *
 * blockDim.x / 32 slots.  Every thread of the block must call it. */
template <class A, bool MAX>
static __device__ __forceinline__ A ecu_nn_row_reduce(A v, A* part) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        A o = __shfl_xor_sync(0xffffffffu, v, d);
        v = MAX ? (o > v || o != o ? o : v) : v + o;
    }
    const int wpr = blockDim.x >> 5;
    if (wpr > 1) {
        __syncthreads();
        if ((threadIdx.x & 31) == 0) part[threadIdx.y * wpr + (threadIdx.x >> 5)] = v;
        __syncthreads();
        v = part[threadIdx.y * wpr];
        for (int k = 1; k < wpr; k++) {
            A o = part[threadIdx.y * wpr + k];
            v = MAX ? (o > v || o != o ? o : v) : v + o;
        }
    }
    return v;
}

/* An index out of [0, size): the first report wins (the host raises it at
 * the next synchronisation). */
static __device__ __forceinline__ void ecu_nn_index_error(int32_t* err, int64_t index,
                                                          int64_t size) {
    if (err && atomicCAS(err, 0, (int32_t)EC_ERR_INDEX) == 0) {
        ((volatile int64_t*)err)[1] = index;
        ((volatile int64_t*)err)[2] = size;
    }
}

extern __shared__ __align__(16) unsigned char ecu_nn_smem[];

#endif
