/* Pooling kernels for one scalar type, included by pool.c once per type with
 *   T        the scalar type (float, double)
 *   F(name)  the type-suffixed name of a function
 * Windows follow PyTorch's CPU kernels exactly (which element wins a tie, how
 * NaN propagates, what a window counts), so values and indices match. */

/* The taps e in [*lo, *hi) of a window of k taps (dilation d, padding p) that
 * reach a row of `in` elements for some of its `out` outputs (stride s): the
 * others read nothing, and a huge kernel must not cost a pass per tap. */
static inline void F(tap_span)(int64_t k, int64_t d, int64_t p, int64_t s, int64_t in,
                               int64_t out, int64_t* lo, int64_t* hi) {
    int64_t first = p - (out - 1) * s; /* e * d must reach this */
    int64_t l = first <= 0 ? 0 : (first + d - 1) / d;
    int64_t h = in + p <= 0 ? 0 : (in - 1 + p) / d + 1;
    if (h > k) h = k;
    *lo = l;
    *hi = h > l ? h : l;
}

/* Max pooling of planes' output rows [r0, r1) (a row = one (plane, od, oh)).
 * The index is the flat position in the input plane; NaN wins (the last NaN
 * of the window); a window starts at its first element inside the input.
 * Taps run outermost and the output row innermost (vectorised); each output
 * still sees its window's elements in row-major order, as PyTorch's loop. */
EC_VEC_CLONES static void F(max_pool_rows)(const ec_geom* g, const T* x, T* y, int64_t* idx,
                                           int64_t r0, int64_t r1) {
    const int64_t ID = g->in[0], IH = g->in[1], IW = g->in[2];
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];
    const int64_t sw = g->s[2], pw = g->p[2], dw = g->d[2];
    const int64_t ivol = ID * IH * IW;
    for (int64_t r = r0; r < r1; r++) {
        int64_t pl = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;
        const T* xp = x + pl * ivol;
        T* yr = y + r * OW;
        int64_t* ir = idx + r * OW;
        int64_t d0 = od * g->s[0] - g->p[0], h0 = oh * g->s[1] - g->p[1];
        int64_t d1 = d0 + (g->k[0] - 1) * g->d[0] + 1, h1 = h0 + (g->k[1] - 1) * g->d[1] + 1;
        if (d1 > ID) d1 = ID;
        if (h1 > IH) h1 = IH;
        while (d0 < 0) d0 += g->d[0];
        while (h0 < 0) h0 += g->d[1];
        for (int64_t ow = 0; ow < OW; ow++) {
            int64_t w0 = ow * sw - pw;
            while (w0 < 0) w0 += dw;
            yr[ow] = -INFINITY;
            ir[ow] = (d0 * IH + h0) * IW + w0;
        }
        int64_t e_lo, e_hi;
        F(tap_span)(g->k[2], dw, pw, sw, IW, OW, &e_lo, &e_hi);
        for (int64_t id = d0; id < d1; id += g->d[0])
            for (int64_t ih = h0; ih < h1; ih += g->d[1]) {
                const int64_t row = (id * IH + ih) * IW;
                const T* xr = xp + row;
                for (int64_t e = e_lo; e < e_hi; e++) {
                    int64_t off = e * dw - pw, lo, hi;
                    ec_tap_range(off, sw, IW, OW, &lo, &hi);
                    for (int64_t ow = lo; ow < hi; ow++) {
                        int64_t iw = ow * sw + off;
                        T v = xr[iw];
                        int take = (v > yr[ow]) | (v != v);
                        yr[ow] = take ? v : yr[ow];
                        ir[ow] = take ? row + iw : ir[ow];
                    }
                }
            }
    }
}

/* 2x2 windows, stride 2, no padding or dilation, 2-D: the common case, with
 * the same tie and NaN rules unrolled. */
