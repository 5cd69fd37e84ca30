/* Convolution kernels for one scalar type, included by conv.c once per type with
 *   T        the scalar type (float, double)
 *   F(name)  the type-suffixed name of a function
 *   GEMM     the cblas gemm of T
 * See conv.c for the algorithms and Note [Spatial geometry] in spatial.h. */

/* Sum and dot product with 8 independent partial sums, so that the compiler
 * vectorises them (a single accumulator is a serial chain without
 * -ffast-math). */
static inline T F(sum8)(const T* p, int64_t n) {
    T a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += p[i + j];
    for (; i < n; i++) s += p[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + s;
}

static inline T F(dot8)(const T* x, const T* y, int64_t n) {
    T a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += x[i + j] * y[i + j];
    for (; i < n; i++) s += x[i] * y[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + s;
}

/* ---------------------------------------------------------- im2col / col2im */

/* Rows [c0, c1) of the column matrix of one image: row r = (ch, a, b, e) holds,
 * for every output position, the input element under kernel tap (a, b, e) of
 * channel ch (0 in the padding).  col is (C * kvol) x L, its rows ld elements
 * apart (ld = L, or wider when several images share it: Note [Batched GEMM
 * convolution]). */
EC_VEC_CLONES static void F(im2col_rows)(const T* x, const ec_geom* g, int64_t c0, int64_t c1, T* col,
                                         int64_t ld) {
    const int64_t ID = g->in[0], IH = g->in[1], IW = g->in[2];
    const int64_t KD = g->k[0], KH = g->k[1], KW = g->k[2];
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];
    const int64_t sw = g->s[2], L = OD * OH * OW, kvol = KD * KH * KW;
    for (int64_t ch = c0; ch < c1; ch++) {
        const T* xc = x + ch * ID * IH * IW;
        for (int64_t a = 0; a < KD; a++)
            for (int64_t b = 0; b < KH; b++)
                for (int64_t e = 0; e < KW; e++) {
                    T* row = col + (ch * kvol + (a * KH + b) * KW + e) * ld;
                    int64_t woff = e * g->d[2] - g->p[2], lo, hi;
                    ec_tap_range(woff, sw, IW, OW, &lo, &hi);
                    for (int64_t od = 0; od < OD; od++) {
                        int64_t id = od * g->s[0] - g->p[0] + a * g->d[0];
                        for (int64_t oh = 0; oh < OH; oh++) {
                            int64_t ih = oh * g->s[1] - g->p[1] + b * g->d[1];
                            T* r = row + (od * OH + oh) * OW;
                            if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
                                memset(r, 0, sizeof(T) * (size_t)OW);
                                continue;
                            }
                            const T* xr = xc + (id * IH + ih) * IW + woff;
                            for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0;
                            if (sw == 1) {
                                memcpy(r + lo, xr + lo, sizeof(T) * (size_t)(hi - lo));
                            } else {
                                for (int64_t ow = lo; ow < hi; ow++) r[ow] = xr[ow * sw];
                            }
                            for (int64_t ow = hi; ow < OW; ow++) r[ow] = 0;
                        }
                    }
                }
    }
}

/* The adjoint of im2col_rows: add column rows of channels [c0, c1) (ld
 * elements apart) back into the image x (which the caller has initialised). */
EC_VEC_CLONES static void F(col2im_rows)(const T* col, const ec_geom* g, int64_t c0, int64_t c1, T* x,
                                         int64_t ld) {
    const int64_t ID = g->in[0], IH = g->in[1], IW = g->in[2];
    const int64_t KD = g->k[0], KH = g->k[1], KW = g->k[2];
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];
    const int64_t sw = g->s[2], L = OD * OH * OW, kvol = KD * KH * KW;
    for (int64_t ch = c0; ch < c1; ch++) {
        T* xc = x + ch * ID * IH * IW;
        for (int64_t a = 0; a < KD; a++)
            for (int64_t b = 0; b < KH; b++)
                for (int64_t e = 0; e < KW; e++) {
                    const T* row = col + (ch * kvol + (a * KH + b) * KW + e) * ld;
                    int64_t woff = e * g->d[2] - g->p[2], lo, hi;
                    ec_tap_range(woff, sw, IW, OW, &lo, &hi);
                    for (int64_t od = 0; od < OD; od++) {
                        int64_t id = od * g->s[0] - g->p[0] + a * g->d[0];
                        if (id < 0 || id >= ID) continue;
                        for (int64_t oh = 0; oh < OH; oh++) {
                            int64_t ih = oh * g->s[1] - g->p[1] + b * g->d[1];
                            if (ih < 0 || ih >= IH) continue;
                            const T* r = row + (od * OH + oh) * OW;
                            T* xr = xc + (id * IH + ih) * IW + woff;
                            if (sw == 1) {
                                for (int64_t ow = lo; ow < hi; ow++) xr[ow] += r[ow];
                            } else {
                                for (int64_t ow = lo; ow < hi; ow++) xr[ow * sw] += r[ow];
                            }
                        }
                    }
                }
    }
}

