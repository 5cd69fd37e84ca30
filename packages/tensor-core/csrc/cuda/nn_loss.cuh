/* nll_loss and the fused cross entropy on CUDA, forward and backward (the
 * kernels of csrc/cpu/nn/loss.c and cross_entropy.inc, same parameters through
 * nn_launch.c), float32/float64 (Note [nn kernel dtypes]).
 *
 * Note [CUDA loss reductions]: a 'mean' or 'sum' loss is one value, summed in
 * double by a single block in a fixed order (deterministic, as the CPU's); the
 * backward of 'mean' needs the total weight of the counted targets, which one
 * block sums before it writes anything.  The fused cross entropy's backward
 * writes each row's coefficient into the row's first gradient element
 * (ecu_ce_coef, one block when it needs the total weight), and the row kernel
 * reads it there before the row is overwritten: no workspace is needed.
 * Targets outside [0, c) that are not ignore_index are reported through the
 * device's error word (raised at the next synchronisation). */
#ifndef EMBER_CUDA_NN_LOSS_CUH
#define EMBER_CUDA_NN_LOSS_CUH

/* The class of target k, or -1 (ignored or out of range: reported). */
static __device__ __forceinline__ int64_t ecu_nll_class(const int64_t* target, int64_t k,
                                                        int64_t c, int64_t ignore,
                                                        int32_t* err) {
    int64_t t = target[k];
    if (t == ignore) return -1;
    if (t < 0 || t >= c) {
        ecu_nn_index_error(err, t, c);
        return -1;
    }
    return t;
}

/* x viewed as (n, c, s).  reduction 0: out (n, s), any grid; else one block
 * writes out[0] and total_weight[0]. */
template <class T>
__global__ void ecu_nll_fwd(int64_t n, int64_t c, int64_t s, int reduction, int64_t ignore,
                            T* out, T* total_weight, const T* x, const int64_t* target,
                            const T* w, int32_t* err) {
    const int64_t ns = n * s;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    double total = 0, tw = 0;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < ns; k += step) {
        int64_t i = k / s, j = k - i * s;
        int64_t t = ecu_nll_class(target, k, c, ignore, err);
        if (reduction == 0) {
            out[k] = t < 0 ? (T)0 : -x[(i * c + t) * s + j] * (w ? w[t] : (T)1);
        } else if (t >= 0) {
            double wt = w ? (double)w[t] : 1.0;
            total -= (double)x[(i * c + t) * s + j] * wt;
            tw += wt;
        }
    }
    if (reduction == 0) return;
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    total = ecu_nn_block_sum(total, part);
    tw = ecu_nn_block_sum(tw, part);
    if (threadIdx.x == 0) {
        out[0] = (T)(reduction == 1 ? total / tw : total);
        total_weight[0] = (T)tw;
    }
}

/* grad_in is zeroed by the launcher; the targets' places get -weight * grad
 * (/ total weight for 'mean', then one block). */
template <class T>
__global__ void ecu_nll_bwd(int64_t n, int64_t c, int64_t s, int reduction, int64_t ignore,
                            T* gi, const T* g, const int64_t* target, const T* w,
                            int32_t* err) {
    const int64_t ns = n * s;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double scale = 1.0;
    if (reduction == 1) {
        double tw = 0;
        for (int64_t k = first; k < ns; k += step) {
            int64_t t = target[k];
            if (t != ignore && t >= 0 && t < c) tw += w ? (double)w[t] : 1.0;
        }
        scale = 1.0 / ecu_nn_block_sum(tw, reinterpret_cast<double*>(ecu_nn_smem));
    }
    for (int64_t k = first; k < ns; k += step) {
        int64_t i = k / s, j = k - i * s;
        int64_t t = ecu_nll_class(target, k, c, ignore, err);
        if (t < 0) continue;
        double gv = reduction == 0 ? (double)g[k] : (double)g[0] * scale;
        gi[(i * c + t) * s + j] = (T)(-gv * (w ? (double)w[t] : 1.0));
    }
}

