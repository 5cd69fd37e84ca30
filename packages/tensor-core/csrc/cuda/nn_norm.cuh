/* Normalizations on CUDA, forward and backward (the kernels of norm.c with
 * their parameters, launched by nn_launch.c), float32/float64 (Note [nn kernel
 * dtypes]); statistics accumulate in double, as on the CPU.
 *
 * - layer/RMS norm: block row threadIdx.y normalizes one row (two passes over
 *   the row, the second from cache: mean, then the squared deviations);
 *   backward: the same rows for grad_in, and a column kernel for the weight and
 *   bias gradients (threads along y split the rows, summed in a fixed order);
 * - batch norm: one block per channel: Welford's running (count, mean, M2)
 *   per thread, merged across the block, then the fused affine
 *   y = (x - mean) * (invstd * w) + b over the channel; backward likewise
 *   (sums of g and g * (x - mean), then grad_in);
 * - group norm: one block per (sample, group) for the statistics, the affine
 *   and grad_in; the weight and bias gradients one block per channel.
 * No workspace: every reduction finishes inside one block. */
#ifndef EMBER_CUDA_NN_NORM_CUH
#define EMBER_CUDA_NN_NORM_CUH

/* Welford's state of a run: count, mean, sum of squared deviations. */
struct ecu_wf {
    double n, mean, m2;
};

static __device__ __forceinline__ void ecu_wf_add(ecu_wf& a, double x) {
    a.n += 1;
    double d = x - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (x - a.mean);
}

static __device__ __forceinline__ ecu_wf ecu_wf_merge(ecu_wf a, ecu_wf b) {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    ecu_wf r;
    r.n = a.n + b.n;
    double d = b.mean - a.mean;
    r.mean = a.mean + d * (b.n / r.n);
    r.m2 = a.m2 + b.m2 + d * d * (a.n * b.n / r.n);
    return r;
}

/* The block's merged state, in every thread (warps merged in order). */
static __device__ __forceinline__ ecu_wf ecu_wf_block(ecu_wf v, ecu_wf* part) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        ecu_wf o;
        o.n = __shfl_xor_sync(0xffffffffu, v.n, d);
        o.mean = __shfl_xor_sync(0xffffffffu, v.mean, d);
        o.m2 = __shfl_xor_sync(0xffffffffu, v.m2, d);
        v = ecu_wf_merge(v, o);
    }
    const int tid = threadIdx.x, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if ((tid & 31) == 0) part[tid >> 5] = v;
    __syncthreads();
    ecu_wf r = part[0];
    for (int k = 1; k < nw; k++) r = ecu_wf_merge(r, part[k]);
    return r;
}

/* ------------------------------------------------------------ layer / RMS */

template <class T>
__global__ void ecu_row_norm_k(int64_t rows, int64_t cols, int rms, double eps, T* y, T* mean,
                               T* rstd, const T* x, const T* w, const T* b) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < rows;
    const T* xr = x + (live ? row : 0) * cols;
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    double s = 0;
    if (live && !rms)
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += (double)xr[j];
    double mu = rms ? 0.0 : ecu_nn_row_reduce<double, false>(s, part) / (double)cols;
    /* deviations from mu rounded to T, corrected after (as the CPU's run_sqdev) */
    const T m0 = (T)mu;
    double q = 0;
    if (live)
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            double d = (double)(xr[j] - m0);
            q += d * d;
        }
    q = ecu_nn_row_reduce<double, false>(q, part);
    const double off = (double)m0 - mu;
    const double var = (q - (double)cols * off * off) / (double)cols;
    const double rs = 1.0 / sqrt(var + eps);
    if (!live) return;
    if (threadIdx.x == 0) {
        if (mean) mean[row] = (T)mu;
        rstd[row] = (T)rs;
    }
    const T a = (T)rs;
    T* yr = y + row * cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        T v = (xr[j] - m0) * a;
        if (w) v = v * w[j];
        if (b) v = v + b[j];
        yr[j] = v;
    }
}

template <class T>
__global__ void ecu_row_norm_bwd_k(int64_t rows, int64_t cols, int rms, T* gi, const T* g,
                                   const T* x, const T* mean, const T* rstd, const T* w) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < rows;
    const int64_t base = (live ? row : 0) * cols;
    const double mu = live && !rms ? (double)mean[row] : 0.0;
    const double rs = live ? (double)rstd[row] : 0.0;
    const T tmu = (T)mu, trs = (T)rs;
    double sa = 0, sb = 0;
    if (live)
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            T h = w ? g[base + j] * w[j] : g[base + j];
            sa += (double)h;
            sb += (double)(h * (x[base + j] - tmu));
        }
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    sa = ecu_nn_row_reduce<double, false>(sa, part);
    sb = ecu_nn_row_reduce<double, false>(sb, part);
    if (!live) return;
    const T p = (T)(-rs * rs * rs * sb / (double)cols);
    const T qv = rms ? (T)0 : (T)(-rs * sa / (double)cols);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        T h = w ? g[base + j] * w[j] : g[base + j];
        gi[base + j] = h * trs + (x[base + j] - tmu) * p + qv;
    }
}

