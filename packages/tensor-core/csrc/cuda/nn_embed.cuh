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

#endif
