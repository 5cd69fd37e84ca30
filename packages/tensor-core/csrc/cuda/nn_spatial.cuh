/* Pooling and the convolution's helpers on CUDA (the kernels of pool.c and
 * conv.c, same parameters through nn_launch.c), float32/float64, contiguous
 * (N, C, D, H, W) planes (Note [Spatial geometry]).
 *
 * Every kernel gathers: one thread per output element (max/avg/adaptive
 * pooling, im2col, the depthwise convolution) or per input element (the
 * backward of average pooling, col2im, the depthwise backward for the input)
 * sums what reaches it, so no two threads write one place and the sums are
 * in a fixed order.  Exceptions: max pooling's backward scatters through its
 * indices with atomics (ecu_index_scatter_add_k, duplicates are possible), and
 * the weight gradients reduce one (channel, tap) per block.  Windows and ties
 * follow the CPU kernels (pool_tmpl.h): max takes a later element only when
 * greater or NaN, starting at the window's first element inside the input. */
#ifndef EMBER_CUDA_NN_SPATIAL_CUH
#define EMBER_CUDA_NN_SPATIAL_CUH

/* ember_core.h's geom array: in[3], kernel[3], out[3], stride[3], padding[3],
 * dilation[3] (passed by value). */
struct ecu_sgeom {
    int64_t in[3], k[3], out[3], s[3], p[3], d[3];
};

#define ECU_GRID_LOOP(i, n)                                                          \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);        \
         i += (int64_t)gridDim.x * blockDim.x)

/* ------------------------------------------------------------------ pooling */

template <class T>
__global__ void ecu_max_pool_k(int64_t planes, ecu_sgeom g, const T* x, T* y, int64_t* idx) {
    const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
    const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
    const int64_t ovol = OD * OH * OW, ivol = ID * IH * IW;
    ECU_GRID_LOOP(e, planes * ovol) {
        int64_t pl = e / ovol, r = e - pl * ovol;
        int64_t od = r / (OH * OW), oh = (r / OW) % OH, ow = r % OW;
        int64_t d0 = od * g.s[0] - g.p[0], h0 = oh * g.s[1] - g.p[1], w0 = ow * g.s[2] - g.p[2];
        int64_t d1 = d0 + (g.k[0] - 1) * g.d[0] + 1, h1 = h0 + (g.k[1] - 1) * g.d[1] + 1;
        int64_t w1 = w0 + (g.k[2] - 1) * g.d[2] + 1;
        if (d1 > ID) d1 = ID;
        if (h1 > IH) h1 = IH;
        if (w1 > IW) w1 = IW;
        while (d0 < 0) d0 += g.d[0];
        while (h0 < 0) h0 += g.d[1];
        while (w0 < 0) w0 += g.d[2];
        const T* xp = x + pl * ivol;
        T m = -(T)INFINITY;
        int64_t best = (d0 * IH + h0) * IW + w0;
        for (int64_t id = d0; id < d1; id += g.d[0])
            for (int64_t ih = h0; ih < h1; ih += g.d[1])
                for (int64_t iw = w0; iw < w1; iw += g.d[2]) {
                    int64_t k = (id * IH + ih) * IW + iw;
                    T v = xp[k];
                    if (v > m || v != v) {
                        m = v;
                        best = k;
                    }
                }
        y[e] = m;
        idx[e] = best;
    }
}

/* The window of output o along one dim, clipped: [*lo, *hi) in the input and
 * its length within the padded input (PyTorch's count with padding). */
static __device__ __forceinline__ void ecu_avg_window(int64_t o, int64_t s, int64_t p, int64_t k,
                                                      int64_t n, int64_t* lo, int64_t* hi,
                                                      int64_t* padded) {
    int64_t a = o * s - p, b = a + k;
    if (b > n + p) b = n + p;
    *padded = b - a;
    if (a < 0) a = 0;
    if (b > n) b = n;
    *lo = a;
    *hi = b;
}

