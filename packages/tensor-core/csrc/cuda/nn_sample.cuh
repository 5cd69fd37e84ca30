/* grid_sample and the CTC loss on CUDA: the kernels of cpu/nn/sampling.c, launched by
 * sample_launch.c with the CPU kernels' parameters.
 *
 * grid_sample: a thread per output position (n, [od,] oh, ow) computes the
 * source coordinates once and loops over the channels, as the CPU does; the
 * coordinate helpers below are the device twins of cpu/nn/sampling_tmpl.h's (Note
 * [Grid sample coordinates]), with the same float/double operations so that
 * both devices agree to rounding.  The backward adds into gx with atomics
 * (several outputs read one input pixel) and writes each position's grid
 * gradient once.
 *
 * CTC: one block per batch element (Note [CTC in log space]); threads run over
 * the extended target's symbols s and the block synchronises between time
 * steps.  alpha lives in the log_alpha output; the backward keeps two rows of
 * beta in shared memory and sums alpha + beta per symbol in log space in the
 * CPU's order (ascending s), one thread per distinct symbol. */
#ifndef EMBER_CUDA_NN_SAMPLE_CUH
#define EMBER_CUDA_NN_SAMPLE_CUH

#define ECU_GS_LOOP(i, n)                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);        \
         i += (int64_t)gridDim.x * blockDim.x)

struct ecu_gs3 {
    int64_t v[3];
};

static __device__ __forceinline__ bool ecu_gs_in(int64_t i, int64_t n) { return i >= 0 && i < n; }

template <class T>
static __device__ __forceinline__ T ecu_gs_unnormalize(T c, int64_t size, int align_corners,
                                                       T* g) {
    if (align_corners) {
        *g = (T)(size - 1) / 2;
        return ((c + 1) / 2) * (T)(size - 1);
    }
    *g = (T)size / 2;
    return ((c + 1) * (T)size - 1) / 2;
}

template <class T>
static __device__ __forceinline__ T ecu_gs_clip(T in, int64_t limit, T* g) {
    if (in <= (T)0) {
        *g = 0;
        return 0;
    }
    T max = (T)(limit - 1);
    if (in >= max) {
        *g = 0;
        return max;
    }
    *g = 1;
    return in;
}

template <class T>
static __device__ __forceinline__ T ecu_gs_reflect(T in, int64_t twice_low, int64_t twice_high,
                                                   T* g) {
    if (twice_low == twice_high) {
        *g = 0;
        return 0;
    }
    T min = (T)twice_low / 2, span = (T)(twice_high - twice_low) / 2;
    T sign = 1;
    in = in - min;
    if (in < 0) {
        sign = -1;
        in = -in;
    }
    T extra = (T)fmod((double)in, (double)span);
    double flips = floor((double)in / (double)span);
    if (fmod(flips, 2.0) == 0) {
        *g = sign;
        return extra + min;
    }
    *g = -sign;
    return span - extra + min;
}

template <class T>
static __device__ __forceinline__ T ecu_gs_pad(T c, int64_t size, int padding, int align_corners,
                                               T* g) {
    T g1, g2;
    if (padding == 1) { /* EC_GS_PAD_BORDER */
        c = ecu_gs_clip<T>(c, size, &g1);
        *g *= g1;
    } else if (padding == 2) { /* EC_GS_PAD_REFLECTION */
        c = align_corners ? ecu_gs_reflect<T>(c, 0, 2 * (size - 1), &g1)
                          : ecu_gs_reflect<T>(c, -1, 2 * size - 1, &g1);
        c = ecu_gs_clip<T>(c, size, &g2);
        *g *= g1 * g2;
    }
    return c;
}

template <class T>
static __device__ __forceinline__ T ecu_gs_source(T c, int64_t size, int padding,
                                                  int align_corners, T* g) {
    c = ecu_gs_unnormalize<T>(c, size, align_corners, g);
    return ecu_gs_pad<T>(c, size, padding, align_corners, g);
}

/* floor / round to an index; NaN, infinities and far values land out of bounds */
template <class T>
static __device__ __forceinline__ int64_t ecu_gs_floor(T v) {
    if (!(v > (T)-1e15 && v < (T)1e15)) return INT64_MIN / 4;
    return (int64_t)floor((double)v);
}

