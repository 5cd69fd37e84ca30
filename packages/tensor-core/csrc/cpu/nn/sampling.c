/* Sampling kernels: grid_sample (bilinear, nearest and bicubic over 2-D
 * inputs, bilinear and nearest over 3-D ones; Note [Grid sample coordinates])
 * and the CTC loss (Note [CTC in log space]).  Python (ember_core._ops.nn.sampling)
 * checks shapes and allocates outputs; the per-type bodies live in
 * sampling_tmpl.h. */
#include <stdlib.h>

#include "spatial.h"

static inline int gs_in(int64_t i, int64_t n) { return i >= 0 && i < n; }

#define T float
#define F(name) name##_f32
#include "sampling_tmpl.h"
#undef T
#undef F

#define T double
#define F(name) name##_f64
#include "sampling_tmpl.h"
#undef T
#undef F

static int gs_check(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                    const int64_t* out3, int mode, int padding) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "grid_sample: no kernel for dtype %d", dtype);
    if (ndim != 2 && ndim != 3) return ec_fail(EC_ERR_INVALID, "grid_sample: %d-D input", ndim);
    if (mode != EC_GS_BILINEAR && mode != EC_GS_NEAREST && mode != EC_GS_BICUBIC)
        return ec_fail(EC_ERR_INVALID, "grid_sample: unknown mode %d", mode);
    if (ndim == 3 && mode == EC_GS_BICUBIC)
        return ec_fail(EC_ERR_INVALID, "grid_sample: bicubic needs a 4-D input");
    if (padding != EC_GS_PAD_ZEROS && padding != EC_GS_PAD_BORDER &&
        padding != EC_GS_PAD_REFLECTION)
        return ec_fail(EC_ERR_INVALID, "grid_sample: unknown padding mode %d", padding);
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "grid_sample: bad sizes");
    for (int d = 0; d < 3; d++)
        if (in3[d] < 1 || out3[d] < 0) return ec_fail(EC_ERR_INVALID, "grid_sample: bad sizes");
    if (ndim == 2 && (in3[0] != 1 || out3[0] != 1))
        return ec_fail(EC_ERR_INVALID, "grid_sample: 2-D sizes need D = 1");
    return EC_OK;
}

int ec_grid_sample_forward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                           const int64_t* out3, int mode, int padding, int align_corners,
                           ec_ptr x, ec_ptr grid, ec_ptr y) {
    int st = gs_check(dtype, ndim, n, c, in3, out3, mode, padding);
    if (st) return st;
    if (dtype == EC_FLOAT32) {
        if (ndim == 2)
            grid_sample_2d_f32(n, c, in3[1], in3[2], out3[1], out3[2], mode, padding,
                               align_corners, (const float*)x, (const float*)grid, (float*)y);
        else
            grid_sample_3d_f32(n, c, in3, out3, mode, padding, align_corners, (const float*)x,
                               (const float*)grid, (float*)y, NULL, NULL, NULL);
    } else {
        if (ndim == 2)
            grid_sample_2d_f64(n, c, in3[1], in3[2], out3[1], out3[2], mode, padding,
                               align_corners, (const double*)x, (const double*)grid, (double*)y);
        else
            grid_sample_3d_f64(n, c, in3, out3, mode, padding, align_corners, (const double*)x,
                               (const double*)grid, (double*)y, NULL, NULL, NULL);
    }
    return EC_OK;
}

int ec_grid_sample_backward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                            const int64_t* out3, int mode, int padding, int align_corners,
                            ec_ptr gy, ec_ptr x, ec_ptr grid, ec_ptr gx, ec_ptr ggrid) {
    int st = gs_check(dtype, ndim, n, c, in3, out3, mode, padding);
    if (st) return st;
    if (dtype == EC_FLOAT32) {
        if (ndim == 2)
            grid_sample_2d_backward_f32(n, c, in3[1], in3[2], out3[1], out3[2], mode, padding,
                                        align_corners, (const float*)gy, (const float*)x,
                                        (const float*)grid, (float*)gx, (float*)ggrid);
        else
            grid_sample_3d_f32(n, c, in3, out3, mode, padding, align_corners, (const float*)x,
                               (const float*)grid, NULL, (const float*)gy, (float*)gx,
                               (float*)ggrid);
    } else {
        if (ndim == 2)
            grid_sample_2d_backward_f64(n, c, in3[1], in3[2], out3[1], out3[2], mode, padding,
                                        align_corners, (const double*)gy, (const double*)x,
                                        (const double*)grid, (double*)gx, (double*)ggrid);
        else
            grid_sample_3d_f64(n, c, in3, out3, mode, padding, align_corners, (const double*)x,
                               (const double*)grid, NULL, (const double*)gy, (double*)gx,
                               (double*)ggrid);
    }
    return EC_OK;
}