/* The divisor of output (od, oh, ow), or 0 for a window outside the input. */
static __device__ __forceinline__ int64_t ecu_avg_divisor(const ecu_sgeom& g, int64_t od,
                                                          int64_t oh, int64_t ow, int cip,
                                                          int64_t divisor, int64_t* lo,
                                                          int64_t* hi) {
    int64_t pd[3];
    const int64_t o[3] = {od, oh, ow};
    for (int i = 0; i < 3; i++) ecu_avg_window(o[i], g.s[i], g.p[i], g.k[i], g.in[i], lo + i, hi + i, pd + i);
    if (lo[0] >= hi[0] || lo[1] >= hi[1] || lo[2] >= hi[2]) return 0;
    if (divisor) return divisor;
    return cip ? pd[0] * pd[1] * pd[2] : (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
}

template <class T>
__global__ void ecu_avg_pool_k(int64_t planes, ecu_sgeom g, int cip, int64_t divisor, const T* x,
                               T* y) {
    const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
    const int64_t IH = g.in[1], IW = g.in[2], ivol = g.in[0] * IH * IW;
    const int64_t ovol = OD * OH * OW;
    ECU_GRID_LOOP(e, planes * ovol) {
        int64_t pl = e / ovol, r = e - pl * ovol;
        int64_t lo[3], hi[3];
        int64_t div = ecu_avg_divisor(g, r / (OH * OW), (r / OW) % OH, r % OW, cip, divisor, lo, hi);
        if (!div) {
            y[e] = 0;
            continue;
        }
        const T* xp = x + pl * ivol;
        T sum = 0;
        for (int64_t id = lo[0]; id < hi[0]; id++)
            for (int64_t ih = lo[1]; ih < hi[1]; ih++)
                for (int64_t iw = lo[2]; iw < hi[2]; iw++) sum += xp[(id * IH + ih) * IW + iw];
        y[e] = sum / (T)div;
    }
}

/* The outputs o (stride s, padding p, kernel k, out of them) whose window
 * [o * s - p, o * s - p + k) holds input position i: [*lo, *hi). */
static __device__ __forceinline__ void ecu_outputs_over(int64_t i, int64_t s, int64_t p, int64_t k,
                                                        int64_t out, int64_t* lo, int64_t* hi) {
    int64_t a = i + p - k + 1; /* o * s >= a */
    int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
    int64_t h = (i + p) / s + 1;
    if (h > out) h = out;
    *lo = l;
    *hi = h > l ? h : l;
}

template <class T>
__global__ void ecu_avg_pool_bwd_k(int64_t planes, ecu_sgeom g, int cip, int64_t divisor,
                                   const T* gy, T* gx) {
    const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2], ivol = ID * IH * IW;
    const int64_t OH = g.out[1], OW = g.out[2], ovol = g.out[0] * OH * OW;
    ECU_GRID_LOOP(e, planes * ivol) {
        int64_t pl = e / ivol, r = e - pl * ivol;
        const int64_t i3[3] = {r / (IH * IW), (r / IW) % IH, r % IW};
        int64_t lo[3], hi[3];
        for (int k = 0; k < 3; k++) ecu_outputs_over(i3[k], g.s[k], g.p[k], g.k[k], g.out[k], lo + k, hi + k);
        const T* gp = gy + pl * ovol;
        T sum = 0;
        for (int64_t od = lo[0]; od < hi[0]; od++)
            for (int64_t oh = lo[1]; oh < hi[1]; oh++)
                for (int64_t ow = lo[2]; ow < hi[2]; ow++) {
                    int64_t wl[3], wh[3];
                    int64_t div = ecu_avg_divisor(g, od, oh, ow, cip, divisor, wl, wh);
                    if (div) sum += gp[(od * OH + oh) * OW + ow] / (T)div;
                }
        gx[e] = sum;
    }
}