EC_VEC_CLONES static void F(max_pool_2x2_rows)(const ec_geom* g, const T* x, T* y, int64_t* idx, int64_t r0,
                                 int64_t r1) {
    const int64_t IH = g->in[1], IW = g->in[2], OH = g->out[1], OW = g->out[2];
    for (int64_t r = r0; r < r1; r++) {
        int64_t pl = r / OH, oh = r % OH;
        const T* a = x + pl * IH * IW + 2 * oh * IW;
        const T* b = a + IW;
        T* yr = y + r * OW;
        int64_t* ir = idx + r * OW;
        int64_t base = 2 * oh * IW;
        for (int64_t ow = 0; ow < OW; ow++) {
            int64_t w = 2 * ow, k = base + w;
            T m = -INFINITY;
/* branchless (random data mispredicts), so that it vectorises */
#define EC_TAKE(v, pos)                          \
    {                                            \
        T v_ = (v);                              \
        int t_ = (v_ > m) | (v_ != v_);          \
        m = t_ ? v_ : m;                         \
        k = t_ ? (pos) : k;                      \
    }
            EC_TAKE(a[w], base + w)
            EC_TAKE(a[w + 1], base + w + 1)
            EC_TAKE(b[w], base + IW + w)
            EC_TAKE(b[w + 1], base + IW + w + 1)
#undef EC_TAKE
            yr[ow] = m;
            ir[ow] = k;
        }
    }
}

static int F(max_pool_forward)(int64_t planes, const ec_geom* g, const T* x, T* y, int64_t* idx) {
    const int64_t rows = planes * g->out[0] * g->out[1];
    const int64_t kvol = ec_geom_k_vol(g);
    int fast = g->in[0] == 1 && g->k[0] == 1 && g->k[1] == 2 && g->k[2] == 2 && g->s[1] == 2 &&
               g->s[2] == 2 && g->p[1] == 0 && g->p[2] == 0 && g->d[1] == 1 && g->d[2] == 1 &&
               2 * g->out[1] <= g->in[1] && 2 * g->out[2] <= g->in[2];
    int nt = ec_threads_for(rows * g->out[2] * kvol, EC_GRAIN);
#pragma omp parallel num_threads(nt)
    {
        int t = ec_thread_num(), n = nt;
#ifdef _OPENMP
        n = omp_get_num_threads();
#endif
        int64_t lo = rows * t / n, hi = rows * (t + 1) / n;
        if (fast) F(max_pool_2x2_rows)(g, x, y, idx, lo, hi);
        else F(max_pool_rows)(g, x, y, idx, lo, hi);
    }
    return EC_OK;
}

/* Average pooling.  A window spans [start, start + k) clipped to the padded
 * input, which gives the count with padding; then clipped to the input, which
 * gives the elements summed and the count without padding. */
static inline void F(avg_window)(int64_t o, int64_t s, int64_t p, int64_t k, int64_t n,
                                 int64_t* lo, int64_t* hi, int64_t* padded) {
    int64_t a = o * s - p, b = a + k;
    if (b > n + p) b = n + p;
    *padded = b - a;
    if (a < 0) a = 0;
    if (b > n) b = n;
    *lo = a;
    *hi = b;
}

/* Sums of one output row (taps outermost, the row innermost: vectorised),
 * then each divided by its window's count. */
EC_VEC_CLONES static void F(avg_pool_row)(const ec_geom* g, int count_include_pad, int64_t divisor,
                                          const T* xp, int64_t od, int64_t oh, T* yr) {
    const int64_t ID = g->in[0], IH = g->in[1], IW = g->in[2], OW = g->out[2];
    const int64_t sw = g->s[2], pw = g->p[2];
    int64_t d0, d1, pd, h0, h1, ph;
    F(avg_window)(od, g->s[0], g->p[0], g->k[0], ID, &d0, &d1, &pd);
    F(avg_window)(oh, g->s[1], g->p[1], g->k[1], IH, &h0, &h1, &ph);
    for (int64_t ow = 0; ow < OW; ow++) yr[ow] = 0;
    int64_t e_lo, e_hi;
    F(tap_span)(g->k[2], 1, pw, sw, IW, OW, &e_lo, &e_hi);
    for (int64_t id = d0; id < d1; id++)
        for (int64_t ih = h0; ih < h1; ih++) {
            const T* xr = xp + (id * IH + ih) * IW;
            for (int64_t e = e_lo; e < e_hi; e++) {
                int64_t off = e - pw, lo, hi;
                ec_tap_range(off, sw, IW, OW, &lo, &hi);
                for (int64_t ow = lo; ow < hi; ow++) yr[ow] += xr[ow * sw + off];
            }
        }
    for (int64_t ow = 0; ow < OW; ow++) {
        int64_t w0, w1, pwid;
        F(avg_window)(ow, sw, pw, g->k[2], IW, &w0, &w1, &pwid);
        if (d0 >= d1 || h0 >= h1 || w0 >= w1) {
            yr[ow] = 0;
            continue;
        }
        int64_t div = divisor ? divisor
                              : (count_include_pad ? pd * ph * pwid : (d1 - d0) * (h1 - h0) * (w1 - w0));
        yr[ow] = yr[ow] / (T)div;
    }
}