/* im2col of one image, channels split across nt threads. */
static void F(im2col)(const T* x, int64_t c, const ec_geom* g, T* col, int nt) {
    if (nt <= 1 || c < 2) {
        F(im2col_rows)(x, g, 0, c, col, ec_geom_out_vol(g));
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t ch = 0; ch < c; ch++) F(im2col_rows)(x, g, ch, ch + 1, col, ec_geom_out_vol(g));
}

/* x = col2im(col) for one image (x is overwritten), channels split across nt threads. */
static void F(col2im)(const T* col, int64_t c, const ec_geom* g, T* x, int nt) {
    const int64_t ivol = ec_geom_in_vol(g);
    if (nt <= 1 || c < 2) {
        memset(x, 0, sizeof(T) * (size_t)(c * ivol));
        F(col2im_rows)(col, g, 0, c, x, ec_geom_out_vol(g));
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t ch = 0; ch < c; ch++) {
        memset(x + ch * ivol, 0, sizeof(T) * (size_t)ivol);
        F(col2im_rows)(col, g, ch, ch + 1, x, ec_geom_out_vol(g));
    }
}

/* ------------------------------------------------------- GEMM convolution */

/* Note [GEMM convolution]
 * Per image and group, with K = ci/groups * kvol and L = output volume:
 *   forward          y_g (co_g x L)  = w_g (co_g x K) @ col_g (K x L)
 *   backward data    col_g (K x L)   = w_g^T @ gy_g,   then gx = col2im(col)
 *   backward weight  gw_g (co_g x K) += gy_g @ col_g^T
 * A pointwise convolution (kernel 1, stride 1, no padding) has col == x.
 * With par > 1 images run concurrently, one per OpenMP thread, each with its
 * own column buffer (`work` holds par of them) and single-threaded BLAS; with
 * par == 1 images run one after another with threaded im2col and BLAS. */

typedef struct F(conv_args) {
    int64_t ci, co, groups, K, L, ivol;
    int pointwise;
    ec_geom g;
} F(conv_args);

static void F(conv_args_init)(F(conv_args) * a, int64_t ci, int64_t co, int64_t groups,
                              const int64_t* geom) {
    ec_geom_read(geom, &a->g);
    a->ci = ci;
    a->co = co;
    a->groups = groups;
    a->K = ci / groups * ec_geom_k_vol(&a->g);
    a->L = ec_geom_out_vol(&a->g);
    a->ivol = ec_geom_in_vol(&a->g);
    a->pointwise = 1;
    for (int i = 0; i < 3; i++)
        a->pointwise &= a->g.k[i] == 1 && a->g.s[i] == 1 && a->g.p[i] == 0;
}

static void F(conv_fwd_image)(const F(conv_args) * a, const T* x, const T* w, const T* bias, T* y,
                              T* col, int nt) {
    const int64_t cog = a->co / a->groups, cig = a->ci / a->groups, K = a->K, L = a->L;
    const T* c = x;
    if (!a->pointwise) {
        F(im2col)(x, a->ci, &a->g, col, nt);
        c = col;
    }
    T beta = 0;
    if (bias) {
        for (int64_t o = 0; o < a->co; o++)
            for (int64_t l = 0; l < L; l++) y[o * L + l] = bias[o];
        beta = 1;
    }
    for (int64_t gi = 0; gi < a->groups; gi++) {
        const T* cg = a->pointwise ? c + gi * cig * a->ivol : c + gi * K * L;
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)cog, (blasint)L, (blasint)K, 1,
             w + gi * cog * K, (blasint)K, cg, (blasint)L, beta, y + gi * cog * L, (blasint)L);
    }
}

static void F(conv_bwd_data_image)(const F(conv_args) * a, const T* gy, const T* w, T* gx, T* col,
                                   int nt) {
    const int64_t cog = a->co / a->groups, cig = a->ci / a->groups, K = a->K, L = a->L;
    T* c = a->pointwise ? gx : col;
    for (int64_t gi = 0; gi < a->groups; gi++) {
        T* cg = a->pointwise ? c + gi * cig * a->ivol : c + gi * K * L;
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)K, (blasint)L, (blasint)cog, 1,
             w + gi * cog * K, (blasint)K, gy + gi * cog * L, (blasint)L, 0, cg, (blasint)L);
    }
    if (!a->pointwise) F(col2im)(col, a->ci, &a->g, gx, nt);
}