static __device__ __forceinline__ void ecu_adaptive_window(int64_t o, int64_t n_out, int64_t n_in,
                                                           int64_t* lo, int64_t* hi) {
    *lo = (o * n_in) / n_out;
    *hi = ((o + 1) * n_in + n_out - 1) / n_out;
}

struct ecu_dims3 {
    int64_t v[3];
};

template <class T>
__global__ void ecu_adaptive_pool_k(int is_max, int64_t planes, ecu_dims3 in3, ecu_dims3 out3,
                                    const T* x, T* y, int64_t* idx) {
    const int64_t ID = in3.v[0], IH = in3.v[1], IW = in3.v[2];
    const int64_t OD = out3.v[0], OH = out3.v[1], OW = out3.v[2];
    const int64_t ovol = OD * OH * OW, ivol = ID * IH * IW;
    ECU_GRID_LOOP(e, planes * ovol) {
        int64_t pl = e / ovol, r = e - pl * ovol;
        int64_t d0, d1, h0, h1, w0, w1;
        ecu_adaptive_window(r / (OH * OW), OD, ID, &d0, &d1);
        ecu_adaptive_window((r / OW) % OH, OH, IH, &h0, &h1);
        ecu_adaptive_window(r % OW, OW, IW, &w0, &w1);
        const T* xp = x + pl * ivol;
        if (is_max) {
            T m = -(T)INFINITY;
            int64_t best = (d0 * IH + h0) * IW + w0;
            for (int64_t id = d0; id < d1; id++)
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        int64_t k = (id * IH + ih) * IW + iw;
                        T v = xp[k];
                        if (v > m || v != v) {
                            m = v;
                            best = k;
                        }
                    }
            y[e] = m;
            idx[e] = best;
        } else {
            T sum = 0;
            for (int64_t id = d0; id < d1; id++)
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) sum += xp[(id * IH + ih) * IW + iw];
            y[e] = sum / (T)((d1 - d0) * (h1 - h0) * (w1 - w0));
        }
    }
}

/* The adaptive outputs whose window holds input i (a few around i * out / in). */
static __device__ __forceinline__ void ecu_adaptive_over(int64_t i, int64_t n_out, int64_t n_in,
                                                         int64_t* lo, int64_t* hi) {
    int64_t l = (i * n_out) / n_in - 1, h = ((i + 1) * n_out + n_in - 1) / n_in + 1;
    if (l < 0) l = 0;
    if (h > n_out) h = n_out;
    while (l < h) {
        int64_t a, b;
        ecu_adaptive_window(l, n_out, n_in, &a, &b);
        if (i >= a && i < b) break;
        l++;
    }
    while (h > l) {
        int64_t a, b;
        ecu_adaptive_window(h - 1, n_out, n_in, &a, &b);
        if (i >= a && i < b) break;
        h--;
    }
    *lo = l;
    *hi = h;
}

template <class T>
__global__ void ecu_adaptive_avg_bwd_k(int64_t planes, ecu_dims3 in3, ecu_dims3 out3, const T* gy,
                                       T* gx) {
    const int64_t ID = in3.v[0], IH = in3.v[1], IW = in3.v[2], ivol = ID * IH * IW;
    const int64_t OD = out3.v[0], OH = out3.v[1], OW = out3.v[2], ovol = OD * OH * OW;
    ECU_GRID_LOOP(e, planes * ivol) {
        int64_t pl = e / ivol, r = e - pl * ivol;
        int64_t dl, dh, hl, hh, wl, wh;
        ecu_adaptive_over(r / (IH * IW), OD, ID, &dl, &dh);
        ecu_adaptive_over((r / IW) % IH, OH, IH, &hl, &hh);
        ecu_adaptive_over(r % IW, OW, IW, &wl, &wh);
        const T* gp = gy + pl * ovol;
        T sum = 0;
        for (int64_t od = dl; od < dh; od++)
            for (int64_t oh = hl; oh < hh; oh++)
                for (int64_t ow = wl; ow < wh; ow++) {
                    int64_t d0, d1, h0, h1, w0, w1;
                    ecu_adaptive_window(od, OD, ID, &d0, &d1);
                    ecu_adaptive_window(oh, OH, IH, &h0, &h1);
                    ecu_adaptive_window(ow, OW, IW, &w0, &w1);
                    sum += gp[(od * OH + oh) * OW + ow] / (T)((d1 - d0) * (h1 - h0) * (w1 - w0));
                }
        gx[e] = sum;
    }
}

