/* Embedding on CUDA (ec_embedding, ec_embedding_backward of embedding.c):
 * the row gather moves items of any dtype by size (E: an unsigned type of the
 * item size); the backward adds each gradient row into its table row with
 * atomics (rows of padding_idx get nothing), so its sums are not in a fixed
 * order, as on PyTorch's GPUs.  An index out of [0, num) is reported through
 * the device's error word. */
#ifndef EMBER_CUDA_NN_EMBED_CUH
#define EMBER_CUDA_NN_EMBED_CUH

static __device__ __forceinline__ int64_t ecu_emb_idx(const void* idx, int i32, int64_t k) {
    return i32 ? (int64_t)((const int32_t*)idx)[k] : ((const int64_t*)idx)[k];
}

template <class E>
__global__ void ecu_embedding_k(int64_t num, int64_t dim, E* out, const E* w, int64_t w_rs,
                                const void* idx, int i32, int64_t n, int32_t* err) {
    const int64_t total = n * dim, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        int64_t k = e / dim, j = e - k * dim;
        int64_t r = ecu_emb_idx(idx, i32, k);
        if (r < 0 || r >= num) {
            if (j == 0) ecu_nn_index_error(err, r, num);
            out[e] = 0;
            continue;
        }
        out[e] = w[r * w_rs + j];
    }
}

/* grad_weight (zeroed by the launcher)[idx[k]] += grad[k] (atomics). */
template <class T>
__global__ void ecu_embedding_bwd_k(int64_t num, int64_t dim, T* gw, const T* g, const void* idx,
                                    int i32, int64_t n, int64_t padding_idx, int32_t* err) {
    const int64_t total = n * dim, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        int64_t k = e / dim, j = e - k * dim;
        int64_t r = ecu_emb_idx(idx, i32, k);
        if (r < 0 || r >= num) {
            if (j == 0) ecu_nn_index_error(err, r, num);
            continue;
        }
        if (r == padding_idx) continue;
        atomicAdd(gw + r * dim + j, g[e]);
    }
}

/* A bad value (offsets) for the host to raise at the next synchronisation. */
static __device__ __forceinline__ void ecu_nn_value_error(int32_t* err, int64_t a, int64_t b) {
    if (err && atomicCAS(err, 0, (int32_t)EC_ERR_VALUE) == 0) {
        ((volatile int64_t*)err)[1] = a;
        ((volatile int64_t*)err)[2] = b;
    }
}

/* Bags: thread (b, j) sums (or takes the max of) column j of bag b's rows
 * (embedding.c's BAG_FWD, the same order); column 0's thread also writes the
 * bag's size and offset2bag.  Bad indices and offsets are reported. */
template <class T>
__global__ void ecu_embedding_bag_k(int64_t num, int64_t dim, int mode, T* out, int64_t* o2b,
                                    int64_t* bs, int64_t* mi, const T* w, int64_t w_rs,
                                    const int64_t* idx, int64_t n, const int64_t* off,
                                    int64_t bags, const T* ps, int64_t padding_idx,
                                    int32_t* err) {
    /* with dim 0 one thread per bag still writes the sizes and offset2bag */
    const int64_t cols = dim ? dim : 1;
    const int64_t total = bags * cols, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        int64_t b = e / cols, j = e - b * cols;
        int64_t lo = off[b], hi = b + 1 < bags ? off[b + 1] : n;
        if ((b == 0 && lo != 0) || lo > n || hi < lo || hi > n) {
            if (j == 0) ecu_nn_value_error(err, b, lo);
            if (dim) out[e] = 0;
            if (dim && mode == 2) mi[e] = -1;
            if (j == 0) bs[b] = 0;
            continue;
        }
        T acc = 0;
        int64_t best = -1, cnt = 0;
        for (int64_t k = lo; k < hi; k++) {
            int64_t r = idx[k];
            if (j == 0) o2b[k] = b;
            if (r < 0 || r >= num) {
                if (j == 0) ecu_nn_index_error(err, r, num);
                continue;
            }
            if (r == padding_idx) continue;
            cnt++;
            if (!dim) continue;
            T v = w[r * w_rs + j];
            if (mode == 2) {
                if (best < 0 || v > acc) acc = v, best = r;
            } else {
                acc += v * (ps ? ps[k] : (T)1);
            }
        }
        if (mode == 1 && cnt > 0) acc *= (T)1 / (T)cnt;
        if (dim) out[e] = acc;
        if (dim && mode == 2) mi[e] = best;
        if (j == 0) bs[b] = cnt;
    }
}