static void F(conv_bwd_weight_image)(const F(conv_args) * a, const T* x, const T* gy, T* gw,
                                     T beta, T* col, int nt) {
    const int64_t cog = a->co / a->groups, cig = a->ci / a->groups, K = a->K, L = a->L;
    const T* c = x;
    if (!a->pointwise) {
        F(im2col)(x, a->ci, &a->g, col, nt);
        c = col;
    }
    for (int64_t gi = 0; gi < a->groups; gi++) {
        const T* cg = a->pointwise ? c + gi * cig * a->ivol : c + gi * K * L;
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)cog, (blasint)K, (blasint)L, 1,
             gy + gi * cog * L, (blasint)L, cg, (blasint)L, beta, gw + gi * cog * K, (blasint)K);
    }
}

static int F(conv_forward)(int64_t n, const F(conv_args) * a, const T* x, const T* w,
                           const T* bias, T* y, T* work, int par) {
    const int64_t slot = a->pointwise ? 0 : a->ci * ec_geom_k_vol(&a->g) * a->L;
    if (par > 1) {
#pragma omp parallel num_threads(par)
        {
            int t = ec_thread_num();
#pragma omp for schedule(dynamic, 1)
            for (int64_t i = 0; i < n; i++)
                F(conv_fwd_image)(a, x + i * a->ci * a->ivol, w, bias, y + i * a->co * a->L,
                                  work + t * slot, 1);
        }
    } else {
        int nt = ec_threads_for(slot, EC_GRAIN); /* for im2col/col2im */
        for (int64_t i = 0; i < n; i++)
            F(conv_fwd_image)(a, x + i * a->ci * a->ivol, w, bias, y + i * a->co * a->L, work, nt);
    }
    return EC_OK;
}

static int F(conv_backward_data)(int64_t n, const F(conv_args) * a, const T* gy, const T* w, T* gx,
                                 T* work, int par) {
    const int64_t slot = a->pointwise ? 0 : a->ci * ec_geom_k_vol(&a->g) * a->L;
    if (par > 1) {
#pragma omp parallel num_threads(par)
        {
            int t = ec_thread_num();
#pragma omp for schedule(dynamic, 1)
            for (int64_t i = 0; i < n; i++)
                F(conv_bwd_data_image)(a, gy + i * a->co * a->L, w, gx + i * a->ci * a->ivol,
                                       work + t * slot, 1);
        }
    } else {
        int nt = ec_threads_for(slot, EC_GRAIN); /* for im2col/col2im */
        for (int64_t i = 0; i < n; i++)
            F(conv_bwd_data_image)(a, gy + i * a->co * a->L, w, gx + i * a->ci * a->ivol, work, nt);
    }
    return EC_OK;
}

/* work: par column buffers, then par - 1 partial weight gradients. */
static int F(conv_backward_weight)(int64_t n, const F(conv_args) * a, const T* x, const T* gy,
                                   T* gw, T* work, int par) {
    const int64_t slot = a->pointwise ? 0 : a->ci * ec_geom_k_vol(&a->g) * a->L;
    const int64_t wsize = a->co * a->K;
    if (n == 0) {
        memset(gw, 0, sizeof(T) * (size_t)wsize);
        return EC_OK;
    }
    if (par > n) par = (int)n;
    if (par > 1) {
        T* partial = work + par * slot;
#pragma omp parallel num_threads(par)
        {
            int t = ec_thread_num();
            T* acc = t == 0 ? gw : partial + (t - 1) * wsize;
            /* static schedule: thread t gets a contiguous, non-empty block (par <= n) */
            int64_t lo = n * t / par, hi = n * (t + 1) / par;
            for (int64_t i = lo; i < hi; i++)
                F(conv_bwd_weight_image)(a, x + i * a->ci * a->ivol, gy + i * a->co * a->L, acc,
                                         i == lo ? 0 : 1, work + t * slot, 1);
        }
        for (int t = 1; t < par; t++) {
            const T* p = partial + (t - 1) * wsize;
            for (int64_t j = 0; j < wsize; j++) gw[j] += p[j];
        }
    } else {
        int nt = ec_threads_for(slot, EC_GRAIN); /* for im2col/col2im */
        for (int64_t i = 0; i < n; i++)
            F(conv_bwd_weight_image)(a, x + i * a->ci * a->ivol, gy + i * a->co * a->L, gw,
                                     i == 0 ? 0 : 1, work, nt);
    }
    return EC_OK;
}

/* ------------------------------------------------------ depthwise, direct */

