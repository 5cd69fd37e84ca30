/* Resampling kernels for one scalar type, included by resample.c once per type
 * with T (float, double) and F(name) (the type-suffixed name).  Source indices
 * and weights are computed in T, as PyTorch's CPU kernels compute them in the
 * input's type, so that values match to rounding. */

/* Where output position o of a dim reads (PyTorch's area_pixel_compute_source_index). */
static inline T F(source_index)(T scale, int64_t o, int align_corners, int cubic) {
    if (align_corners) return scale * (T)o;
    T src = scale * ((T)o + (T)0.5) - (T)0.5;
    return (!cubic && src < 0) ? (T)0 : src;
}

/* in / out, or 1 / scale when the caller gave a scale factor; (in-1)/(out-1) with
 * align_corners. */
static inline T F(area_scale)(int64_t in, int64_t out, int align_corners, double scale) {
    if (align_corners) return out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0;
    return scale > 0 ? (T)(1.0 / scale) : (T)in / (T)out;
}

/* floor of the source index, at most in - 1, and the fraction past it in [0, 1]. */
static inline void F(guard_index)(T real, int64_t in, int64_t* index, T* lambda) {
    int64_t i = (int64_t)floor((double)real);
    if (i > in - 1) i = in - 1;
    T l = real - (T)i;
    if (l < 0) l = 0;
    if (l > 1) l = 1;
    *index = i;
    *lambda = l;
}

/* Linear tables of one dim: i0, i1 and their weights l0, l1 per output position. */
static void F(linear_table)(int64_t in, int64_t out, int align_corners, double scale, int64_t* i0,
                            int64_t* i1, T* l0, T* l1) {
    T ratio = F(area_scale)(in, out, align_corners, scale);
    for (int64_t o = 0; o < out; o++) {
        if (in == out) {
            i0[o] = i1[o] = o;
            l0[o] = 1;
            l1[o] = 0;
            continue;
        }
        T lam;
        F(guard_index)(F(source_index)(ratio, o, align_corners, 0), in, &i0[o], &lam);
        i1[o] = i0[o] + (i0[o] < in - 1 ? 1 : 0);
        l1[o] = lam;
        l0[o] = (T)1 - lam;
    }
}

typedef struct F(linear_tables) {
    int64_t *i0[3], *i1[3];
    T *l0[3], *l1[3];
    void* mem;
} F(linear_tables);

static int F(linear_tables_make)(F(linear_tables) * t, const int64_t* in3, const int64_t* out3,
                                 int align_corners, const double* scales) {
    int64_t total = out3[0] + out3[1] + out3[2];
    t->mem = malloc((size_t)(total + 1) * (2 * sizeof(int64_t) + 2 * sizeof(T)));
    if (!t->mem) return ec_fail(EC_ERR_NOMEM, "interpolate: no scratch memory");
    int64_t* ip = (int64_t*)t->mem;
    T* lp = (T*)(ip + 2 * total);
    for (int d = 0; d < 3; d++) {
        t->i0[d] = ip;
        t->i1[d] = ip + out3[d];
        ip += 2 * out3[d];
        t->l0[d] = lp;
        t->l1[d] = lp + out3[d];
        lp += 2 * out3[d];
        F(linear_table)(in3[d], out3[d], align_corners, scales[d], t->i0[d], t->i1[d], t->l0[d],
                        t->l1[d]);
    }
    return EC_OK;
}

/* Linear, bilinear and trilinear: a separable blend of 2, 4 or 8 neighbours.  A
 * dim of size 1 in and out (the D of a 2-D op) contributes one neighbour. */
static int F(upsample_linear)(int backward, int64_t planes, const int64_t* in3, const int64_t* out3,
                              int align_corners, const double* scales, const T* src, T* dst) {
    F(linear_tables) t;
    int st = F(linear_tables_make)(&t, in3, out3, align_corners, scales);
    if (st) return st;
    const int64_t ID = in3[0], IH = in3[1], IW = in3[2], OD = out3[0], OH = out3[1], OW = out3[2];
    const int64_t ivol = ID * IH * IW, ovol = OD * OH * OW;
    const int nd = (ID == 1 && OD == 1) ? 1 : 2; /* neighbours along D */
    int nt = ec_threads_for(planes * ovol * 4 * nd, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        const T* x = backward ? NULL : src + pl * ivol;
        T* y = backward ? NULL : dst + pl * ovol;
        const T* gy = backward ? src + pl * ovol : NULL;
        T* gx = backward ? dst + pl * ivol : NULL;
        if (backward) memset(gx, 0, sizeof(T) * (size_t)ivol);
        for (int64_t od = 0; od < OD; od++) {
            int64_t dd[2] = {t.i0[0][od], t.i1[0][od]};
            T dl[2] = {t.l0[0][od], t.l1[0][od]};
            for (int64_t oh = 0; oh < OH; oh++) {
                int64_t h0 = t.i0[1][oh], h1 = t.i1[1][oh];
                T hl0 = t.l0[1][oh], hl1 = t.l1[1][oh];
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t w0 = t.i0[2][ow], w1 = t.i1[2][ow];
                    T wl0 = t.l0[2][ow], wl1 = t.l1[2][ow];
                    int64_t o = (od * OH + oh) * OW + ow;
                    if (!backward) {
                        T acc = 0;
                        for (int k = 0; k < nd; k++) {
                            const T* p = x + dd[k] * IH * IW;
                            T v = hl0 * (wl0 * p[h0 * IW + w0] + wl1 * p[h0 * IW + w1]) +
                                  hl1 * (wl0 * p[h1 * IW + w0] + wl1 * p[h1 * IW + w1]);
                            acc = nd == 1 ? v : acc + dl[k] * v;
                        }
                        y[o] = acc;
                    } else {
                        for (int k = 0; k < nd; k++) {
                            T g = nd == 1 ? gy[o] : gy[o] * dl[k];
                            T* p = gx + dd[k] * IH * IW;
                            p[h0 * IW + w0] += g * hl0 * wl0;
                            p[h0 * IW + w1] += g * hl0 * wl1;
                            p[h1 * IW + w0] += g * hl1 * wl0;
                            p[h1 * IW + w1] += g * hl1 * wl1;
                        }
                    }
                }
            }
        }
    }
    free(t.mem);
    return EC_OK;
}

