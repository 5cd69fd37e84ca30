/* Padding modes, nearest and linear interpolation on CUDA (the kernels of
 * resample.c, same parameters through nn_launch.c): index maps computed on the
 * device from the shared formula (index_map.h), their gather (any dtype, by
 * item size) and scatter-add, and linear/bilinear/trilinear interpolation with
 * the CPU's per-dim source indices and weights, computed in T (resample_tmpl.h).
 * The backward passes add with atomics (several outputs read one input). */
#ifndef EMBER_CUDA_NN_RESAMPLE_CUH
#define EMBER_CUDA_NN_RESAMPLE_CUH

#define ECU_RS_LOOP(i, n)                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);        \
         i += (int64_t)gridDim.x * blockDim.x)

struct ecu_rs3 {
    int64_t v[3];
};

__global__ void ecu_index_map_k(int kind, int64_t in, int64_t out, int64_t before, float sf,
                                double sd, int in_double, int64_t* map) {
    ECU_RS_LOOP(o, out) map[o] = ec_index_map_at(kind, in, before, sf, sd, in_double, o);
}

/* y[p, od, oh, ow] = x[p, md[od], mh[oh], mw[ow]]; E: the item's unsigned type. */
template <class E>
__global__ void ecu_map_gather_k(int64_t planes, ecu_rs3 in3, ecu_rs3 out3, const int64_t* maps,
                                 const E* x, E* y) {
    const int64_t IH = in3.v[1], IW = in3.v[2], ivol = in3.v[0] * IH * IW;
    const int64_t OD = out3.v[0], OH = out3.v[1], OW = out3.v[2], ovol = OD * OH * OW;
    const int64_t *md = maps, *mh = maps + OD, *mw = maps + OD + OH;
    ECU_RS_LOOP(e, planes * ovol) {
        int64_t pl = e / ovol, r = e - pl * ovol;
        int64_t od = r / (OH * OW), oh = (r / OW) % OH, ow = r % OW;
        y[e] = x[pl * ivol + (md[od] * IH + mh[oh]) * IW + mw[ow]];
    }
}

/* gx (zeroed by the launcher) += gy at the mapped places. */
template <class T>
__global__ void ecu_map_scatter_add_k(int64_t planes, ecu_rs3 in3, ecu_rs3 out3,
                                      const int64_t* maps, const T* gy, T* gx) {
    const int64_t IH = in3.v[1], IW = in3.v[2], ivol = in3.v[0] * IH * IW;
    const int64_t OD = out3.v[0], OH = out3.v[1], OW = out3.v[2], ovol = OD * OH * OW;
    const int64_t *md = maps, *mh = maps + OD, *mw = maps + OD + OH;
    ECU_RS_LOOP(e, planes * ovol) {
        int64_t pl = e / ovol, r = e - pl * ovol;
        int64_t od = r / (OH * OW), oh = (r / OW) % OH, ow = r % OW;
        atomicAdd(gx + pl * ivol + (md[od] * IH + mh[oh]) * IW + mw[ow], gy[e]);
    }
}

/* One dim of linear interpolation at output o: the two source positions and
 * their weights (resample_tmpl.h's linear_table, in T). */
template <class T>
static __device__ __forceinline__ void ecu_linear_at(int64_t in, int64_t out, int align_corners,
                                                     double scale, int64_t o, int64_t* i0,
                                                     int64_t* i1, T* l0, T* l1) {
    if (in == out) {
        *i0 = *i1 = o;
        *l0 = 1;
        *l1 = 0;
        return;
    }
    T ratio = align_corners ? (out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0)
                            : (scale > 0 ? (T)(1.0 / scale) : (T)in / (T)out);
    T real = align_corners ? ratio * (T)o : ratio * ((T)o + (T)0.5) - (T)0.5;
    if (!align_corners && real < 0) real = 0;
    int64_t i = (int64_t)floor((double)real);
    if (i > in - 1) i = in - 1;
    T lam = real - (T)i;
    if (lam < 0) lam = 0;
    if (lam > 1) lam = 1;
    *i0 = i;
    *i1 = i + (i < in - 1 ? 1 : 0);
    *l1 = lam;
    *l0 = (T)1 - lam;
}

struct ecu_rs_scales {
    double v[3];
};

/* Forward (BWD false): dst = y from src = x, a thread per output; backward:
 * dst = gx (zeroed by the launcher) from src = gy, atomics. */