/* Targets must be symbols in [0, C) other than blank, lengths within the
 * tensors' sizes. */
static int ctc_check(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax, ec_ptr tg,
                     ec_ptr toff, ec_ptr ilen, ec_ptr tlen, int64_t blank, int64_t ntargets) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "ctc_loss: no kernel for dtype %d", dtype);
    if (tmax < 0 || n < 0 || c < 1 || smax < 0 || blank < 0 || blank >= c)
        return ec_fail(EC_ERR_INVALID, "ctc_loss: bad sizes");
    const int64_t *t = (const int64_t*)tg, *o = (const int64_t*)toff;
    const int64_t *il = (const int64_t*)ilen, *tl = (const int64_t*)tlen;
    for (int64_t b = 0; b < n; b++) {
        if (il[b] < 0 || il[b] > tmax)
            return ec_fail(EC_ERR_VALUE, "input length %lld of element %lld is not in "
                           "[0, %lld]", (long long)il[b], (long long)b, (long long)tmax);
        if (tl[b] < 0 || tl[b] > smax || o[b] < 0 || o[b] + tl[b] > ntargets)
            return ec_fail(EC_ERR_VALUE, "target length %lld of element %lld is out "
                           "of range", (long long)tl[b], (long long)b);
        for (int64_t s = 0; s < tl[b]; s++) {
            int64_t v = t[o[b] + s];
            if (v < 0 || v >= c)
                return ec_fail(EC_ERR_INDEX, "target %lld of element %lld is out of "
                               "range for %lld classes", (long long)v, (long long)b, (long long)c);
        }
    }
    return EC_OK;
}

int ec_ctc_loss_forward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                        ec_ptr log_probs, ec_ptr targets, int64_t ntargets, ec_ptr target_offsets,
                        ec_ptr input_lengths, ec_ptr target_lengths, int64_t blank,
                        ec_ptr log_alpha, ec_ptr nll) {
    int st = ctc_check(dtype, tmax, n, c, smax, targets, target_offsets, input_lengths,
                       target_lengths, blank, ntargets);
    if (st) return st;
#define ARGS(T)                                                                              \
    tmax, n, c, 2 * smax + 1, (const T*)log_probs, (const int64_t*)targets,                  \
        (const int64_t*)target_offsets, (const int64_t*)input_lengths,                       \
        (const int64_t*)target_lengths, blank, (T*)log_alpha, (T*)nll
    if (dtype == EC_FLOAT32)
        ctc_forward_f32(ARGS(float));
    else
        ctc_forward_f64(ARGS(double));
#undef ARGS
    return EC_OK;
}

int ec_ctc_loss_backward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                         ec_ptr log_probs, ec_ptr targets, int64_t ntargets,
                         ec_ptr target_offsets, ec_ptr input_lengths, ec_ptr target_lengths,
                         int64_t blank, ec_ptr log_alpha, ec_ptr nll, ec_ptr grad_out,
                         int64_t grad_stride, int zero_infinity, ec_ptr grad) {
    int st = ctc_check(dtype, tmax, n, c, smax, targets, target_offsets, input_lengths,
                       target_lengths, blank, ntargets);
    if (st) return st;
    size_t size = dtype == EC_FLOAT32 ? sizeof(float) : sizeof(double);
    void* beta = malloc((size_t)(n * tmax * (2 * smax + 1)) * size + 1);
    if (!beta) return ec_fail(EC_ERR_NOMEM, "ctc_loss backward: no scratch memory");
#define ARGS(T)                                                                              \
    tmax, n, c, 2 * smax + 1, (const T*)log_probs, (const int64_t*)targets,                  \
        (const int64_t*)target_offsets, (const int64_t*)input_lengths,                       \
        (const int64_t*)target_lengths, blank, (const T*)log_alpha, (const T*)nll,           \
        (const T*)grad_out, grad_stride, zero_infinity, (T*)beta, (T*)grad
    if (dtype == EC_FLOAT32)
        ctc_backward_f32(ARGS(float));
    else
        ctc_backward_f64(ARGS(double));
#undef ARGS
    free(beta);
    return EC_OK;
}