/* gx (zeroed by the launcher)[p, idx[p, j]] += gy[p, j], with atomics. */
template <class T>
__global__ void ecu_index_scatter_add_k(int64_t planes, int64_t in_vol, int64_t out_vol,
                                        const T* gy, const int64_t* idx, T* gx, int32_t* err) {
    ECU_GRID_LOOP(e, planes * out_vol) {
        int64_t pl = e / out_vol, k = idx[e];
        if (k < 0 || k >= in_vol) {
            ecu_nn_index_error(err, k, in_vol);
            continue;
        }
        atomicAdd(gx + pl * in_vol + k, gy[e]);
    }
}

template <class T>
__global__ void ecu_index_gather_k(int64_t planes, int64_t in_vol, int64_t out_vol, const T* x,
                                   const int64_t* idx, T* y, int32_t* err) {
    ECU_GRID_LOOP(e, planes * out_vol) {
        int64_t pl = e / out_vol, k = idx[e];
        if (k < 0 || k >= in_vol) {
            ecu_nn_index_error(err, k, in_vol);
            y[e] = 0;
            continue;
        }
        y[e] = x[pl * in_vol + k];
    }
}

/* ------------------------------------------------------ im2col and col2im */

/* col (n, c * kvol, L): row (ch, a, b, e), column l = the input under tap
 * (a, b, e) of output position l (0 in the padding). */
template <class T>
__global__ void ecu_im2col_k(int64_t n, int64_t c, ecu_sgeom g, const T* x, T* col) {
    const int64_t KD = g.k[0], KH = g.k[1], KW = g.k[2], kvol = KD * KH * KW;
    const int64_t OH = g.out[1], OW = g.out[2], L = g.out[0] * OH * OW;
    const int64_t IH = g.in[1], IW = g.in[2], ivol = g.in[0] * IH * IW;
    ECU_GRID_LOOP(e, n * c * kvol * L) {
        int64_t l = e % L, row = e / L;
        int64_t tap = row % kvol, ch = row / kvol; /* ch counts (image, channel) */
        int64_t a = tap / (KH * KW), b = (tap / KW) % KH, t = tap % KW;
        int64_t id = (l / (OH * OW)) * g.s[0] - g.p[0] + a * g.d[0];
        int64_t ih = ((l / OW) % OH) * g.s[1] - g.p[1] + b * g.d[1];
        int64_t iw = (l % OW) * g.s[2] - g.p[2] + t * g.d[2];
        bool in = id >= 0 && id < g.in[0] && ih >= 0 && ih < IH && iw >= 0 && iw < IW;
        col[e] = in ? x[ch * ivol + (id * IH + ih) * IW + iw] : (T)0;
    }
}

/* Along one dim: the (tap, output) pairs with o * s - p + tap * d == i, walked
 * by tap; returns the output or -1. */
static __device__ __forceinline__ int64_t ecu_tap_output(int64_t i, int64_t tap, int64_t s,
                                                         int64_t p, int64_t d, int64_t out) {
    int64_t q = i + p - tap * d;
    if (q < 0 || q % s) return -1;
    q /= s;
    return q < out ? q : -1;
}

/* x (n, c, in...) = the sum of the column entries that im2col took from each
 * element (x is overwritten). */