template <class T, bool BWD>
__global__ void ecu_upsample_linear_k(int64_t planes, ecu_rs3 in3, ecu_rs3 out3, int align_corners,
                                      ecu_rs_scales scales, const T* src, T* dst) {
    const int64_t ID = in3.v[0], IH = in3.v[1], IW = in3.v[2], ivol = ID * IH * IW;
    const int64_t OD = out3.v[0], OH = out3.v[1], OW = out3.v[2], ovol = OD * OH * OW;
    const int nd = (ID == 1 && OD == 1) ? 1 : 2;
    ECU_RS_LOOP(e, planes * ovol) {
        int64_t pl = e / ovol, r = e - pl * ovol;
        int64_t od = r / (OH * OW), oh = (r / OW) % OH, ow = r % OW;
        int64_t dd[2], h0, h1, w0, w1;
        T dl[2], hl0, hl1, wl0, wl1;
        ecu_linear_at<T>(ID, OD, align_corners, scales.v[0], od, dd, dd + 1, dl, dl + 1);
        ecu_linear_at<T>(IH, OH, align_corners, scales.v[1], oh, &h0, &h1, &hl0, &hl1);
        ecu_linear_at<T>(IW, OW, align_corners, scales.v[2], ow, &w0, &w1, &wl0, &wl1);
        if (!BWD) {
            const T* x = src + pl * ivol;
            T acc = 0;
            for (int k = 0; k < nd; k++) {
                const T* p = x + dd[k] * IH * IW;
                T v = hl0 * (wl0 * p[h0 * IW + w0] + wl1 * p[h0 * IW + w1]) +
                      hl1 * (wl0 * p[h1 * IW + w0] + wl1 * p[h1 * IW + w1]);
                acc = nd == 1 ? v : acc + dl[k] * v;
            }
            dst[e] = acc;
        } else {
            T* gx = dst + pl * ivol;
            for (int k = 0; k < nd; k++) {
                T g = nd == 1 ? src[e] : src[e] * dl[k];
                T* p = gx + dd[k] * IH * IW;
                atomicAdd(p + h0 * IW + w0, g * hl0 * wl0);
                atomicAdd(p + h0 * IW + w1, g * hl0 * wl1);
                atomicAdd(p + h1 * IW + w0, g * hl1 * wl0);
                atomicAdd(p + h1 * IW + w1, g * hl1 * wl1);
            }
        }
    }
}

/* Bicubic (2-D) at output o of one dim: 4 clamped source positions and
 * their Keys weights (A = -0.75), as resample_tmpl.h's upsample_bicubic. */
template <class T>
static __device__ __forceinline__ void ecu_cubic_at(int64_t in, int64_t out, int align_corners,
                                                    double scale, int64_t o, int64_t* idx, T* c) {
    T s = align_corners ? (out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0)
                        : (scale > 0 ? (T)(1.0 / scale) : (T)in / (T)out);
    T real = align_corners ? s * (T)o : s * ((T)o + (T)0.5) - (T)0.5;
    int64_t i = (int64_t)floor((double)real);
    if (i > in - 1) i = in - 1;
    T t = real - (T)i;
    if (t < 0) t = 0;
    if (t > 1) t = 1;
    const T A = (T)-0.75;
    T x1 = t, x2 = (T)1 - t;
#define ECU_CC1(x) ((((A + 2) * (x) - (A + 3)) * (x) * (x)) + 1)
#define ECU_CC2(x) ((((A * (x)) - 5 * A) * (x) + 8 * A) * (x) - 4 * A)
    c[0] = ECU_CC2(x1 + 1);
    c[1] = ECU_CC1(x1);
    c[2] = ECU_CC1(x2);
    c[3] = ECU_CC2(x2 + 1);
#undef ECU_CC1
#undef ECU_CC2
    for (int k = 0; k < 4; k++) {
        int64_t v = i - 1 + k;
        idx[k] = v < 0 ? 0 : (v > in - 1 ? in - 1 : v);
    }
}

/* Forward: a thread per output; backward: dst = gx (zeroed by the launcher),
 * atomics. */
template <class T, bool BWD>
__global__ void ecu_upsample_bicubic_k(int64_t planes, int64_t IH, int64_t IW, int64_t OH,
                                       int64_t OW, int align_corners, double hscale,
                                       double wscale, const T* src, T* dst) {
    const int64_t ivol = IH * IW, ovol = OH * OW;
    ECU_RS_LOOP(e, planes * ovol) {
        int64_t pl = e / ovol, oh = (e / OW) % OH, ow = e % OW;
        int64_t hi[4], wi[4];
        T hc[4], wc[4];
        ecu_cubic_at<T>(IH, OH, align_corners, hscale, oh, hi, hc);
        ecu_cubic_at<T>(IW, OW, align_corners, wscale, ow, wi, wc);
        if (!BWD) {
            const T* x = src + pl * ivol;
            T acc = 0;
            for (int a = 0; a < 4; a++) {
                const T* row = x + hi[a] * IW;
                T r = 0;
                for (int b = 0; b < 4; b++) r += wc[b] * row[wi[b]];
                acc += hc[a] * r;
            }
            dst[e] = acc;
        } else {
            T* gx = dst + pl * ivol;
            const T g = src[e];
            for (int a = 0; a < 4; a++) {
                T ga = g * hc[a];
                for (int b = 0; b < 4; b++) atomicAdd(gx + hi[a] * IW + wi[b], ga * wc[b]);
            }
        }
    }
}

#endif