/* Note [Depthwise convolution]
 * groups == ci: output channel oc reads only input channel oc / m (m = co / ci
 * output channels per input channel).  A GEMM per channel would have K = kvol
 * (9 for 3x3): far too thin for BLAS, so these loops run the taps directly,
 * each tap a contiguous (stride 1) or strided sweep over an output row, which
 * the compiler vectorises.  Threads split output planes (forward), input planes
 * (backward data: each owns its m output channels) or output channels
 * (backward weight), so no two threads write the same element. */

/* One input row's contribution to an output row of a stride-1 depthwise
 * convolution over the interior [L, H), where every tap is inside the input:
 * the taps are summed in registers, one pass over the row (K a constant so
 * that the tap loop unrolls and the row loop vectorises). */
#define EC_DW_ROW(K)                                                         \
    for (int64_t ow = L; ow < H; ow++) {                                     \
        T s_ = 0;                                                            \
        for (int e_ = 0; e_ < (K); e_++) s_ += wr[e_] * xr[ow + off[e_]];    \
        yr[ow] += s_;                                                        \
    }

static inline void F(dw_row_interior)(T* yr, const T* xr, const T* wr, const int64_t* off, int64_t kw,
                                      int64_t L, int64_t H) {
    switch (kw) {
        case 3: EC_DW_ROW(3) break;
        case 5: EC_DW_ROW(5) break;
        case 7: EC_DW_ROW(7) break;
        default:
            for (int64_t e = 0; e < kw; e++)
                for (int64_t ow = L; ow < H; ow++) yr[ow] += wr[e] * xr[ow + off[e]];
    }
}
#undef EC_DW_ROW

/* Note [Padded depthwise planes]
 * A 2-D stride-1 depthwise convolution with a K x K kernel (K = 3, 5, 7) copies
 * each input plane into a zero-padded buffer first: then every output is an
 * interior one, and each output row is one pass summing all K * K taps in
 * registers (K a constant: the tap loops unroll, the row loop vectorises).
 * With planes of 32 x 32 the per-row and per-tap edge handling would
 * otherwise cost more than the arithmetic. */
#define EC_DW_PADDED(K)                                                                  \
    for (int64_t oh = 0; oh < OH; oh++) {                                                \
        const T* r_ = buf + oh * PW;                                                     \
        T* yr = y + oh * OW;                                                             \
        for (int64_t ow = 0; ow < OW; ow++) {                                            \
            T s_ = bias;                                                                 \
            for (int b_ = 0; b_ < (K); b_++)                                             \
                for (int e_ = 0; e_ < (K); e_++)                                         \
                    s_ += w[b_ * (K) + e_] * r_[b_ * dh * PW + ow + e_ * dw];              \
            yr[ow] = s_;                                                                 \
        }                                                                                \
    }

/* buf: (IH + 2 ph) x (IW + 2 pw), its padding already zero. */
EC_VEC_CLONES static void F(dw_fwd_plane_padded)(const ec_geom* g, const T* x, const T* w, T bias,
                                                 T* y, T* buf) {
    const int64_t IH = g->in[1], IW = g->in[2], K = g->k[2];
    const int64_t OH = g->out[1], OW = g->out[2], dh = g->d[1], dw = g->d[2];
    const int64_t PW = IW + 2 * g->p[2];
    for (int64_t ih = 0; ih < IH; ih++)
        memcpy(buf + (ih + g->p[1]) * PW + g->p[2], x + ih * IW, sizeof(T) * (size_t)IW);
    switch (K) {
        case 3: EC_DW_PADDED(3) break;
        case 5: EC_DW_PADDED(5) break;
        default: EC_DW_PADDED(7) break;
    }
}
#undef EC_DW_PADDED

/* The weight gradient of one plane pair over a padded input plane (Note
 * [Padded depthwise planes]): acc[tap] += sum of gy * x under the tap, with 8
 * lanes per tap so that the row loop vectorises. */
#define EC_DWW_PADDED(K)                                                                 \
    {                                                                                    \
        T lanes[(K) * (K)][8], tail[(K) * (K)];                                          \
        memset(lanes, 0, sizeof lanes);                                                  \
        memset(tail, 0, sizeof tail);                                                    \
        for (int64_t oh = 0; oh < OH; oh++) {                                            \
            const T* g_ = gy + oh * OW;                                                  \
            const T* r_ = buf + oh * PW;                                                 \
            int64_t ow = 0;                                                              \
            for (; ow + 8 <= OW; ow += 8)                                                \
                for (int b_ = 0; b_ < (K); b_++)                                         \
                    for (int e_ = 0; e_ < (K); e_++)                                     \
                        for (int j_ = 0; j_ < 8; j_++)                                   \
                            lanes[b_ * (K) + e_][j_] +=                                  \
                                g_[ow + j_] * r_[b_ * dh * PW + e_ * dw + ow + j_];      \
            for (; ow < OW; ow++)                                                        \
                for (int b_ = 0; b_ < (K); b_++)                                         \
                    for (int e_ = 0; e_ < (K); e_++)                                     \
                        tail[b_ * (K) + e_] += g_[ow] * r_[b_ * dh * PW + e_ * dw + ow]; \
        }                                                                                \
        for (int t_ = 0; t_ < (K) * (K); t_++) {                                         \
            T s_ = tail[t_];                                                             \
            for (int j_ = 0; j_ < 8; j_++) s_ += lanes[t_][j_];                          \
            acc[t_] += s_;                                                               \
        }                                                                                \
    }