template <class T>
__global__ void ecu_col2im_k(int64_t n, int64_t c, ecu_sgeom g, const T* col, T* x) {
    const int64_t KD = g.k[0], KH = g.k[1], KW = g.k[2], kvol = KD * KH * KW;
    const int64_t OH = g.out[1], OW = g.out[2], L = g.out[0] * OH * OW;
    const int64_t IH = g.in[1], IW = g.in[2], ivol = g.in[0] * IH * IW;
    ECU_GRID_LOOP(e, n * c * ivol) {
        int64_t r = e % ivol, ch = e / ivol;
        int64_t id = r / (IH * IW), ih = (r / IW) % IH, iw = r % IW;
        const T* cc = col + ch * kvol * L;
        T sum = 0;
        for (int64_t a = 0; a < KD; a++) {
            int64_t od = ecu_tap_output(id, a, g.s[0], g.p[0], g.d[0], g.out[0]);
            if (od < 0) continue;
            for (int64_t b = 0; b < KH; b++) {
                int64_t oh = ecu_tap_output(ih, b, g.s[1], g.p[1], g.d[1], OH);
                if (oh < 0) continue;
                for (int64_t t = 0; t < KW; t++) {
                    int64_t ow = ecu_tap_output(iw, t, g.s[2], g.p[2], g.d[2], OW);
                    if (ow < 0) continue;
                    sum += cc[((a * KH + b) * KW + t) * L + (od * OH + oh) * OW + ow];
                }
            }
        }
        x[e] = sum;
    }
}

/* y (n, c, l) += bias[c] (the GEMM then adds into it with beta 1). */
template <class T>
__global__ void ecu_fill_bias_k(int64_t n, int64_t c, int64_t l, const T* bias, T* y) {
    ECU_GRID_LOOP(e, n * c * l) y[e] = bias[(e / l) % c];
}

/* Block ch: gb[ch] = sum of gy (n, c, l) over n and l. */
template <class T>
__global__ void ecu_bias_grad_k(int64_t n, int64_t c, int64_t l, const T* gy, T* gb) {
    const int64_t ch = blockIdx.x;
    double s = 0;
    for (int64_t e = threadIdx.x; e < n * l; e += blockDim.x) {
        int64_t i = e / l;
        s += (double)gy[(i * c + ch) * l + (e - i * l)];
    }
    s = ecu_nn_block_sum(s, reinterpret_cast<double*>(ecu_nn_smem));
    if (threadIdx.x == 0) gb[ch] = (T)s;
}

/* ------------------------------------------------- depthwise convolution */

/* groups == ci, co = ci * mult: output channel o reads input channel o / mult. */
template <class T>
__global__ void ecu_dw_conv_k(int64_t n, int64_t ci, int64_t co, ecu_sgeom g, const T* x,
                              const T* w, const T* bias, T* y) {
    const int64_t KH = g.k[1], KW = g.k[2], kvol = g.k[0] * KH * KW;
    const int64_t OH = g.out[1], OW = g.out[2], L = g.out[0] * OH * OW;
    const int64_t IH = g.in[1], IW = g.in[2], ivol = g.in[0] * IH * IW, mult = co / ci;
    ECU_GRID_LOOP(e, n * co * L) {
        int64_t l = e % L, o = (e / L) % co, i = e / (L * co);
        const T* xc = x + (i * ci + o / mult) * ivol;
        const T* wo = w + o * kvol;
        int64_t d0 = (l / (OH * OW)) * g.s[0] - g.p[0], h0 = ((l / OW) % OH) * g.s[1] - g.p[1];
        int64_t w0 = (l % OW) * g.s[2] - g.p[2];
        T sum = bias ? bias[o] : (T)0;
        for (int64_t a = 0; a < g.k[0]; a++) {
            int64_t id = d0 + a * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t b = 0; b < KH; b++) {
                int64_t ih = h0 + b * g.d[1];
                if (ih < 0 || ih >= IH) continue;
                for (int64_t t = 0; t < KW; t++) {
                    int64_t iw = w0 + t * g.d[2];
                    if (iw < 0 || iw >= IW) continue;
                    sum += xc[(id * IH + ih) * IW + iw] * wo[(a * KH + b) * KW + t];
                }
            }
        }
        y[e] = sum;
    }
}