static int F(avg_pool_forward)(int64_t planes, const ec_geom* g, int count_include_pad,
                               int64_t divisor, const T* x, T* y) {
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];
    const int64_t rows = planes * OD * OH, ivol = ec_geom_in_vol(g);
    int nt = ec_threads_for(rows * OW * ec_geom_k_vol(g), EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t pl = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;
        F(avg_pool_row)(g, count_include_pad, divisor, x + pl * ivol, od, oh, y + r * OW);
    }
    return EC_OK;
}

static int F(avg_pool_backward)(int64_t planes, const ec_geom* g, int count_include_pad,
                                int64_t divisor, const T* gy, T* gx) {
    const int64_t ID = g->in[0], IH = g->in[1], IW = g->in[2];
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];
    const int64_t ivol = ID * IH * IW, ovol = OD * OH * OW;
    int nt = ec_threads_for(planes * ovol * ec_geom_k_vol(g), EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        T* gp = gx + pl * ivol;
        const T* gyp = gy + pl * ovol;
        memset(gp, 0, sizeof(T) * (size_t)ivol);
        for (int64_t od = 0; od < OD; od++) {
            int64_t d0, d1, pd;
            F(avg_window)(od, g->s[0], g->p[0], g->k[0], ID, &d0, &d1, &pd);
            for (int64_t oh = 0; oh < OH; oh++) {
                int64_t h0, h1, ph;
                F(avg_window)(oh, g->s[1], g->p[1], g->k[1], IH, &h0, &h1, &ph);
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t w0, w1, pw;
                    F(avg_window)(ow, g->s[2], g->p[2], g->k[2], IW, &w0, &w1, &pw);
                    if (d0 >= d1 || h0 >= h1 || w0 >= w1) continue;
                    int64_t div = divisor ? divisor
                                          : (count_include_pad ? pd * ph * pw
                                                               : (d1 - d0) * (h1 - h0) * (w1 - w0));
                    T v = gyp[(od * OH + oh) * OW + ow] / (T)div;
                    for (int64_t id = d0; id < d1; id++)
                        for (int64_t ih = h0; ih < h1; ih++) {
                            T* xr = gp + (id * IH + ih) * IW;
                            for (int64_t iw = w0; iw < w1; iw++) xr[iw] += v;
                        }
                }
            }
        }
    }
    return EC_OK;
}

/* Adaptive windows: output o of n_out over n_in covers
 * [floor(o * n_in / n_out), ceil((o + 1) * n_in / n_out)). */
static inline void F(adaptive_window)(int64_t o, int64_t n_out, int64_t n_in, int64_t* lo,
                                      int64_t* hi) {
    *lo = (o * n_in) / n_out;
    *hi = ((o + 1) * n_in + n_out - 1) / n_out;
}

static int F(adaptive_pool_forward)(int is_max, int64_t planes, const int64_t* in3,
                                    const int64_t* out3, const T* x, T* y, int64_t* idx) {
    const int64_t ID = in3[0], IH = in3[1], IW = in3[2], OD = out3[0], OH = out3[1], OW = out3[2];
    const int64_t rows = planes * OD * OH, ivol = ID * IH * IW;
    int64_t wvol = ((ID + OD - 1) / OD + 1) * ((IH + OH - 1) / OH + 1) * ((IW + OW - 1) / OW + 1);
    int nt = ec_threads_for(rows * OW * wvol, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t pl = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;
        int64_t d0, d1, h0, h1;
        F(adaptive_window)(od, OD, ID, &d0, &d1);
        F(adaptive_window)(oh, OH, IH, &h0, &h1);
        const T* xp = x + pl * ivol;
        for (int64_t ow = 0; ow < OW; ow++) {
            int64_t w0, w1;
            F(adaptive_window)(ow, OW, IW, &w0, &w1);
            if (is_max) {
                T m = -INFINITY;
                int64_t best = (d0 * IH + h0) * IW + w0;
                for (int64_t id = d0; id < d1; id++)
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            T v = xp[(id * IH + ih) * IW + iw];
                            if (v > m || isnan(v)) {
                                m = v;
                                best = (id * IH + ih) * IW + iw;
                            }
                        }
                y[r * OW + ow] = m;
                idx[r * OW + ow] = best;
            } else {
                T sum = 0;
                for (int64_t id = d0; id < d1; id++)
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) sum += xp[(id * IH + ih) * IW + iw];
                y[r * OW + ow] = sum / (T)((d1 - d0) * (h1 - h0) * (w1 - w0));
            }
        }
    }
    return EC_OK;
}