EC_VEC_CLONES static void F(dw_bwd_weight_plane_padded)(const ec_geom* g, const T* x, const T* gy,
                                                        double* acc, T* buf) {
    const int64_t IH = g->in[1], IW = g->in[2], K = g->k[2];
    const int64_t OH = g->out[1], OW = g->out[2], dh = g->d[1], dw = g->d[2];
    const int64_t PW = IW + 2 * g->p[2];
    for (int64_t ih = 0; ih < IH; ih++)
        memcpy(buf + (ih + g->p[1]) * PW + g->p[2], x + ih * IW, sizeof(T) * (size_t)IW);
    switch (K) {
        case 3: EC_DWW_PADDED(3) break;
        case 5: EC_DWW_PADDED(5) break;
        default: EC_DWW_PADDED(7) break;
    }
}
#undef EC_DWW_PADDED

static int F(dw_padded_ok)(const ec_geom* g) {
    return g->in[0] == 1 && g->k[0] == 1 && g->s[1] == 1 && g->s[2] == 1 && g->k[1] == g->k[2] &&
           (g->k[2] == 3 || g->k[2] == 5 || g->k[2] == 7) &&
           (g->in[1] + 2 * g->p[1]) * (g->in[2] + 2 * g->p[2]) <= (1 << 20);
}

#define EC_DW_TAPS 64 /* wider kernels compute each tap's range as they go */

EC_VEC_CLONES static void F(dw_fwd_plane)(const ec_geom* g, const T* x, const T* w, T bias, T* y) {
    const int64_t IH = g->in[1], IW = g->in[2];
    const int64_t KD = g->k[0], KH = g->k[1], KW = g->k[2];
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2], sw = g->s[2];
    /* per tap along W: its offset and output range; [L, H) where all are inside */
    int64_t off[EC_DW_TAPS], lo[EC_DW_TAPS], hi[EC_DW_TAPS], L = 0, H = OW;
    const int fused = sw == 1 && KW <= EC_DW_TAPS;
    if (fused) {
        for (int64_t e = 0; e < KW; e++) {
            off[e] = e * g->d[2] - g->p[2];
            ec_tap_range(off[e], 1, IW, OW, &lo[e], &hi[e]);
            if (lo[e] > L) L = lo[e];
            if (hi[e] < H) H = hi[e];
        }
        if (H < L) H = L;
    }
    for (int64_t l = 0; l < OD * OH * OW; l++) y[l] = bias;
    for (int64_t od = 0; od < OD; od++)
        for (int64_t a = 0; a < KD; a++) {
            int64_t id = od * g->s[0] - g->p[0] + a * g->d[0];
            if (id < 0 || id >= g->in[0]) continue;
            for (int64_t oh = 0; oh < OH; oh++) {
                T* yr = y + (od * OH + oh) * OW;
                for (int64_t b = 0; b < KH; b++) {
                    int64_t ih = oh * g->s[1] - g->p[1] + b * g->d[1];
                    if (ih < 0 || ih >= IH) continue;
                    const T* xrow = x + (id * IH + ih) * IW;
                    const T* wr = w + (a * KH + b) * KW;
                    if (fused) {
                        F(dw_row_interior)(yr, xrow, wr, off, KW, L, H);
                        for (int64_t e = 0; e < KW; e++) { /* the edges, tap by tap */
                            const T wv = wr[e];
                            const T* xr = xrow + off[e];
                            for (int64_t ow = lo[e]; ow < hi[e] && ow < L; ow++) yr[ow] += wv * xr[ow];
                            for (int64_t ow = lo[e] > H ? lo[e] : H; ow < hi[e]; ow++) yr[ow] += wv * xr[ow];
                        }
                        continue;
                    }
                    for (int64_t e = 0; e < KW; e++) {
                        int64_t o = e * g->d[2] - g->p[2], tl, th;
                        ec_tap_range(o, sw, IW, OW, &tl, &th);
                        const T wv = wr[e];
                        const T* xr = xrow + o;
                        if (sw == 1) {
                            for (int64_t ow = tl; ow < th; ow++) yr[ow] += wv * xr[ow];
                        } else {
                            for (int64_t ow = tl; ow < th; ow++) yr[ow] += wv * xr[ow * sw];
                        }
                    }
                }
            }
        }
}