template <class T>
__global__ void ecu_dw_conv_bwd_data_k(int64_t n, int64_t ci, int64_t co, ecu_sgeom g,
                                       const T* gy, const T* w, T* gx) {
    const int64_t KH = g.k[1], KW = g.k[2], kvol = g.k[0] * KH * KW;
    const int64_t OH = g.out[1], OW = g.out[2], L = g.out[0] * OH * OW;
    const int64_t IH = g.in[1], IW = g.in[2], ivol = g.in[0] * IH * IW, mult = co / ci;
    ECU_GRID_LOOP(e, n * ci * ivol) {
        int64_t r = e % ivol, c = (e / ivol) % ci, i = e / (ivol * ci);
        int64_t id = r / (IH * IW), ih = (r / IW) % IH, iw = r % IW;
        T sum = 0;
        for (int64_t m = 0; m < mult; m++) {
            int64_t o = c * mult + m;
            const T* gp = gy + (i * co + o) * L;
            const T* wo = w + o * kvol;
            for (int64_t a = 0; a < g.k[0]; a++) {
                int64_t od = ecu_tap_output(id, a, g.s[0], g.p[0], g.d[0], g.out[0]);
                if (od < 0) continue;
                for (int64_t b = 0; b < KH; b++) {
                    int64_t oh = ecu_tap_output(ih, b, g.s[1], g.p[1], g.d[1], OH);
                    if (oh < 0) continue;
                    for (int64_t t = 0; t < KW; t++) {
                        int64_t ow = ecu_tap_output(iw, t, g.s[2], g.p[2], g.d[2], OW);
                        if (ow < 0) continue;
                        sum += gp[(od * OH + oh) * OW + ow] * wo[(a * KH + b) * KW + t];
                    }
                }
            }
        }
        gx[e] = sum;
    }
}

/* Block (o, tap): gw[o, tap] = sum over images and outputs of gy * x. */
template <class T>
__global__ void ecu_dw_conv_bwd_weight_k(int64_t n, int64_t ci, int64_t co, ecu_sgeom g,
                                         const T* x, const T* gy, T* gw) {
    const int64_t KH = g.k[1], KW = g.k[2], kvol = g.k[0] * KH * KW;
    const int64_t OH = g.out[1], OW = g.out[2], L = g.out[0] * OH * OW;
    const int64_t IH = g.in[1], IW = g.in[2], ivol = g.in[0] * IH * IW, mult = co / ci;
    const int64_t o = blockIdx.x / kvol, tap = blockIdx.x % kvol;
    const int64_t a = tap / (KH * KW), b = (tap / KW) % KH, t = tap % KW;
    double s = 0;
    for (int64_t e = threadIdx.x; e < n * L; e += blockDim.x) {
        int64_t i = e / L, l = e - i * L;
        int64_t id = (l / (OH * OW)) * g.s[0] - g.p[0] + a * g.d[0];
        int64_t ih = ((l / OW) % OH) * g.s[1] - g.p[1] + b * g.d[1];
        int64_t iw = (l % OW) * g.s[2] - g.p[2] + t * g.d[2];
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= IH || iw < 0 || iw >= IW) continue;
        s += (double)(gy[(i * co + o) * L + l] *
                      x[(i * ci + o / mult) * ivol + (id * IH + ih) * IW + iw]);
    }
    s = ecu_nn_block_sum(s, reinterpret_cast<double*>(ecu_nn_smem));
    if (threadIdx.x == 0) gw[o * kvol + tap] = (T)s;
}

#endif