static int F(adaptive_avg_pool_backward)(int64_t planes, const int64_t* in3, const int64_t* out3,
                                         const T* gy, T* gx) {
    const int64_t ID = in3[0], IH = in3[1], IW = in3[2], OD = out3[0], OH = out3[1], OW = out3[2];
    const int64_t ivol = ID * IH * IW, ovol = OD * OH * OW;
    int nt = ec_threads_for(planes * (ivol + ovol) * 4, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        T* gp = gx + pl * ivol;
        const T* gyp = gy + pl * ovol;
        memset(gp, 0, sizeof(T) * (size_t)ivol);
        for (int64_t od = 0; od < OD; od++) {
            int64_t d0, d1;
            F(adaptive_window)(od, OD, ID, &d0, &d1);
            for (int64_t oh = 0; oh < OH; oh++) {
                int64_t h0, h1;
                F(adaptive_window)(oh, OH, IH, &h0, &h1);
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t w0, w1;
                    F(adaptive_window)(ow, OW, IW, &w0, &w1);
                    T v = gyp[(od * OH + oh) * OW + ow] / (T)((d1 - d0) * (h1 - h0) * (w1 - w0));
                    for (int64_t id = d0; id < d1; id++)
                        for (int64_t ih = h0; ih < h1; ih++) {
                            T* xr = gp + (id * IH + ih) * IW;
                            for (int64_t iw = w0; iw < w1; iw++) xr[iw] += v;
                        }
                }
            }
        }
    }
    return EC_OK;
}

/* gx[p, idx[p, j]] += gy[p, j] (gx zeroed first): the backward of max pooling.
 * Indices come from the caller, so each is checked; *bad receives a bad one. */
static int F(index_scatter_add)(int64_t planes, int64_t in_vol, int64_t out_vol, const T* gy,
                                const int64_t* idx, T* gx, int64_t* bad) {
    int nt = ec_threads_for(planes * (in_vol + out_vol), EC_GRAIN);
    int failed = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : failed)
    for (int64_t pl = 0; pl < planes; pl++) {
        T* gp = gx + pl * in_vol;
        const T* gyp = gy + pl * out_vol;
        const int64_t* ip = idx + pl * out_vol;
        memset(gp, 0, sizeof(T) * (size_t)in_vol);
        for (int64_t j = 0; j < out_vol; j++) {
            int64_t k = ip[j];
            if (k < 0 || k >= in_vol) {
                failed = 1;
                *bad = k;
                continue;
            }
            gp[k] += gyp[j];
        }
    }
    return failed;
}

/* y[p, j] = x[p, idx[p, j]]. */
static int F(index_gather)(int64_t planes, int64_t in_vol, int64_t out_vol, const T* x,
                           const int64_t* idx, T* y, int64_t* bad) {
    int nt = ec_threads_for(planes * out_vol, EC_GRAIN);
    int failed = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : failed)
    for (int64_t pl = 0; pl < planes; pl++) {
        const T* xp = x + pl * in_vol;
        const int64_t* ip = idx + pl * out_vol;
        T* yp = y + pl * out_vol;
        for (int64_t j = 0; j < out_vol; j++) {
            int64_t k = ip[j];
            if (k < 0 || k >= in_vol) {
                failed = 1;
                *bad = k;
                yp[j] = 0;
                continue;
            }
            yp[j] = xp[k];
        }
    }
    return failed;
}