EC_VEC_CLONES static void F(dw_bwd_data_plane)(const ec_geom* g, const T* gy, const T* w, T* gx) {
    const int64_t IH = g->in[1], IW = g->in[2];
    const int64_t KD = g->k[0], KH = g->k[1], KW = g->k[2];
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2], sw = g->s[2];
    for (int64_t od = 0; od < OD; od++)
        for (int64_t a = 0; a < KD; a++) {
            int64_t id = od * g->s[0] - g->p[0] + a * g->d[0];
            if (id < 0 || id >= g->in[0]) continue;
            for (int64_t oh = 0; oh < OH; oh++) {
                const T* gyr = gy + (od * OH + oh) * OW;
                for (int64_t b = 0; b < KH; b++) {
                    int64_t ih = oh * g->s[1] - g->p[1] + b * g->d[1];
                    if (ih < 0 || ih >= IH) continue;
                    T* xrow = gx + (id * IH + ih) * IW;
                    const T* wr = w + (a * KH + b) * KW;
                    for (int64_t e = 0; e < KW; e++) {
                        int64_t off = e * g->d[2] - g->p[2], lo, hi;
                        ec_tap_range(off, sw, IW, OW, &lo, &hi);
                        const T wv = wr[e];
                        T* xr = xrow + off;
                        if (sw == 1) {
                            for (int64_t ow = lo; ow < hi; ow++) xr[ow] += wv * gyr[ow];
                        } else {
                            for (int64_t ow = lo; ow < hi; ow++) xr[ow * sw] += wv * gyr[ow];
                        }
                    }
                }
            }
        }
}

/* acc[tap] += sum over output positions of gy * x under that tap (one plane). */
EC_VEC_CLONES static void F(dw_bwd_weight_plane)(const ec_geom* g, const T* x, const T* gy, double* acc) {
    const int64_t IH = g->in[1], IW = g->in[2];
    const int64_t KD = g->k[0], KH = g->k[1], KW = g->k[2];
    const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2], sw = g->s[2];
    for (int64_t od = 0; od < OD; od++)
        for (int64_t a = 0; a < KD; a++) {
            int64_t id = od * g->s[0] - g->p[0] + a * g->d[0];
            if (id < 0 || id >= g->in[0]) continue;
            for (int64_t oh = 0; oh < OH; oh++) {
                const T* gyr = gy + (od * OH + oh) * OW;
                for (int64_t b = 0; b < KH; b++) {
                    int64_t ih = oh * g->s[1] - g->p[1] + b * g->d[1];
                    if (ih < 0 || ih >= IH) continue;
                    const T* xrow = x + (id * IH + ih) * IW;
                    double* ar = acc + (a * KH + b) * KW;
                    for (int64_t e = 0; e < KW; e++) {
                        int64_t off = e * g->d[2] - g->p[2], lo, hi;
                        ec_tap_range(off, sw, IW, OW, &lo, &hi);
                        const T* xr = xrow + off;
                        T s = 0;
                        if (sw == 1) {
                            s = F(dot8)(gyr + lo, xr + lo, hi - lo);
                        } else {
                            for (int64_t ow = lo; ow < hi; ow++) s += gyr[ow] * xr[ow * sw];
                        }
                        ar[e] += s;
                    }
                }
            }
        }
}

static int F(dw_forward)(int64_t n, int64_t ci, int64_t co, const ec_geom* g, const T* x,
                         const T* w, const T* bias, T* y) {
    const int64_t m = co / ci, ivol = ec_geom_in_vol(g), ovol = ec_geom_out_vol(g);
    const int64_t kvol = ec_geom_k_vol(g);
    const size_t padded = (size_t)((g->in[1] + 2 * g->p[1]) * (g->in[2] + 2 * g->p[2]));
    const int use_padded = F(dw_padded_ok)(g);
    int nt = ec_threads_for(n * co * ovol * kvol, EC_GRAIN);
#pragma omp parallel num_threads(nt)
    {
        /* scratch for Note [Padded depthwise planes]; without it, the plain loops */
        T* buf = use_padded ? calloc(padded, sizeof(T)) : NULL;
#pragma omp for schedule(static)
        for (int64_t pl = 0; pl < n * co; pl++) {
            int64_t i = pl / co, oc = pl % co;
            const T* xp = x + (i * ci + oc / m) * ivol;
            T b = bias ? bias[oc] : 0;
            if (buf)
                F(dw_fwd_plane_padded)(g, xp, w + oc * kvol, b, y + pl * ovol, buf);
            else
                F(dw_fwd_plane)(g, xp, w + oc * kvol, b, y + pl * ovol);
        }
        free(buf);
    }
    return EC_OK;
}

