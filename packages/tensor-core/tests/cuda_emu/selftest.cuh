/* Kernels that exercise the CUDA primitives the emulator implements (shared
 * memory, barriers, warp collectives, atomics, launch limits), for
 * tests/test_cuda_emu.py: they run under the emulator and, compiled by NVRTC,
 * on a GPU, with the same expected results.  Not part of ember. */
#ifndef EMBER_CUDA_EMU_SELFTEST_CUH
#define EMBER_CUDA_EMU_SELFTEST_CUH

/* Sum of each block's BLOCK elements: shuffles within warps, the warps'
 * partial sums through static shared memory, then one warp. */
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) st_block_sum(const float* x, float* out, int n) {
    __shared__ float partial[32];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) partial[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < BLOCK / 32 ? partial[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

/* Inclusive scan of each block (Hillis-Steele, double-buffered in dynamic
 * shared memory: 2 * blockDim.x ints). */
__global__ void st_block_scan(const int* x, int* out, int n) {
    extern __shared__ int buf[];
    int t = threadIdx.x, nb = blockDim.x, i = blockIdx.x * nb + t;
    int cur = 0;
    buf[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int off = 1; off < nb; off <<= 1) {
        int v = buf[cur * nb + t];
        if (t >= off) v += buf[cur * nb + t - off];
        buf[(1 - cur) * nb + t] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    if (i < n) out[i] = buf[cur * nb + t];
}

/* Warp collectives: each thread writes ST_WARP_OUT results. */
#define ST_WARP_OUT 16
__global__ void st_warp_ops(const int* x, long long* out) {
    int t = threadIdx.x, lane = t & 31;
    int v = x[blockIdx.x * blockDim.x + t];
    long long* o = out + (long long)(blockIdx.x * blockDim.x + t) * ST_WARP_OUT;
    o[0] = __shfl_sync(0xffffffffu, v, 3, 8);
    o[1] = __shfl_up_sync(0xffffffffu, v, 3, 16);
    o[2] = __shfl_down_sync(0xffffffffu, v, 2, 8);
    o[3] = __shfl_xor_sync(0xffffffffu, v, 5);
    o[4] = __shfl_xor_sync(0xffffffffu, v, 12, 8);
    o[5] = __ballot_sync(0xffffffffu, v % 3 == 0);
    o[6] = __any_sync(0xffffffffu, v > 90) * 2 + __all_sync(0xffffffffu, v >= 0);
    o[7] = __match_any_sync(0xffffffffu, v % 4);
    o[8] = __reduce_add_sync(0xffffffffu, (unsigned)v);
    double d = (double)v + 0.25;
    o[9] = (long long)(__shfl_sync(0xffffffffu, d, 31 - lane) * 4.0);
    long long big = (long long)v << 40;
    o[10] = __shfl_down_sync(0xffffffffu, big, 1) >> 40;
    unsigned m = 0;
    if (lane < 20) {
        m = __activemask();
        o[11] = __shfl_sync(m, v, 19);
    } else {
        o[11] = -1;
    }
    o[12] = m;
    __syncwarp();
    o[13] = __popc((unsigned)v) + 100 * __clz(v) + 10000 * __ffs(v);
    o[14] = __brev((unsigned)v) >> 16;
    o[15] = __shfl_sync(0x0000ffffu << (lane & 16), v, lane ^ 1, 32);
}

/* Atomics: a histogram, float and 64-bit sums, max, a lock in shared
 * memory that serialises a non-atomic update, __syncthreads_count/and/or. */
__global__ void st_atomics(const int* x, int n, int* hist, float* fsum, unsigned long long* usum,
                           int* vmax, int* counts) {
    __shared__ int lock;
    __shared__ int guarded;
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t == 0) {
        lock = 0;
        guarded = 0;
    }
    __syncthreads();
    int v = i < n ? x[i] : 0;
    if (i < n) {
        atomicAdd(&hist[v & 15], 1);
        atomicAdd(fsum, (float)(v & 7));
        atomicAdd(usum, (unsigned long long)v);
        atomicMax(vmax, v);
    }
    /* one thread of each warp at a time (lanes of one warp contend for the
     * same lock would livelock on pre-Volta hardware) */
    if ((t & 31) == 0) {
        while (atomicCAS(&lock, 0, 1) != 0) {
        }
        guarded += 1;
        __threadfence_block();
        atomicExch(&lock, 0);
    }
    int c = __syncthreads_count(v & 1);
    int a = __syncthreads_and(v >= 0);
    int o = __syncthreads_or(v == 7);
    if (t == 0) {
        counts[blockIdx.x * 4 + 0] = c;
        counts[blockIdx.x * 4 + 1] = a;
        counts[blockIdx.x * 4 + 2] = o;
        counts[blockIdx.x * 4 + 3] = guarded;
    }
}

/* Math and integer intrinsics, double/min/inc atomics, __ldg. */
#define ST_MATH_OUT 8
#define ST_INT_OUT 6
__global__ void st_intrinsics(const float* x, const unsigned* u, int n, float* fo, unsigned* uo,
                              double* dsum, int* imin, unsigned* inc) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = __ldg(&x[i]);
    float* f = fo + (long long)i * ST_MATH_OUT;
    f[0] = __expf(v);
    f[1] = rsqrtf(fabsf(v) + 1.0f);
    f[2] = __fdividef(v, 3.0f);
    f[3] = erff(v);
    f[4] = fmaxf(v, 0.0f) + fminf(v, -1.0f);
    f[5] = __saturatef(v);
    f[6] = (float)__float2int_rn(v * 1e9f);
    f[7] = (float)__float2ll_rz(v * 4.5f) + floorf(v) + sqrtf(fabsf(v));
    unsigned a = u[2 * i], b = u[2 * i + 1];
    unsigned* o = uo + (long long)i * ST_INT_OUT;
    o[0] = __umulhi(a, b);
    o[1] = __byte_perm(a, b, 0x5140u + (unsigned)(i & 7));
    o[2] = __funnelshift_l(a, b, b & 63u);
    o[3] = __funnelshift_rc(a, b, b & 63u);
    o[4] = (unsigned)__mulhi((int)a, (int)b);
    o[5] = (unsigned)__popcll(((unsigned long long)a << 32) | b) + 100u * __clzll((long long)b);
    atomicAdd(dsum, (double)v);
    atomicMin(imin, (int)(v * 100.0f));
    atomicInc(inc, 6u);
}

/* Report an index error through ember's device-side error word (Note
 * [Device-side errors] in csrc/cuda/runtime.c). */
__global__ void st_report(int* word, long long index, long long size) {
    if (blockIdx.x == 0 && threadIdx.x == 3 && atomicCAS(word, 0, EC_ERR_INDEX) == 0) {
        long long* w = reinterpret_cast<long long*>(word);
        w[1] = index;
        w[2] = size;
    }
}

/* --- kernels that misbehave (each fails a launch under the emulator) --- */

/* Writes far past the end of x (4 MiB on: beyond any small allocation). */
__global__ void st_out_of_bounds(float* x, long long n) { x[n + (1 << 20)] = 1.0f; }

/* Half the warp exits, the other half shuffles with all 32 lanes. */
__global__ void st_shfl_after_exit(int* out) {
    if (threadIdx.x >= 16) return;
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
}

/* Lanes 0-15 wait at __syncthreads, lanes 16-31 in a shuffle for them. */
__global__ void st_deadlock(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x < 16) {
        __syncthreads();
    } else {
        v = __shfl_sync(0xffffffffu, v, 0);
    }
    out[threadIdx.x] = v;
}

/* Integer division by a zero read from memory. */
__global__ void st_divide(const int* a, const int* b, int* out) {
    out[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x];
}

/* Uses `smem` bytes of dynamic shared memory (launch-limit tests). */
__global__ void __launch_bounds__(128) st_smem(unsigned char* out, int smem) {
    extern __shared__ unsigned char dyn[];
    for (int i = threadIdx.x; i < smem; i += blockDim.x) dyn[i] = (unsigned char)i;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = dyn[smem - 1];
}

#endif