/* Backward: grad_weight (zeroed by the launcher) += each row's share, with
 * atomics: mode 2 through max_idx (a thread per (bag, column)), else a thread
 * per (index, column). */
template <class T>
__global__ void ecu_embedding_bag_bwd_k(int64_t num, int64_t dim, int mode, T* gw, const T* g,
                                        const int64_t* idx, int64_t n, const int64_t* o2b,
                                        const int64_t* bs, const int64_t* mi, int64_t bags,
                                        const T* ps, int64_t padding_idx, int32_t* err) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t total = (mode == 2 ? bags : n) * dim;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        int64_t j = e % dim;
        if (mode == 2) {
            int64_t r = mi[e];
            if (r >= num) ecu_nn_index_error(err, r, num);
            else if (r >= 0) atomicAdd(gw + r * dim + j, g[e]);
            continue;
        }
        int64_t k = e / dim, r = idx[k], b = o2b[k];
        if (r < 0 || r >= num || b >= bags) {
            if (j == 0) ecu_nn_index_error(err, r < 0 || r >= num ? r : b, r < 0 || r >= num ? num : bags);
            continue;
        }
        if (r == padding_idx || b < 0) continue;
        T sc = mode == 1 ? (T)1 / (T)bs[b] : (ps ? ps[k] : (T)1);
        atomicAdd(gw + r * dim + j, g[b * dim + j] * sc);
    }
}

/* grad of the per-sample weights: <grad[bag of k], weight[idx[k]]> (double). */
template <class T>
__global__ void ecu_embedding_bag_psw_k(int64_t num, int64_t dim, T* gp, const T* g, const T* w,
                                        int64_t w_rs, const int64_t* idx, int64_t n,
                                        const int64_t* o2b, int64_t padding_idx) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += step) {
        int64_t r = idx[k], b = o2b[k];
        double acc = 0;
        if (b >= 0 && r != padding_idx && r >= 0 && r < num)
            for (int64_t j = 0; j < dim; j++) acc += (double)g[b * dim + j] * (double)w[r * w_rs + j];
        gp[k] = (T)acc;
    }
}

/* max_norm: block k renormalises row idx[k] unless an earlier index names
 * the same row (each distinct row once, as the CPU; the scan is O(n) per
 * block, fine for the batch-sized index lists this sees). */
template <class T>
__global__ void ecu_embedding_renorm_k(int64_t num, int64_t dim, T* w, int64_t w_rs,
                                       const void* idx, int i32, int64_t n, double max_norm,
                                       double norm_type, int32_t* err) {
    const int64_t k = blockIdx.x;
    const int64_t r = ecu_emb_idx(idx, i32, k);
    if (r < 0 || r >= num) {
        if (threadIdx.x == 0) ecu_nn_index_error(err, r, num);
        return;
    }
    __shared__ int dup;
    if (threadIdx.x == 0) dup = 0;
    __syncthreads();
    for (int64_t q = threadIdx.x; q < k; q += blockDim.x)
        if (ecu_emb_idx(idx, i32, q) == r) dup = 1;
    __syncthreads();
    if (dup) return;
    T* row = w + r * w_rs;
    const bool inf = norm_type == (double)INFINITY;
    double acc = 0;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
        double v = fabs((double)row[j]);
        if (inf) acc = v > acc ? v : acc;
        else if (norm_type == 1) acc += v;
        else if (norm_type == 2) acc += v * v;
        else if (norm_type == 0) acc += v != 0;
        else acc += pow(v, norm_type);
    }
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    double norm;
    if (inf) {
        /* max over the block (the warp max, then the warps in order) */
        for (int d = 16; d > 0; d >>= 1) {
            double o = __shfl_xor_sync(0xffffffffu, acc, d);
            acc = o > acc ? o : acc;
        }
        __syncthreads();
        if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
        __syncthreads();
        norm = part[0];
        for (int q = 1; q < (int)(blockDim.x + 31) / 32; q++) norm = part[q] > norm ? part[q] : norm;
    } else {
        norm = ecu_nn_block_sum(acc, part);
        if (norm_type == 2) norm = sqrt(norm);
        else if (norm_type != 1 && norm_type != 0) norm = pow(norm, 1.0 / norm_type);
    }
    if (norm > max_norm) {
        double scale = max_norm / (norm + 1e-7);
        for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) row[j] = (T)((double)row[j] * scale);
    }
}

#endif