/* Cubic convolution weights (Keys, A = -0.75, as PyTorch) of the 4 neighbours
 * of a point at fraction t past its second one. */
static inline void F(cubic_coeffs)(T c[4], T t) {
    const T A = (T)-0.75;
    T x1 = t, x2 = (T)1 - t;
#define EC_CC1(x) ((((A + 2) * (x) - (A + 3)) * (x) * (x)) + 1)
#define EC_CC2(x) ((((A * (x)) - 5 * A) * (x) + 8 * A) * (x) - 4 * A)
    c[0] = EC_CC2(x1 + 1);
    c[1] = EC_CC1(x1);
    c[2] = EC_CC1(x2);
    c[3] = EC_CC2(x2 + 1);
#undef EC_CC1
#undef EC_CC2
}

static inline int64_t F(clampi)(int64_t v, int64_t n) { return v < 0 ? 0 : (v > n - 1 ? n - 1 : v); }

/* Bicubic (2-D): 4 x 4 neighbours, indices clamped to the border. */
static int F(upsample_bicubic)(int backward, int64_t planes, int64_t IH, int64_t IW, int64_t OH,
                               int64_t OW, int align_corners, const double* scales, const T* src,
                               T* dst) {
    int64_t* idx = malloc(sizeof(int64_t) * (size_t)(4 * (OH + OW) + 1));
    T* co = malloc(sizeof(T) * (size_t)(4 * (OH + OW) + 1));
    if (!idx || !co) {
        free(idx);
        free(co);
        return ec_fail(EC_ERR_NOMEM, "interpolate: no scratch memory");
    }
    T hs = F(area_scale)(IH, OH, align_corners, scales[1]);
    T ws = F(area_scale)(IW, OW, align_corners, scales[2]);
    for (int64_t o = 0; o < OH; o++) {
        int64_t i;
        T l;
        F(guard_index)(F(source_index)(hs, o, align_corners, 1), IH, &i, &l);
        F(cubic_coeffs)(co + 4 * o, l);
        for (int k = 0; k < 4; k++) idx[4 * o + k] = F(clampi)(i - 1 + k, IH);
    }
    int64_t* wi = idx + 4 * OH;
    T* wc = co + 4 * OH;
    for (int64_t o = 0; o < OW; o++) {
        int64_t i;
        T l;
        F(guard_index)(F(source_index)(ws, o, align_corners, 1), IW, &i, &l);
        F(cubic_coeffs)(wc + 4 * o, l);
        for (int k = 0; k < 4; k++) wi[4 * o + k] = F(clampi)(i - 1 + k, IW);
    }
    const int64_t ivol = IH * IW, ovol = OH * OW;
    int nt = ec_threads_for(planes * ovol * 16, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        if (!backward) {
            const T* x = src + pl * ivol;
            T* y = dst + pl * ovol;
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    T acc = 0;
                    for (int a = 0; a < 4; a++) {
                        const T* row = x + idx[4 * oh + a] * IW;
                        T r = 0;
                        for (int b = 0; b < 4; b++) r += wc[4 * ow + b] * row[wi[4 * ow + b]];
                        acc += co[4 * oh + a] * r;
                    }
                    y[oh * OW + ow] = acc;
                }
        } else {
            const T* gy = src + pl * ovol;
            T* gx = dst + pl * ivol;
            memset(gx, 0, sizeof(T) * (size_t)ivol);
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    T g = gy[oh * OW + ow];
                    for (int a = 0; a < 4; a++) {
                        T* row = gx + idx[4 * oh + a] * IW;
                        T ga = g * co[4 * oh + a];
                        for (int b = 0; b < 4; b++) row[wi[4 * ow + b]] += ga * wc[4 * ow + b];
                    }
                }
        }
    }
    free(idx);
    free(co);
    return EC_OK;
}

/* gx[p, md[od], mh[oh], mw[ow]] += gy[p, od, oh, ow] (gx zeroed first): the
 * backward of an index-map gather (padding modes, nearest). */
static void F(map_scatter_add)(int64_t planes, const int64_t* in3, const int64_t* out3,
                               const int64_t* md, const int64_t* mh, const int64_t* mw, const T* gy,
                               T* gx) {
    const int64_t IH = in3[1], IW = in3[2], OD = out3[0], OH = out3[1], OW = out3[2];
    const int64_t ivol = in3[0] * IH * IW, ovol = OD * OH * OW;
    int nt = ec_threads_for(planes * (ovol + ivol), EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        T* gp = gx + pl * ivol;
        const T* g = gy + pl * ovol;
        memset(gp, 0, sizeof(T) * (size_t)ivol);
        for (int64_t od = 0; od < OD; od++)
            for (int64_t oh = 0; oh < OH; oh++) {
                T* row = gp + (md[od] * IH + mh[oh]) * IW;
                const T* gr = g + (od * OH + oh) * OW;
                for (int64_t ow = 0; ow < OW; ow++) row[mw[ow]] += gr[ow];
            }
    }
}