/* Column j = blockIdx.x * blockDim.x + threadIdx.x: gw[j] = sum over rows of
 * g * xhat, gb[j] = sum of g (either may be 0). */
template <class T>
__global__ void ecu_row_norm_cols_k(int64_t rows, int64_t cols, int rms, T* gw, T* gb,
                                    const T* g, const T* x, const T* mean, const T* rstd) {
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = j < cols;
    double sw = 0, sb = 0;
    if (live)
        for (int64_t r = threadIdx.y; r < rows; r += blockDim.y) {
            T tmu = rms ? (T)0 : mean[r], trs = rstd[r];
            T gv = g[r * cols + j];
            sw += (double)(gv * ((x[r * cols + j] - tmu) * trs));
            sb += (double)gv;
        }
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    const int slot = threadIdx.y * blockDim.x + threadIdx.x, nslots = blockDim.x * blockDim.y;
    part[slot] = sw;
    part[nslots + slot] = sb;
    __syncthreads();
    if (threadIdx.y != 0 || !live) return;
    for (int k = 1; k < (int)blockDim.y; k++) {
        sw += part[k * blockDim.x + threadIdx.x];
        sb += part[nslots + k * blockDim.x + threadIdx.x];
    }
    if (gw) gw[j] = (T)sw;
    if (gb) gb[j] = (T)sb;
}

/* ------------------------------------------------------------ batch norm */

/* A running statistic of dtype rdt (any float), as the CPU's nn_load/nn_store. */
static __device__ __forceinline__ double ecu_nn_load_any(int rdt, const void* p, int64_t i) {
    switch (rdt) {
        case EC_FLOAT16: return (double)ec_h2f(((const ec_f16*)p)[i]);
        case EC_BFLOAT16: return (double)ec_bf16_to_f32(((const ec_bf16*)p)[i]);
        case EC_FLOAT32: return (double)((const float*)p)[i];
        default: return ((const double*)p)[i];
    }
}

static __device__ __forceinline__ void ecu_nn_store_any(int rdt, void* p, int64_t i, double v) {
    switch (rdt) {
        case EC_FLOAT16: ((ec_f16*)p)[i] = ec_f2h(v); break;
        case EC_BFLOAT16: ((ec_bf16*)p)[i] = ec_f32_to_bf16((float)v); break;
        case EC_FLOAT32: ((float*)p)[i] = (float)v; break;
        default: ((double*)p)[i] = v; break;
    }
}

/* Block ch: statistics (training) or the running ones, then the affine. */
template <class T>
__global__ void ecu_batch_norm_k(int rdt, int64_t n, int64_t c, int64_t s, int training,
                                 double momentum, double eps, T* y, T* save_mean, T* save_invstd,
                                 const T* x, const T* w, const T* b, void* rm, void* rv) {
    const int64_t ch = blockIdx.x;
    const int64_t cnt = n * s;
    __shared__ double stat[2];
    if (training) {
        ecu_wf a = {0, 0, 0};
        for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
            int64_t i = e / s, j = e - i * s;
            ecu_wf_add(a, (double)x[(i * c + ch) * s + j]);
        }
        a = ecu_wf_block(a, reinterpret_cast<ecu_wf*>(ecu_nn_smem));
        if (threadIdx.x == 0) {
            double mu = cnt ? a.mean : 0.0;
            double invstd = 1.0 / sqrt(a.m2 / (double)cnt + eps);
            save_mean[ch] = (T)mu;
            save_invstd[ch] = (T)invstd;
            if (rm)
                ecu_nn_store_any(rdt, rm, ch,
                                 (1 - momentum) * ecu_nn_load_any(rdt, rm, ch) + momentum * mu);
            if (rv)
                ecu_nn_store_any(rdt, rv, ch,
                                 (1 - momentum) * ecu_nn_load_any(rdt, rv, ch) +
                                     momentum * (a.m2 / (double)(cnt - 1)));
            stat[0] = mu;
            stat[1] = invstd;
        }
    } else if (threadIdx.x == 0) {
        stat[0] = ecu_nn_load_any(rdt, rm, ch);
        stat[1] = 1.0 / sqrt(ecu_nn_load_any(rdt, rv, ch) + eps);
        save_mean[ch] = (T)stat[0];
        save_invstd[ch] = (T)stat[1];
    }
    __syncthreads();
    const T a = (T)(stat[1] * (w ? (double)w[ch] : 1.0));
    const T bb = b ? b[ch] : (T)0, mu = (T)stat[0];
    for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
        int64_t i = e / s, k = (i * c + ch) * s + (e - i * s);
        y[k] = (x[k] - mu) * a + bb;
    }
}

