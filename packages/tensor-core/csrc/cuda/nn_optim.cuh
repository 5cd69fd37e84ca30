/* Multi-tensor optimizer steps on CUDA (Note [Multi-tensor launches] in
 * nn_launch.c): one launch updates up to ECU_MT_TENSORS parameters, each
 * block one chunk of ECU_MT_CHUNK elements of one tensor, as PyTorch's
 * foreach/fused kernels do.  The arithmetic is ember_nn's fused CPU steps'
 * (packages/nn/csrc/optim.c), operation for operation, in the parameters'
 * dtype; per-tensor scalars (Adam's step size and bias correction, SGD's
 * first-step flag) are computed on the host, where the step counters live.
 * GradScaler's check uses the same launches (nn_amp.cuh). */
#ifndef EMBER_CUDA_NN_OPTIM_CUH
#define EMBER_CUDA_NN_OPTIM_CUH

#define ECU_MT_TENSORS 24
#define ECU_MT_BLOCKS 192
#define ECU_MT_CHUNK 16384
#define ECU_MT_LISTS 5

/* The tensors of one launch (passed by value; the host twin is in
 * nn_launch.c): list k's pointer for tensor t is ptr[k][t]; block b works on
 * chunk chunk[b] of tensor tensor[b]. */
struct ecu_mt {
    uint64_t ptr[ECU_MT_LISTS][ECU_MT_TENSORS];
    int64_t numel[ECU_MT_TENSORS];
    double s0[ECU_MT_TENSORS], s1[ECU_MT_TENSORS];
    int32_t chunk[ECU_MT_BLOCKS];
    uint8_t tensor[ECU_MT_BLOCKS];
};

struct ecu_mt_hyper {
    double lr, beta1, beta2, eps, weight_decay, momentum, dampening;
    int32_t amsgrad, maximize, decoupled, nesterov;
};

#define ECU_MT_LOOP(L)                                                             \
    const int t = L.tensor[blockIdx.x];                                            \
    const int64_t begin = (int64_t)L.chunk[blockIdx.x] * ECU_MT_CHUNK;             \
    const int64_t end0 = begin + ECU_MT_CHUNK;                                     \
    const int64_t end = end0 < L.numel[t] ? end0 : L.numel[t];                     \
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)

/* SGD: lists param, grad, momentum buffer (0 without momentum); s0: first step. */
template <class T>
__global__ void ecu_mt_sgd(ecu_mt L, ecu_mt_hyper h) {
    ECU_MT_LOOP(L) {
        T* p = (T*)L.ptr[0][t];
        const T* g = (const T*)L.ptr[1][t];
        T* b = (T*)L.ptr[2][t];
        const bool first = L.s0[t] != 0;
        T d = h.maximize ? -g[i] : g[i];
        if (h.weight_decay != 0) d = d + (T)h.weight_decay * p[i];
        if (b) {
            b[i] = first ? d : (T)h.momentum * b[i] + (T)(1 - h.dampening) * d;
            d = h.nesterov ? d + (T)h.momentum * b[i] : b[i];
        }
        p[i] = p[i] - (T)h.lr * d;
    }
}

/* Adam/AdamW: lists param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad);
 * s0: lr / bias_correction1, s1: sqrt(bias_correction2). */
template <class T>
__global__ void ecu_mt_adam(ecu_mt L, ecu_mt_hyper h) {
    ECU_MT_LOOP(L) {
        T* p = (T*)L.ptr[0][t];
        const T* g = (const T*)L.ptr[1][t];
        T* m1 = (T*)L.ptr[2][t];
        T* m2 = (T*)L.ptr[3][t];
        T* mx = h.amsgrad ? (T*)L.ptr[4][t] : (T*)0;
        const T step_size = (T)L.s0[t], bc2_sqrt = (T)L.s1[t];
        const T decay = (T)(1 - h.lr * h.weight_decay);
        T d = h.maximize ? -g[i] : g[i];
        if (h.weight_decay != 0) {
            if (h.decoupled)
                p[i] = p[i] * decay;
            else
                d = d + (T)h.weight_decay * p[i];
        }
        m1[i] = m1[i] + (T)(1 - h.beta1) * (d - m1[i]);
        m2[i] = m2[i] * (T)h.beta2 + (T)(1 - h.beta2) * d * d;
        T v = m2[i];
        if (mx) {
            if (v > mx[i] || mx[i] != mx[i]) mx[i] = v;
            v = mx[i];
        }
        T denom = sqrt(v) / bc2_sqrt + (T)h.eps;
        p[i] = p[i] - step_size * (m1[i] / denom);
    }
}

#endif