static int F(dw_backward_data)(int64_t n, int64_t ci, int64_t co, const ec_geom* g, const T* gy,
                               const T* w, T* gx) {
    const int64_t m = co / ci, ivol = ec_geom_in_vol(g), ovol = ec_geom_out_vol(g);
    const int64_t kvol = ec_geom_k_vol(g);
    int nt = ec_threads_for(n * co * ovol * kvol, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t pl = 0; pl < n * ci; pl++) {
        int64_t i = pl / ci, ic = pl % ci;
        T* gxp = gx + pl * ivol;
        memset(gxp, 0, sizeof(T) * (size_t)ivol);
        for (int64_t j = 0; j < m; j++) {
            int64_t oc = ic * m + j;
            F(dw_bwd_data_plane)(g, gy + (i * co + oc) * ovol, w + oc * kvol, gxp);
        }
    }
    return EC_OK;
}

/* acc: kvol doubles of scratch per thread (work holds nt * kvol). */
static int F(dw_backward_weight)(int64_t n, int64_t ci, int64_t co, const ec_geom* g, const T* x,
                                 const T* gy, T* gw, double* work) {
    const int64_t m = co / ci, ivol = ec_geom_in_vol(g), ovol = ec_geom_out_vol(g);
    const int64_t kvol = ec_geom_k_vol(g);
    const size_t padded = (size_t)((g->in[1] + 2 * g->p[1]) * (g->in[2] + 2 * g->p[2]));
    const int use_padded = F(dw_padded_ok)(g);
    int nt = ec_threads_for(n * co * ovol * kvol, EC_GRAIN);
#pragma omp parallel num_threads(nt)
    {
        double* acc = work + ec_thread_num() * kvol;
        T* buf = use_padded ? calloc(padded, sizeof(T)) : NULL;
#pragma omp for schedule(static)
        for (int64_t oc = 0; oc < co; oc++) {
            memset(acc, 0, sizeof(double) * (size_t)kvol);
            for (int64_t i = 0; i < n; i++) {
                const T* xp = x + (i * ci + oc / m) * ivol;
                const T* gp = gy + (i * co + oc) * ovol;
                if (buf)
                    F(dw_bwd_weight_plane_padded)(g, xp, gp, acc, buf);
                else
                    F(dw_bwd_weight_plane)(g, xp, gp, acc);
            }
            for (int64_t t = 0; t < kvol; t++) gw[oc * kvol + t] = (T)acc[t];
        }
        free(buf);
    }
    return EC_OK;
}

/* gb[c] = sum of gy[i, c, :] over images i. */
static int F(bias_grad)(int64_t n, int64_t c, int64_t L, const T* gy, T* gb) {
    int nt = ec_threads_for(n * c * L, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t ch = 0; ch < c; ch++) {
        double acc = 0;
        for (int64_t i = 0; i < n; i++) {
            acc += F(sum8)(gy + (i * c + ch) * L, L);
        }
        gb[ch] = (T)acc;
    }
    return EC_OK;
}

/* im2col / col2im over n images, as ops (F.unfold / F.fold). */
static int F(im2col_batch)(int64_t n, int64_t c, const ec_geom* g, const T* x, T* col) {
    const int64_t ivol = ec_geom_in_vol(g), rows = c * ec_geom_k_vol(g), L = ec_geom_out_vol(g);
    int nt = ec_threads_for(n * rows * L, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) collapse(2)
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++)
            F(im2col_rows)(x + i * c * ivol, g, ch, ch + 1, col + i * rows * L, L);
    return EC_OK;
}

static int F(col2im_batch)(int64_t n, int64_t c, const ec_geom* g, const T* col, T* x) {
    const int64_t ivol = ec_geom_in_vol(g), rows = c * ec_geom_k_vol(g), L = ec_geom_out_vol(g);
    int nt = ec_threads_for(n * rows * L, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) collapse(2)
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++) {
            memset(x + (i * c + ch) * ivol, 0, sizeof(T) * (size_t)ivol);
            F(col2im_rows)(col + i * rows * L, g, ch, ch + 1, x + i * c * ivol, L);
        }
    return EC_OK;
}

/* -------------------------------------------------- batched GEMM convolution */

