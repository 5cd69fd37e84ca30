/* Sampling kernels for one scalar type, included by sampling.c once per type
 * with T (float, double) and F(name) (the type-suffixed name).
 *
 * Note [Grid sample coordinates]
 * A grid holds normalised coordinates in [-1, 1]; -1 and 1 are the centres of
 * the corner pixels (align_corners) or their outer edges (not).  Unnormalised
 * to pixel units, the padding mode maps a coordinate outside the input back
 * into it (border: clip; reflection: mirror at the edges or corner centres,
 * then clip) or leaves it to read zeros.  The backward multiplies the
 * gradient of a pixel coordinate by d(coordinate)/d(grid value): the
 * unnormalisation's scale, times +-1 or 0 from reflection and clipping (a
 * clipped coordinate has gradient 0, borders included), as PyTorch does. */

/* Unnormalise a grid value to pixel units; *g: its derivative. */
static inline T F(gs_unnormalize)(T c, int64_t size, int align_corners, T* g) {
    if (align_corners) {
        *g = (T)(size - 1) / 2;
        return ((c + 1) / 2) * (T)(size - 1);
    }
    *g = (T)size / 2;
    return ((c + 1) * (T)size - 1) / 2;
}

static inline T F(gs_clip)(T in, int64_t limit, T* g) {
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

/* Mirror `in` into [twice_low / 2, twice_high / 2]. */
static inline T F(gs_reflect)(T in, int64_t twice_low, int64_t twice_high, T* g) {
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

/* A pixel coordinate after the padding mode; *g is multiplied by its derivative. */
static inline T F(gs_pad)(T c, int64_t size, int padding, int align_corners, T* g) {
    T g1, g2;
    if (padding == EC_GS_PAD_BORDER) {
        c = F(gs_clip)(c, size, &g1);
        *g *= g1;
    } else if (padding == EC_GS_PAD_REFLECTION) {
        c = align_corners ? F(gs_reflect)(c, 0, 2 * (size - 1), &g1)
                          : F(gs_reflect)(c, -1, 2 * size - 1, &g1);
        c = F(gs_clip)(c, size, &g2);
        *g *= g1 * g2;
    }
    return c;
}

/* The source pixel coordinate of grid value c along a dim of `size`. */
static inline T F(gs_source)(T c, int64_t size, int padding, int align_corners, T* g) {
    c = F(gs_unnormalize)(c, size, align_corners, g);
    return F(gs_pad)(c, size, padding, align_corners, g);
}

/* floor(v) as an index; NaN, infinities and far-away values give a position
 * that is out of bounds for any size (no undefined conversion). */
static inline int64_t F(gs_floor)(T v) {
    if (!(v > (T)-1e15 && v < (T)1e15)) return INT64_MIN / 4;
    return (int64_t)floor((double)v);
}

static inline int64_t F(gs_round)(T v) {
    if (!(v > (T)-1e15 && v < (T)1e15)) return INT64_MIN / 4;
    return (int64_t)nearbyint((double)v);
}


/* Keys' cubic convolution (A = -0.75): weights of the 4 taps at -1, 0, 1, 2
 * for fraction t, and their derivatives in t. */
static inline void F(gs_cubic_coeffs)(T t, T* c) {
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

static inline void F(gs_cubic_coeffs_grad)(T t, T* c) {
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

/* A bicubic tap: the pixel the padding mode maps integer position (x, y) to,
 * or -1 when it reads zero. */
static inline int64_t F(gs_tap)(int64_t x, int64_t y, int64_t H, int64_t W, int padding,
                                int align_corners) {
    T g = 1;
    T fx = F(gs_pad)((T)x, W, padding, align_corners, &g);
    T fy = F(gs_pad)((T)y, H, padding, align_corners, &g);
    /* truncated toward zero, as PyTorch's static_cast (the position is whole
     * after padding anyway) */
    if (!(fx > (T)-1e15 && fx < (T)1e15 && fy > (T)-1e15 && fy < (T)1e15)) return -1;
    int64_t ix = (int64_t)fx, iy = (int64_t)fy;
    if (!gs_in(ix, W) || !gs_in(iy, H)) return -1;
    return iy * W + ix;
}

/* 2-D: x (N, C, H, W), grid (N, Ho, Wo, 2) holding (x, y), y (N, C, Ho, Wo). */
static void F(grid_sample_2d)(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Ho, int64_t Wo,
                              int mode, int padding, int align_corners, const T* x, const T* grid,
                              T* y) {
    const int64_t rows = N * Ho, plane = H * W, oplane = Ho * Wo;
    int nt = ec_threads_for(rows * Wo * C * (mode == EC_GS_BICUBIC ? 16 : 4), EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t n = r / Ho, oh = r % Ho;
        const T* xn = x + n * C * plane;
        T* yn = y + n * C * oplane + oh * Wo;
        for (int64_t ow = 0; ow < Wo; ow++) {
            const T* gp = grid + (r * Wo + ow) * 2;
            T g;
            if (mode == EC_GS_BICUBIC) {
                T ix = F(gs_unnormalize)(gp[0], W, align_corners, &g);
                T iy = F(gs_unnormalize)(gp[1], H, align_corners, &g);
                int64_t x0 = F(gs_floor)(ix), y0 = F(gs_floor)(iy);
                T cx[4], cy[4];
                F(gs_cubic_coeffs)(ix - (T)x0, cx);
                F(gs_cubic_coeffs)(iy - (T)y0, cy);
                int64_t tap[16];
                for (int j = 0; j < 4; j++)
                    for (int i = 0; i < 4; i++)
                        tap[j * 4 + i] =
                            F(gs_tap)(x0 - 1 + i, y0 - 1 + j, H, W, padding, align_corners);
                for (int64_t c = 0; c < C; c++) {
                    const T* xc = xn + c * plane;
                    T acc = 0;
                    for (int j = 0; j < 4; j++) {
                        T row = 0;
                        for (int i = 0; i < 4; i++) {
                            int64_t t = tap[j * 4 + i];
                            row += (t >= 0 ? xc[t] : (T)0) * cx[i];
                        }
                        acc += row * cy[j];
                    }
                    yn[c * oplane + ow] = acc;
                }
                continue;
            }
            T ix = F(gs_source)(gp[0], W, padding, align_corners, &g);
            T iy = F(gs_source)(gp[1], H, padding, align_corners, &g);
            if (mode == EC_GS_NEAREST) {
                int64_t px = F(gs_round)(ix), py = F(gs_round)(iy);
                int ok = gs_in(px, W) && gs_in(py, H);
                for (int64_t c = 0; c < C; c++)
                    yn[c * oplane + ow] = ok ? xn[c * plane + py * W + px] : (T)0;
                continue;
            }
            int64_t x0 = F(gs_floor)(ix), y0 = F(gs_floor)(iy);
            T e = (T)(x0 + 1) - ix, w = ix - (T)x0; /* distances to the east/west pixels */
            T s = (T)(y0 + 1) - iy, nn = iy - (T)y0;
            T wt[4] = {e * s, w * s, e * nn, w * nn}; /* nw, ne, sw, se */
            int64_t off[4];
            int ok[4] = {gs_in(x0, W) && gs_in(y0, H), gs_in(x0 + 1, W) && gs_in(y0, H),
                         gs_in(x0, W) && gs_in(y0 + 1, H), gs_in(x0 + 1, W) && gs_in(y0 + 1, H)};
            off[0] = y0 * W + x0;
            off[1] = off[0] + 1;
            off[2] = off[0] + W;
            off[3] = off[2] + 1;
            for (int64_t c = 0; c < C; c++) {
                const T* xc = xn + c * plane;
                T acc = 0;
                for (int k = 0; k < 4; k++)
                    if (ok[k]) acc += xc[off[k]] * wt[k];
                yn[c * oplane + ow] = acc;
            }
        }
    }
}

/* The gradients of grid_sample_2d: gx (zeroed here; may be NULL) and ggrid
 * (may be NULL).  Images run in parallel (each adds into its own gx). */
static void F(grid_sample_2d_backward)(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Ho,
                                       int64_t Wo, int mode, int padding, int align_corners,
                                       const T* gy, const T* x, const T* grid, T* gx, T* ggrid) {
    const int64_t plane = H * W, oplane = Ho * Wo;
    if (gx) memset(gx, 0, (size_t)(N * C * plane) * sizeof(T));
    int nt = ec_threads_for(N * oplane * C * (mode == EC_GS_BICUBIC ? 32 : 8), EC_GRAIN);
    if (nt > N) nt = (int)N;
    if (nt < 1) nt = 1;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const T* xn = x + n * C * plane;
        const T* gyn = gy + n * C * oplane;
        T* gxn = gx ? gx + n * C * plane : NULL;
        for (int64_t p = 0; p < oplane; p++) {
            const T* gp = grid + (n * oplane + p) * 2;
            T gmx = 1, gmy = 1, gix = 0, giy = 0;
            if (mode == EC_GS_BICUBIC) {
                T ix = F(gs_unnormalize)(gp[0], W, align_corners, &gmx);
                T iy = F(gs_unnormalize)(gp[1], H, align_corners, &gmy);
                int64_t x0 = F(gs_floor)(ix), y0 = F(gs_floor)(iy);
                T cx[4], cy[4], dx[4], dy[4];
                F(gs_cubic_coeffs)(ix - (T)x0, cx);
                F(gs_cubic_coeffs)(iy - (T)y0, cy);
                F(gs_cubic_coeffs_grad)(ix - (T)x0, dx);
                F(gs_cubic_coeffs_grad)(iy - (T)y0, dy);
                int64_t tap[16];
                for (int j = 0; j < 4; j++)
                    for (int i = 0; i < 4; i++)
                        tap[j * 4 + i] =
                            F(gs_tap)(x0 - 1 + i, y0 - 1 + j, H, W, padding, align_corners);
                for (int64_t c = 0; c < C; c++) {
                    T go = gyn[c * oplane + p];
                    const T* xc = xn + c * plane;
                    for (int j = 0; j < 4; j++)
                        for (int i = 0; i < 4; i++) {
                            int64_t t = tap[j * 4 + i];
                            if (t < 0) continue;
                            if (gxn) gxn[c * plane + t] += go * cx[i] * cy[j];
                            T v = xc[t];
                            gix -= v * dx[i] * cy[j] * go;
                            giy -= v * dy[j] * cx[i] * go;
                        }
                }
            } else {
                T ix = F(gs_source)(gp[0], W, padding, align_corners, &gmx);
                T iy = F(gs_source)(gp[1], H, padding, align_corners, &gmy);
                if (mode == EC_GS_NEAREST) {
                    int64_t px = F(gs_round)(ix), py = F(gs_round)(iy);
                    if (gxn && gs_in(px, W) && gs_in(py, H))
                        for (int64_t c = 0; c < C; c++)
                            gxn[c * plane + py * W + px] += gyn[c * oplane + p];
                    gmx = gmy = 0; /* nearest has no gradient w.r.t. the grid */
                } else {
                    int64_t x0 = F(gs_floor)(ix), y0 = F(gs_floor)(iy);
                    T e = (T)(x0 + 1) - ix, w = ix - (T)x0;
                    T s = (T)(y0 + 1) - iy, nn = iy - (T)y0;
                    T wt[4] = {e * s, w * s, e * nn, w * nn};
                    /* d(weight)/d(ix), d(weight)/d(iy) of nw, ne, sw, se */
                    T wx[4] = {-s, s, -nn, nn}, wy[4] = {-e, -w, e, w};
                    int ok[4] = {gs_in(x0, W) && gs_in(y0, H), gs_in(x0 + 1, W) && gs_in(y0, H),
                                 gs_in(x0, W) && gs_in(y0 + 1, H),
                                 gs_in(x0 + 1, W) && gs_in(y0 + 1, H)};
                    int64_t off[4];
                    off[0] = y0 * W + x0;
                    off[1] = off[0] + 1;
                    off[2] = off[0] + W;
                    off[3] = off[2] + 1;
                    for (int64_t c = 0; c < C; c++) {
                        T go = gyn[c * oplane + p];
                        const T* xc = xn + c * plane;
                        for (int k = 0; k < 4; k++) {
                            if (!ok[k]) continue;
                            if (gxn) gxn[c * plane + off[k]] += wt[k] * go;
                            T v = xc[off[k]] * go;
                            gix += v * wx[k];
                            giy += v * wy[k];
                        }
                    }
                }
            }
            if (ggrid) {
                T* gg = ggrid + (n * oplane + p) * 2;
                gg[0] = gmx * gix;
                gg[1] = gmy * giy;
            }
        }
    }
}

/* 3-D (bilinear, i.e. trilinear, and nearest): x (N, C, D, H, W), grid
 * (N, Do, Ho, Wo, 3) holding (x, y, z), y (N, C, Do, Ho, Wo).  With gy != NULL
 * it runs the backward instead: gx (zeroed here, may be NULL) and ggrid (may
 * be NULL) from gy. */
static void F(grid_sample_3d)(int64_t N, int64_t C, const int64_t* in3, const int64_t* out3,
                              int mode, int padding, int align_corners, const T* x, const T* grid,
                              T* y, const T* gy, T* gx, T* ggrid) {
    const int64_t D = in3[0], H = in3[1], W = in3[2];
    const int64_t vol = D * H * W, ovol = out3[0] * out3[1] * out3[2];
    const int backward = gy != NULL;
    if (gx) memset(gx, 0, (size_t)(N * C * vol) * sizeof(T));
    int nt = ec_threads_for(N * ovol * C * 8, EC_GRAIN);
    if (backward && nt > N) nt = (int)N; /* images in parallel: each adds into its own gx */
    if (nt < 1) nt = 1;
    const int64_t chunks = backward ? N : N * out3[0];
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < chunks; r++) {
        int64_t n = backward ? r : r / out3[0];
        int64_t p0 = backward ? 0 : (r % out3[0]) * out3[1] * out3[2];
        int64_t p1 = backward ? ovol : p0 + out3[1] * out3[2];
        const T* xn = x + n * C * vol;
        for (int64_t p = p0; p < p1; p++) {
            const T* gp = grid + (n * ovol + p) * 3;
            T gm[3] = {1, 1, 1}, gi[3] = {0, 0, 0};
            T ix = F(gs_source)(gp[0], W, padding, align_corners, &gm[0]);
            T iy = F(gs_source)(gp[1], H, padding, align_corners, &gm[1]);
            T iz = F(gs_source)(gp[2], D, padding, align_corners, &gm[2]);
            if (mode == EC_GS_NEAREST) {
                int64_t px = F(gs_round)(ix), py = F(gs_round)(iy), pz = F(gs_round)(iz);
                int ok = gs_in(px, W) && gs_in(py, H) && gs_in(pz, D);
                int64_t at = (pz * H + py) * W + px;
                for (int64_t c = 0; c < C; c++) {
                    if (!backward)
                        y[(n * C + c) * ovol + p] = ok ? xn[c * vol + at] : (T)0;
                    else if (gx && ok)
                        gx[(n * C + c) * vol + at] += gy[(n * C + c) * ovol + p];
                }
                gm[0] = gm[1] = gm[2] = 0;
            } else {
                int64_t x0 = F(gs_floor)(ix), y0 = F(gs_floor)(iy), z0 = F(gs_floor)(iz);
                /* fractions past the lower corner (f) and to the upper one (u) */
                T f[3] = {ix - (T)x0, iy - (T)y0, iz - (T)z0};
                T u[3] = {(T)(x0 + 1) - ix, (T)(y0 + 1) - iy, (T)(z0 + 1) - iz};
                for (int64_t c = 0; c < C; c++) {
                    const T* xc = xn + c * vol;
                    T acc = 0, go = backward ? gy[(n * C + c) * ovol + p] : 0;
                    for (int k = 0; k < 8; k++) {
                        int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
                        int64_t px = x0 + bx, py = y0 + by, pz = z0 + bz;
                        if (!(gs_in(px, W) && gs_in(py, H) && gs_in(pz, D))) continue;
                        T wx = bx ? f[0] : u[0], wy = by ? f[1] : u[1], wz = bz ? f[2] : u[2];
                        int64_t at = (pz * H + py) * W + px;
                        if (!backward) {
                            acc += xc[at] * (wx * wy * wz);
                            continue;
                        }
                        if (gx) gx[(n * C + c) * vol + at] += wx * wy * wz * go;
                        T v = xc[at] * go;
                        gi[0] += v * (bx ? 1 : -1) * wy * wz;
                        gi[1] += v * (by ? 1 : -1) * wx * wz;
                        gi[2] += v * (bz ? 1 : -1) * wx * wy;
                    }
                    if (!backward) y[(n * C + c) * ovol + p] = acc;
                }
            }
            if (backward && ggrid) {
                T* gg = ggrid + (n * ovol + p) * 3;
                for (int d = 0; d < 3; d++) gg[d] = gm[d] * gi[d];
            }
        }
    }
}

/* Note [CTC in log space]
 * For one batch element with target l (length L) and input length Ti, the
 * extended target l' = (blank, l1, blank, l2, ..., lL, blank) has 2L + 1
 * symbols.  alpha[t][s] = log P(l'_1..s emitted by time t); the recursion adds
 * the previous s, s - 1, and s - 2 when l'_s is no blank and differs from
 * l'_{s-2}.  The loss is -logsumexp(alpha[Ti-1][2L], alpha[Ti-1][2L-1]).
 * beta runs the same recursion backwards; PyTorch's gradient w.r.t.
 * log_probs (which assumes they come out of a log_softmax) is
 *   grad[t][c] = (exp(lp[t][c]) - exp(lse_{s: l'_s = c}(alpha + beta)[t][s]
 *                                      + nll - lp[t][c])) * grad_out
 * and zero for t >= Ti. */

static inline T F(lse3)(T a, T b, T c) {
    T m = a > b ? a : b;
    if (c > m) m = c;
    if (m == -(T)INFINITY) return m;
    return (T)log((double)(exp((double)(a - m)) + exp((double)(b - m)) + exp((double)(c - m)))) + m;
}

static inline T F(lse2)(T a, T b) {
    T m = a > b ? a : b;
    if (m == -(T)INFINITY) return m;
    return (T)log((double)(exp((double)(a - m)) + exp((double)(b - m)))) + m;
}

/* log_probs lp (Tmax, N, C) contiguous; targets of element b at tg + toff[b];
 * log_alpha (N, Tmax, 2 Smax + 1) filled here; nll (N). */
static void F(ctc_forward)(int64_t Tmax, int64_t N, int64_t C, int64_t S2, const T* lp,
                           const int64_t* tg, const int64_t* toff, const int64_t* ilen,
                           const int64_t* tlen, int64_t blank, T* la, T* nll) {
    int nt = ec_threads_for(N * Tmax * S2 * 8, EC_GRAIN);
    if (nt > N) nt = (int)N;
    if (nt < 1) nt = 1;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int64_t b = 0; b < N; b++) {
        T* a = la + b * Tmax * S2;
        for (int64_t i = 0; i < Tmax * S2; i++) a[i] = -(T)INFINITY;
        const int64_t Ti = ilen[b], L = tlen[b], *l = tg + toff[b];
        if (Ti == 0) {
            nll[b] = L == 0 ? (T)0 : (T)INFINITY;
            continue;
        }
#define LP(t, c) lp[((t) * N + b) * C + (c)]
#define PRIME(s) ((s) % 2 ? l[(s) / 2] : blank)
        a[0] = LP(0, blank);
        if (L > 0) a[1] = LP(0, l[0]);
        for (int64_t t = 1; t < Ti; t++) {
            const T* prev = a + (t - 1) * S2;
            T* cur = a + t * S2;
            for (int64_t s = 0; s <= 2 * L; s++) {
                int64_t c = PRIME(s);
                T a1 = prev[s], a2 = s > 0 ? prev[s - 1] : -(T)INFINITY, a3 = -(T)INFINITY;
                if (s > 1 && PRIME(s - 2) != c) a3 = prev[s - 2];
                cur[s] = F(lse3)(a1, a2, a3) + LP(t, c);
            }
        }
        const T* last = a + (Ti - 1) * S2;
        nll[b] = L == 0 ? -last[0] : -F(lse2)(last[2 * L], last[2 * L - 1]);
    }
}

/* grad (Tmax, N, C) from grad_out (N values, stride gstride: 0 for one shared
 * value), the forward's nll and log_alpha; beta: scratch of N * Tmax * S2. */
static void F(ctc_backward)(int64_t Tmax, int64_t N, int64_t C, int64_t S2, const T* lp,
                            const int64_t* tg, const int64_t* toff, const int64_t* ilen,
                            const int64_t* tlen, int64_t blank, const T* la, const T* nll,
                            const T* gout, int64_t gstride, int zero_infinity, T* beta, T* grad) {
    int nt = ec_threads_for(N * Tmax * (S2 + C) * 8, EC_GRAIN);
    if (nt > N) nt = (int)N;
    if (nt < 1) nt = 1;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int64_t b = 0; b < N; b++) {
        const int64_t Ti = ilen[b], L = tlen[b], *l = tg + toff[b];
        const T* a = la + b * Tmax * S2;
        T* be = beta + b * Tmax * S2;
        T z = nll[b], go = gout[b * gstride];
#define G(t, c) grad[((t) * N + b) * C + (c)]
        if (zero_infinity && z == (T)INFINITY) {
            for (int64_t t = 0; t < Tmax; t++)
                for (int64_t c = 0; c < C; c++) G(t, c) = 0;
            continue;
        }
        /* G first collects lse of alpha + beta per symbol (log space) */
        for (int64_t t = 0; t < Tmax; t++)
            for (int64_t c = 0; c < C; c++) G(t, c) = -(T)INFINITY;
        if (Ti > 0) {
            for (int64_t s = 0; s <= 2 * L; s++) be[(Ti - 1) * S2 + s] = -(T)INFINITY;
            T* lastb = be + (Ti - 1) * S2;
            const T* lasta = a + (Ti - 1) * S2;
            lastb[2 * L] = LP(Ti - 1, blank);
            G(Ti - 1, blank) = lasta[2 * L] + lastb[2 * L];
            if (L > 0) {
                int64_t c = l[L - 1];
                lastb[2 * L - 1] = LP(Ti - 1, c);
                G(Ti - 1, c) = lasta[2 * L - 1] + lastb[2 * L - 1];
            }
        }
        for (int64_t t = Ti - 2; t >= 0; t--) {
            const T* next = be + (t + 1) * S2;
            T* cur = be + t * S2;
            const T* at = a + t * S2;
            for (int64_t s = 0; s <= 2 * L; s++) {
                int64_t c = PRIME(s);
                T b1 = next[s], b2 = s < 2 * L ? next[s + 1] : -(T)INFINITY, b3 = -(T)INFINITY;
                if (s < 2 * L - 1 && PRIME(s + 2) != c) b3 = next[s + 2];
                cur[s] = F(lse3)(b1, b2, b3) + LP(t, c);
                G(t, c) = F(lse2)(G(t, c), at[s] + cur[s]);
            }
        }
        for (int64_t t = 0; t < Tmax; t++)
            for (int64_t c = 0; c < C; c++) {
                if (t >= Ti) {
                    G(t, c) = 0;
                    continue;
                }
                T p = LP(t, c);
                G(t, c) = ((T)exp((double)p) - (T)exp((double)(G(t, c) + z - p))) * go;
            }
#undef G
#undef LP
#undef PRIME
    }
}