/* Rows of logits: block row threadIdx.y takes row blockIdx.x * blockDim.y +
 * threadIdx.y.  Writes lse (the row's log-sum-exp) and, for reduction 0, the
 * row's loss. */
template <class T>
__global__ void ecu_ce_rows(int64_t n, int64_t c, int reduction, int64_t ignore, T* out, T* lse,
                            const T* x, const int64_t* target, const T* w, int32_t* err) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < n;
    const T* xr = x + (live ? row : 0) * c;
    T* part = reinterpret_cast<T*>(ecu_nn_smem);
    T m = -(T)INFINITY;
    if (live)
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = xr[j] > m ? xr[j] : m;
    m = ecu_nn_row_reduce<T, true>(m, part);
    T sum = 0;
    if (live && m != -(T)INFINITY)
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) sum += exp(xr[j] - m);
    sum = ecu_nn_row_reduce<T, false>(sum, part);
    if (!live || threadIdx.x != 0) return;
    T l = m == -(T)INFINITY ? m : m + log(sum);
    lse[row] = l;
    int64_t t = ecu_nll_class(target, row, c, ignore, err);
    if (reduction == 0) out[row] = t < 0 ? (T)0 : (l - xr[t]) * (w ? w[t] : (T)1);
}

/* 'mean'/'sum' of the rows' losses (one block), from lse and the logits. */
template <class T>
__global__ void ecu_ce_reduce(int64_t n, int64_t c, int reduction, int64_t ignore, T* out,
                              T* total_weight, const T* lse, const T* x, const int64_t* target,
                              const T* w) {
    double total = 0, tw = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        int64_t t = target[i];
        if (t == ignore || t < 0 || t >= c) continue; /* bad ones: reported by ecu_ce_rows */
        T wt = w ? w[t] : (T)1;
        total += (double)((lse[i] - x[i * c + t]) * wt);
        tw += (double)wt;
    }
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    total = ecu_nn_block_sum(total, part);
    tw = ecu_nn_block_sum(tw, part);
    if (threadIdx.x == 0) {
        out[0] = (T)(reduction == 1 ? total / tw : total);
        total_weight[0] = (T)tw;
    }
}

/* Each row's coefficient grad * weight[t] (/ total weight for 'mean': one
 * block), into the row's first element of grad_in. */
template <class T>
__global__ void ecu_ce_coef(int64_t n, int64_t c, int reduction, int64_t ignore, T* gi,
                            const T* g, const int64_t* target, const T* w, int32_t* err) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double scale = 1.0;
    if (reduction == 1) {
        double tw = 0;
        for (int64_t i = first; i < n; i += step) {
            int64_t t = target[i];
            if (t != ignore && t >= 0 && t < c) tw += w ? (double)w[t] : 1.0;
        }
        scale = 1.0 / ecu_nn_block_sum(tw, reinterpret_cast<double*>(ecu_nn_smem));
    }
    for (int64_t i = first; i < n; i += step) {
        int64_t t = ecu_nll_class(target, i, c, ignore, err);
        double gv = reduction == 0 ? (double)g[i] : (double)g[0] * scale;
        gi[i * c] = t < 0 ? (T)0 : (T)(gv * (w ? (double)w[t] : 1.0));
    }
}

/* grad_in row = coef * (softmax(x row) - onehot(t)); ignored rows are 0. */
template <class T>
__global__ void ecu_ce_bwd_rows(int64_t n, int64_t c, int64_t ignore, T* gi, const T* lse,
                                const T* x, const int64_t* target) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < n;
    T coef = 0, l = 0;
    int64_t t = -1;
    if (live) {
        coef = gi[row * c];
        l = lse[row];
        t = target[row];
    }
    __syncthreads(); /* every lane has read the coefficient before the row is written */
    if (!live) return;
    T* out = gi + row * c;
    const T* xr = x + row * c;
    if (t == ignore || t < 0 || t >= c) {
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) out[j] = 0;
        return;
    }
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
        T v = coef * exp(xr[j] - l);
        out[j] = j == t ? v - coef : v;
    }
}

#endif