template <class T>
__global__ void ecu_batch_norm_bwd_k(int64_t n, int64_t c, int64_t s, int training, T* gi, T* gw,
                                     T* gb, const T* g, const T* x, const T* mean,
                                     const T* invstd, const T* w) {
    const int64_t ch = blockIdx.x;
    const int64_t cnt = n * s;
    const double mu = (double)mean[ch];
    double sg = 0, sgx = 0;
    for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
        int64_t i = e / s, k = (i * c + ch) * s + (e - i * s);
        double gv = (double)g[k];
        sg += gv;
        sgx += gv * ((double)x[k] - mu);
    }
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    sg = ecu_nn_block_sum(sg, part);
    sgx = ecu_nn_block_sum(sgx, part);
    const double is = (double)invstd[ch];
    if (threadIdx.x == 0) {
        if (gw) gw[ch] = (T)(sgx * is);
        if (gb) gb[ch] = (T)sg;
    }
    if (!gi) return;
    const double wc = w ? (double)w[ch] : 1.0;
    const T kc = (T)(is * wc);
    T pc = 0, qc = 0;
    if (training && cnt > 0) {
        double p = -is * is * is * wc * sgx / (double)cnt;
        pc = (T)p;
        qc = (T)(-is * wc * sg / (double)cnt - p * mu);
    }
    for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
        int64_t i = e / s, k = (i * c + ch) * s + (e - i * s);
        gi[k] = g[k] * kc + x[k] * pc + qc;
    }
}

/* ------------------------------------------------------------ group norm */

/* Block r = (sample, group): its per * s contiguous elements. */
template <class T>
__global__ void ecu_group_norm_k(int64_t n, int64_t c, int64_t s, int64_t g, double eps, T* y,
                                 T* mean, T* rstd, const T* x, const T* w, const T* b) {
    const int64_t r = blockIdx.x, per = c / g, m = per * s, grp = r % g;
    const T* xr = x + r * m;
    ecu_wf a = {0, 0, 0};
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) ecu_wf_add(a, (double)xr[e]);
    a = ecu_wf_block(a, reinterpret_cast<ecu_wf*>(ecu_nn_smem));
    const double mu = m ? a.mean : 0.0, var = m ? a.m2 / (double)m : 0.0;
    const double rs = 1.0 / sqrt(var + eps);
    if (threadIdx.x == 0) {
        mean[r] = (T)mu;
        rstd[r] = (T)rs;
    }
    const T tmu = (T)mu;
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
        int64_t ch = grp * per + e / s;
        T sc = (T)(rs * (w ? (double)w[ch] : 1.0));
        y[r * m + e] = (xr[e] - tmu) * sc + (b ? b[ch] : (T)0);
    }
}

template <class T>
__global__ void ecu_group_norm_bwd_k(int64_t n, int64_t c, int64_t s, int64_t g, T* gi,
                                     const T* gr, const T* x, const T* mean, const T* rstd,
                                     const T* w) {
    const int64_t r = blockIdx.x, per = c / g, m = per * s, grp = r % g;
    double sum1 = 0, sum2 = 0; /* sum of g * x * w[ch], of g * w[ch] */
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
        int64_t ch = grp * per + e / s;
        double wc = w ? (double)w[ch] : 1.0, gv = (double)gr[r * m + e];
        sum1 += gv * (double)x[r * m + e] * wc;
        sum2 += gv * wc;
    }
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    sum1 = ecu_nn_block_sum(sum1, part);
    sum2 = ecu_nn_block_sum(sum2, part);
    const double mu = (double)mean[r], rs = (double)rstd[r];
    const double c2 = m ? (sum2 * mu - sum1) * rs * rs * rs / (double)m : 0.0;
    const double c3 = m ? -c2 * mu - sum2 * rs / (double)m : 0.0;
    const T pc = (T)c2, qc = (T)c3;
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
        int64_t ch = grp * per + e / s;
        T a = (T)(rs * (w ? (double)w[ch] : 1.0));
        gi[r * m + e] = gr[r * m + e] * a + x[r * m + e] * pc + qc;
    }
}

/* Block ch: gw[ch] = sum over samples of sum_s g * (x - mean) * rstd, gb[ch] =
 * sum of g. */
template <class T>
__global__ void ecu_group_norm_wgrad_k(int64_t n, int64_t c, int64_t s, int64_t g, T* gw, T* gb,
                                       const T* gr, const T* x, const T* mean, const T* rstd) {
    const int64_t ch = blockIdx.x, per = c / g, grp = ch / per;
    double sw = 0, sb = 0;
    for (int64_t e = threadIdx.x; e < n * s; e += blockDim.x) {
        int64_t i = e / s, k = (i * c + ch) * s + (e - i * s);
        double mu = (double)mean[i * g + grp], rs = (double)rstd[i * g + grp];
        double gv = (double)gr[k];
        sw += gv * ((double)x[k] - mu) * rs;
        sb += gv;
    }
    double* part = reinterpret_cast<double*>(ecu_nn_smem);
    sw = ecu_nn_block_sum(sw, part);
    sb = ecu_nn_block_sum(sb, part);
    if (threadIdx.x == 0) {
        if (gw) gw[ch] = (T)sw;
        if (gb) gb[ch] = (T)sb;
    }
}

#endif