template <class T>
static __device__ __forceinline__ int64_t ecu_gs_round(T v) {
    if (!(v > (T)-1e15 && v < (T)1e15)) return INT64_MIN / 4;
    return (int64_t)nearbyint((double)v);
}

/* Keys' cubic convolution (A = -0.75) and its derivative, taps at -1, 0, 1, 2 */
template <class T>
static __device__ __forceinline__ void ecu_gs_cubic(T t, T* c) {
    const T A = (T)-0.75;
    T x = t + 1;
    c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

template <class T>
static __device__ __forceinline__ void ecu_gs_cubic_grad(T t, T* c) {
    const T A = (T)-0.75;
    T x = -1 - t;
    c[0] = (-3 * A * x - 10 * A) * x - 8 * A;
    x = -t;
    c[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 1 - t;
    c[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 2 - t;
    c[3] = (3 * A * x - 10 * A) * x + 8 * A;
}

/* The pixel a bicubic tap at integer (x, y) reads after padding, or -1 (zero). */
template <class T>
static __device__ __forceinline__ int64_t ecu_gs_tap(int64_t x, int64_t y, int64_t H, int64_t W,
                                                     int padding, int align_corners) {
    T g = 1;
    T fx = ecu_gs_pad<T>((T)x, W, padding, align_corners, &g);
    T fy = ecu_gs_pad<T>((T)y, H, padding, align_corners, &g);
    if (!(fx > (T)-1e15 && fx < (T)1e15 && fy > (T)-1e15 && fy < (T)1e15)) return -1;
    int64_t ix = (int64_t)fx, iy = (int64_t)fy;
    if (!ecu_gs_in(ix, W) || !ecu_gs_in(iy, H)) return -1;
    return iy * W + ix;
}

/* 2-D, x (N, C, H, W), grid (N, Ho, Wo, 2), y (N, C, Ho, Wo).  BWD: gx (zeroed
 * by the launcher, may be null) and ggrid (may be null) from gy instead of y. */
template <class T, bool BWD>
__global__ void ecu_grid_sample_2d_k(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Ho,
                                     int64_t Wo, int mode, int padding, int align_corners,
                                     const T* x, const T* grid, T* y, const T* gy, T* gx,
                                     T* ggrid) {
    const int64_t plane = H * W, oplane = Ho * Wo;
    ECU_GS_LOOP(r, N * oplane) {
        const int64_t n = r / oplane, p = r - n * oplane;
        const T* xn = x + n * C * plane;
        const T* gp = grid + r * 2;
        T gmx = 1, gmy = 1, gix = 0, giy = 0;
        if (mode == 2) { /* bicubic */
            T ix = ecu_gs_unnormalize<T>(gp[0], W, align_corners, &gmx);
            T iy = ecu_gs_unnormalize<T>(gp[1], H, align_corners, &gmy);
            int64_t x0 = ecu_gs_floor<T>(ix), y0 = ecu_gs_floor<T>(iy);
            T cx[4], cy[4], dx[4], dy[4];
            ecu_gs_cubic<T>(ix - (T)x0, cx);
            ecu_gs_cubic<T>(iy - (T)y0, cy);
            if (BWD) {
                ecu_gs_cubic_grad<T>(ix - (T)x0, dx);
                ecu_gs_cubic_grad<T>(iy - (T)y0, dy);
            }
            int64_t tap[16];
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++)
                    tap[j * 4 + i] =
                        ecu_gs_tap<T>(x0 - 1 + i, y0 - 1 + j, H, W, padding, align_corners);
            for (int64_t c = 0; c < C; c++) {
                const T* xc = xn + c * plane;
                if (!BWD) {
                    T acc = 0;
                    for (int j = 0; j < 4; j++) {
                        T row = 0;
                        for (int i = 0; i < 4; i++) {
                            int64_t t = tap[j * 4 + i];
                            row += (t < 0 ? (T)0 : xc[t]) * cx[i];
                        }
                        acc += row * cy[j];
                    }
                    y[(n * C + c) * oplane + p] = acc;
                    continue;
                }
                T go = gy[(n * C + c) * oplane + p];
                for (int j = 0; j < 4; j++)
                    for (int i = 0; i < 4; i++) {
                        int64_t t = tap[j * 4 + i];
                        if (t < 0) continue;
                        if (gx) atomicAdd(gx + (n * C + c) * plane + t, go * cx[i] * cy[j]);
                        T v = xc[t];
                        gix -= v * dx[i] * cy[j] * go;
                        giy -= v * dy[j] * cx[i] * go;
                    }
            }
        } else {
            T ix = ecu_gs_source<T>(gp[0], W, padding, align_corners, &gmx);
            T iy = ecu_gs_source<T>(gp[1], H, padding, align_corners, &gmy);
            if (mode == 1) { /* nearest */
                int64_t px = ecu_gs_round<T>(ix), py = ecu_gs_round<T>(iy);
                bool ok = ecu_gs_in(px, W) && ecu_gs_in(py, H);
                for (int64_t c = 0; c < C; c++) {
                    if (!BWD)
                        y[(n * C + c) * oplane + p] = ok ? xn[c * plane + py * W + px] : (T)0;
                    else if (gx && ok)
                        atomicAdd(gx + (n * C + c) * plane + py * W + px,
                                  gy[(n * C + c) * oplane + p]);
                }
                gmx = gmy = 0; /* nearest has no gradient w.r.t. the grid */
            } else {
                int64_t x0 = ecu_gs_floor<T>(ix), y0 = ecu_gs_floor<T>(iy);
                T e = (T)(x0 + 1) - ix, w = ix - (T)x0;
                T s = (T)(y0 + 1) - iy, nn = iy - (T)y0;
                T wt[4] = {e * s, w * s, e * nn, w * nn}; /* nw, ne, sw, se */
                T wx[4] = {-s, s, -nn, nn}, wy[4] = {-e, -w, e, w};
                bool ok[4] = {ecu_gs_in(x0, W) && ecu_gs_in(y0, H),
                              ecu_gs_in(x0 + 1, W) && ecu_gs_in(y0, H),
                              ecu_gs_in(x0, W) && ecu_gs_in(y0 + 1, H),
                              ecu_gs_in(x0 + 1, W) && ecu_gs_in(y0 + 1, H)};
                int64_t off[4];
                off[0] = y0 * W + x0;
                off[1] = off[0] + 1;
                off[2] = off[0] + W;
                off[3] = off[2] + 1;
                for (int64_t c = 0; c < C; c++) {
                    const T* xc = xn + c * plane;
                    if (!BWD) {
                        T acc = 0;
                        for (int k = 0; k < 4; k++)
                            if (ok[k]) acc += xc[off[k]] * wt[k];
                        y[(n * C + c) * oplane + p] = acc;
                        continue;
                    }
                    T go = gy[(n * C + c) * oplane + p];
                    for (int k = 0; k < 4; k++) {
                        if (!ok[k]) continue;
                        if (gx) atomicAdd(gx + (n * C + c) * plane + off[k], wt[k] * go);
                        T v = xc[off[k]] * go;
                        gix += v * wx[k];
                        giy += v * wy[k];
                    }
                }
            }
        }
        if (BWD && ggrid) {
            ggrid[r * 2] = gmx * gix;
            ggrid[r * 2 + 1] = gmy * giy;
        }
    }
}

/* 3-D (trilinear and nearest): x (N, C, D, H, W), grid (N, Do, Ho, Wo, 3), y
 * (N, C, Do, Ho, Wo); BWD as for 2-D. */
template <class T, bool BWD>
__global__ void ecu_grid_sample_3d_k(int64_t N, int64_t C, ecu_gs3 in3, ecu_gs3 out3, int mode,
                                     int padding, int align_corners, const T* x, const T* grid,
                                     T* y, const T* gy, T* gx, T* ggrid) {
    const int64_t D = in3.v[0], H = in3.v[1], W = in3.v[2];
    const int64_t vol = D * H * W, ovol = out3.v[0] * out3.v[1] * out3.v[2];
    ECU_GS_LOOP(r, N * ovol) {
        const int64_t n = r / ovol, p = r - n * ovol;
        const T* xn = x + n * C * vol;
        const T* gp = grid + r * 3;
        T gm[3] = {1, 1, 1}, gi[3] = {0, 0, 0};
        T ix = ecu_gs_source<T>(gp[0], W, padding, align_corners, &gm[0]);
        T iy = ecu_gs_source<T>(gp[1], H, padding, align_corners, &gm[1]);
        T iz = ecu_gs_source<T>(gp[2], D, padding, align_corners, &gm[2]);
        if (mode == 1) {
            int64_t px = ecu_gs_round<T>(ix), py = ecu_gs_round<T>(iy), pz = ecu_gs_round<T>(iz);
            bool ok = ecu_gs_in(px, W) && ecu_gs_in(py, H) && ecu_gs_in(pz, D);
            int64_t at = (pz * H + py) * W + px;
            for (int64_t c = 0; c < C; c++) {
                if (!BWD)
                    y[(n * C + c) * ovol + p] = ok ? xn[c * vol + at] : (T)0;
                else if (gx && ok)
                    atomicAdd(gx + (n * C + c) * vol + at, gy[(n * C + c) * ovol + p]);
            }
            gm[0] = gm[1] = gm[2] = 0;
        } else {
            int64_t x0 = ecu_gs_floor<T>(ix), y0 = ecu_gs_floor<T>(iy), z0 = ecu_gs_floor<T>(iz);
            T f[3] = {ix - (T)x0, iy - (T)y0, iz - (T)z0};
            T u[3] = {(T)(x0 + 1) - ix, (T)(y0 + 1) - iy, (T)(z0 + 1) - iz};
            for (int64_t c = 0; c < C; c++) {
                const T* xc = xn + c * vol;
                T acc = 0, go = BWD ? gy[(n * C + c) * ovol + p] : (T)0;
                for (int k = 0; k < 8; k++) {
                    int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
                    int64_t px = x0 + bx, py = y0 + by, pz = z0 + bz;
                    if (!(ecu_gs_in(px, W) && ecu_gs_in(py, H) && ecu_gs_in(pz, D))) continue;
                    T wx = bx ? f[0] : u[0], wy = by ? f[1] : u[1], wz = bz ? f[2] : u[2];
                    int64_t at = (pz * H + py) * W + px;
                    if (!BWD) {
                        acc += xc[at] * (wx * wy * wz);
                        continue;
                    }
                    if (gx) atomicAdd(gx + (n * C + c) * vol + at, wx * wy * wz * go);
                    T v = xc[at] * go;
                    gi[0] += v * (bx ? 1 : -1) * wy * wz;
                    gi[1] += v * (by ? 1 : -1) * wx * wz;
                    gi[2] += v * (bz ? 1 : -1) * wx * wy;
                }
                if (!BWD) y[(n * C + c) * ovol + p] = acc;
            }
        }
        if (BWD && ggrid)
            for (int d = 0; d < 3; d++) ggrid[r * 3 + d] = gm[d] * gi[d];
    }
}

/* ------------------------------------------------------------------ CTC */

template <class T>
static __device__ __forceinline__ T ecu_ctc_lse3(T a, T b, T c) {
    T m = a > b ? a : b;
    if (c > m) m = c;
    if (m == -(T)INFINITY) return m;
    return (T)log(exp((double)(a - m)) + exp((double)(b - m)) + exp((double)(c - m))) + m;
}

template <class T>
static __device__ __forceinline__ T ecu_ctc_lse2(T a, T b) {
    T m = a > b ? a : b;
    if (m == -(T)INFINITY) return m;
    return (T)log(exp((double)(a - m)) + exp((double)(b - m))) + m;
}

/* Checks element b's lengths, offset and target symbols (a bad one is
 * reported through the error word); false: skip the element. */
static __device__ bool ecu_ctc_valid(int64_t b, int64_t tmax, int64_t C, int64_t smax,
                                     const int64_t* tg, int64_t ntargets, const int64_t* toff,
                                     const int64_t* ilen, const int64_t* tlen, int32_t* err,
                                     int* bad) {
    const int64_t Ti = ilen[b], L = tlen[b], o = toff[b];
    if (threadIdx.x == 0) {
        *bad = 0;
        if (Ti < 0 || Ti > tmax) {
            ecu_nn_index_error(err, Ti, tmax + 1);
            *bad = 1;
        } else if (L < 0 || L > smax || o < 0 || o + L > ntargets) {
            ecu_nn_index_error(err, L, smax + 1);
            *bad = 1;
        }
    }
    __syncthreads();
    if (!*bad)
        for (int64_t s = threadIdx.x; s < L; s += blockDim.x) {
            int64_t v = tg[o + s];
            if (v < 0 || v >= C) {
                ecu_nn_index_error(err, v, C);
                *bad = 1; /* every writer stores 1 */
            }
        }
    __syncthreads();
    return !*bad;
}

/* log_probs lp (Tmax, N, C); log_alpha la (N, Tmax, S2), nll (N).  One block
 * per element b; a bad element's nll is NaN (the host raises the error). */
template <class T>
__global__ void ecu_ctc_fwd_k(int64_t Tmax, int64_t N, int64_t C, int64_t smax, const T* lp,
                              const int64_t* tg, int64_t ntargets, const int64_t* toff,
                              const int64_t* ilen, const int64_t* tlen, int64_t blank, T* la,
                              T* nll, int32_t* err) {
    __shared__ int bad;
    const int64_t S2 = 2 * smax + 1, b = blockIdx.x;
    T* a = la + b * Tmax * S2;
    for (int64_t i = threadIdx.x; i < Tmax * S2; i += blockDim.x) a[i] = -(T)INFINITY;
    if (!ecu_ctc_valid(b, Tmax, C, smax, tg, ntargets, toff, ilen, tlen, err, &bad)) {
        if (threadIdx.x == 0) nll[b] = (T)NAN;
        return;
    }
    const int64_t Ti = ilen[b], L = tlen[b], *l = tg + toff[b];
    if (Ti == 0) {
        if (threadIdx.x == 0) nll[b] = L == 0 ? (T)0 : (T)INFINITY;
        return;
    }
#define ECU_LP(t, c) lp[((t) * N + b) * C + (c)]
#define ECU_PRIME(s) ((s) % 2 ? l[(s) / 2] : blank)
    if (threadIdx.x == 0) {
        a[0] = ECU_LP(0, blank);
        if (L > 0) a[1] = ECU_LP(0, l[0]);
    }
    __syncthreads();
    for (int64_t t = 1; t < Ti; t++) {
        const T* prev = a + (t - 1) * S2;
        T* cur = a + t * S2;
        for (int64_t s = threadIdx.x; s <= 2 * L; s += blockDim.x) {
            int64_t c = ECU_PRIME(s);
            T a1 = prev[s], a2 = s > 0 ? prev[s - 1] : -(T)INFINITY, a3 = -(T)INFINITY;
            if (s > 1 && ECU_PRIME(s - 2) != c) a3 = prev[s - 2];
            cur[s] = ecu_ctc_lse3<T>(a1, a2, a3) + ECU_LP(t, c);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const T* last = a + (Ti - 1) * S2;
        nll[b] = L == 0 ? -last[0] : -ecu_ctc_lse2<T>(last[2 * L], last[2 * L - 1]);
    }
}

/* grad (Tmax, N, C) from grad_out (gout[b * gstride]), nll and log_alpha.
 * Shared memory: two rows of beta (2 S2 T), then 2 S2 int32 (the chains of
 * positions per symbol). */
template <class T>
__global__ void ecu_ctc_bwd_k(int64_t Tmax, int64_t N, int64_t C, int64_t smax, const T* lp,
                              const int64_t* tg, int64_t ntargets, const int64_t* toff,
                              const int64_t* ilen, const int64_t* tlen, int64_t blank,
                              const T* la, const T* nll, const T* gout, int64_t gstride,
                              int zero_infinity, T* grad, int32_t* err) {
    __shared__ int bad;
    const int64_t S2 = 2 * smax + 1, b = blockIdx.x;
    T* rows = (T*)ecu_nn_smem;
    int32_t* next = (int32_t*)(rows + 2 * S2);
    int32_t* first = next + S2;
#define ECU_G(t, c) grad[((t) * N + b) * C + (c)]
    if (!ecu_ctc_valid(b, Tmax, C, smax, tg, ntargets, toff, ilen, tlen, err, &bad)) {
        for (int64_t i = threadIdx.x; i < Tmax * C; i += blockDim.x)
            ECU_G(i / C, i % C) = (T)NAN;
        return;
    }
    const int64_t Ti = ilen[b], L = tlen[b], *l = tg + toff[b];
    const T* a = la + b * Tmax * S2;
    const T z = nll[b], go = gout[b * gstride];
    if (zero_infinity && z == (T)INFINITY) {
        for (int64_t i = threadIdx.x; i < Tmax * C; i += blockDim.x) ECU_G(i / C, i % C) = 0;
        return;
    }
    /* G first collects lse of alpha + beta per symbol (log space) */
    for (int64_t i = threadIdx.x; i < Tmax * C; i += blockDim.x)
        ECU_G(i / C, i % C) = -(T)INFINITY;
    /* the chain of positions of each symbol, in ascending order: next[s] is
     * the following position of s's symbol (-1: none), first[s] whether s is
     * the symbol's first position */
    for (int64_t s = threadIdx.x; s <= 2 * L; s += blockDim.x) {
        int64_t c = ECU_PRIME(s);
        int32_t is_first = 1, nx = -1;
        for (int64_t q = s - 1; q >= 0 && is_first; q--)
            if (ECU_PRIME(q) == c) is_first = 0;
        for (int64_t q = s + 1; q <= 2 * L && nx < 0; q++)
            if (ECU_PRIME(q) == c) nx = (int32_t)q;
        next[s] = nx;
        first[s] = is_first;
    }
    __syncthreads();
    T* nb = rows;      /* beta[t + 1] */
    T* cb = rows + S2; /* beta[t] */
    if (Ti > 0) {
        for (int64_t s = threadIdx.x; s <= 2 * L; s += blockDim.x) nb[s] = -(T)INFINITY;
        __syncthreads();
        if (threadIdx.x == 0) {
            const T* lasta = a + (Ti - 1) * S2;
            nb[2 * L] = ECU_LP(Ti - 1, blank);
            ECU_G(Ti - 1, blank) = lasta[2 * L] + nb[2 * L];
            if (L > 0) {
                int64_t c = l[L - 1];
                nb[2 * L - 1] = ECU_LP(Ti - 1, c);
                ECU_G(Ti - 1, c) = lasta[2 * L - 1] + nb[2 * L - 1];
            }
        }
        __syncthreads();
    }
    for (int64_t t = Ti - 2; t >= 0; t--) {
        const T* at = a + t * S2;
        for (int64_t s = threadIdx.x; s <= 2 * L; s += blockDim.x) {
            int64_t c = ECU_PRIME(s);
            T b1 = nb[s], b2 = s < 2 * L ? nb[s + 1] : -(T)INFINITY, b3 = -(T)INFINITY;
            if (s < 2 * L - 1 && ECU_PRIME(s + 2) != c) b3 = nb[s + 2];
            cb[s] = ecu_ctc_lse3<T>(b1, b2, b3) + ECU_LP(t, c);
        }
        __syncthreads();
        /* the first position of each symbol walks its chain in ascending s */
        for (int64_t s = threadIdx.x; s <= 2 * L; s += blockDim.x) {
            if (!first[s]) continue;
            int64_t c = ECU_PRIME(s);
            T g = ECU_G(t, c);
            for (int64_t q = s; q >= 0; q = next[q]) g = ecu_ctc_lse2<T>(g, at[q] + cb[q]);
            ECU_G(t, c) = g;
        }
        __syncthreads();
        T* sw = nb;
        nb = cb;
        cb = sw;
    }
    for (int64_t i = threadIdx.x; i < Tmax * C; i += blockDim.x) {
        int64_t t = i / C, c = i - t * C;
        if (t >= Ti) {
            ECU_G(t, c) = 0;
            continue;
        }
        T p = ECU_LP(t, c);
        ECU_G(t, c) = ((T)exp((double)p) - (T)exp((double)(ECU_G(t, c) + z - p))) * go;
    }
#undef ECU_G
#undef ECU_LP
#undef ECU_PRIME
}

#endif