/* Note [Batched GEMM convolution]
 * With a small output volume L (a CNN's deep layers: 8x8, 4x4 outputs), the
 * products of Note [GEMM convolution] are thin -- N = L columns -- and BLAS
 * runs them far below its peak.  There nb images share one product instead
 * (groups == 1, not pointwise): their column matrices side by side make
 * col (K x nb*L), image j's in columns [j*L, (j+1)*L), and with Y the outputs
 * side by side the same way (co x nb*L),
 *   forward          Y = w (co x K) @ col,      then y[j] = Y[:, j*L:(j+1)*L] (+ bias)
 *   backward data    col = w^T @ GY,            then gx[j] = col2im(col's image j)
 *   backward weight  gw (+)= GY @ col^T         (GY: gy's images side by side)
 * Images go nb at a time; work holds col (K x nb*L) then Y or GY (co x nb*L).
 * The caller (ember_core._ops.nn.conv, _Plain.batch) chooses nb. */

/* Image j's columns of col (rows ld apart), for images [0, m) of x. */
static void F(im2col_side)(const T* x, int64_t m, const F(conv_args) * a, T* col, int64_t ld,
                           int nt) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && m > 1)
    for (int64_t j = 0; j < m; j++)
        F(im2col_rows)(x + j * a->ci * a->ivol, &a->g, 0, a->ci, col + j * a->L, ld);
}

/* Y (co x m*L) <-> y (m, co, L): gather (to_side) or scatter (+ bias). */
static void F(side_layout)(T* Y, T* y, int64_t m, int64_t co, int64_t L, const T* bias,
                           int to_side, int nt) {
    const int64_t ld = m * L;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && co > 1)
    for (int64_t o = 0; o < co; o++)
        for (int64_t j = 0; j < m; j++) {
            T* side = Y + o * ld + j * L;
            T* img = y + (j * co + o) * L;
            if (to_side) {
                memcpy(side, img, sizeof(T) * (size_t)L);
            } else if (bias) {
                const T b = bias[o];
                for (int64_t l = 0; l < L; l++) img[l] = side[l] + b;
            } else {
                memcpy(img, side, sizeof(T) * (size_t)L);
            }
        }
}

static int F(conv_forward_batched)(int64_t n, const F(conv_args) * a, const T* x, const T* w,
                                   const T* bias, T* y, T* work, int64_t nb, int nt) {
    const int64_t K = a->K, L = a->L, co = a->co;
    T* col = work;
    T* Y = work + K * nb * L;
    for (int64_t i0 = 0; i0 < n; i0 += nb) {
        const int64_t m = n - i0 < nb ? n - i0 : nb, ld = m * L;
        F(im2col_side)(x + i0 * a->ci * a->ivol, m, a, col, ld, nt);
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, co, ld, K, 1, w, K, col, ld, 0, Y, ld);
        F(side_layout)(Y, y + i0 * co * L, m, co, L, bias, 0, nt);
    }
    return EC_OK;
}

static int F(conv_backward_data_batched)(int64_t n, const F(conv_args) * a, const T* gy,
                                         const T* w, T* gx, T* work, int64_t nb, int nt) {
    const int64_t K = a->K, L = a->L, co = a->co, ivol = a->ivol, ci = a->ci;
    T* col = work;
    T* GY = work + K * nb * L;
    for (int64_t i0 = 0; i0 < n; i0 += nb) {
        const int64_t m = n - i0 < nb ? n - i0 : nb, ld = m * L;
        F(side_layout)(GY, (T*)(gy + i0 * co * L), m, co, L, NULL, 1, nt);
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, K, ld, co, 1, w, K, GY, ld, 0, col, ld);
        T* gxi = gx + i0 * ci * ivol;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && m > 1)
        for (int64_t j = 0; j < m; j++) {
            memset(gxi + j * ci * ivol, 0, sizeof(T) * (size_t)(ci * ivol));
            F(col2im_rows)(col + j * L, &a->g, 0, ci, gxi + j * ci * ivol, ld);
        }
    }
    return EC_OK;
}

static int F(conv_backward_weight_batched)(int64_t n, const F(conv_args) * a, const T* x,
                                           const T* gy, T* gw, T* work, int64_t nb, int nt) {
    const int64_t K = a->K, L = a->L, co = a->co;
    T* col = work;
    T* GY = work + K * nb * L;
    if (n == 0) {
        memset(gw, 0, sizeof(T) * (size_t)(co * K));
        return EC_OK;
    }
    for (int64_t i0 = 0; i0 < n; i0 += nb) {
        const int64_t m = n - i0 < nb ? n - i0 : nb, ld = m * L;
        F(im2col_side)(x + i0 * a->ci * a->ivol, m, a, col, ld, nt);
        F(side_layout)(GY, (T*)(gy + i0 * co * L), m, co, L, NULL, 1, nt);
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, co, K, ld, 1, GY, ld, col, ld,
             i0 == 0 ? 0 : 1, gw, K);
    }
    return EC_OK;
}
