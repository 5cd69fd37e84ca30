/* Normalization: layer norm, RMS norm, batch norm and group norm, forward and
 * backward (ec_row_norm*, ec_batch_norm*, ec_group_norm*). */
#include "nn.h"

#define T float
#define SFX _f32
#include "norm.inc"
#undef T
#undef SFX

#define T double
#define SFX _f64
#include "norm.inc"
#undef T
#undef SFX

#define DISPATCH(op, call32, call64)                                                   \
    do {                                                                               \
        if (dtype == EC_FLOAT32) return call32;                                        \
        if (dtype == EC_FLOAT64) return call64;                                        \
        return ec_fail(EC_ERR_DTYPE, "%s: no kernel for dtype %d", op, dtype);         \
    } while (0)

int ec_row_norm(int dtype, int rms, int64_t rows, int64_t cols, double eps, ec_ptr out,
                ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight, ec_ptr bias) {
    if (rows < 0 || cols < 0) return ec_fail(EC_ERR_INVALID, "norm: negative size");
    DISPATCH("norm",
             row_norm_f32(rms, rows, cols, eps, (float*)out, (float*)mean, (float*)rstd,
                          (const float*)x, (const float*)weight, (const float*)bias),
             row_norm_f64(rms, rows, cols, eps, (double*)out, (double*)mean, (double*)rstd,
                          (const double*)x, (const double*)weight, (const double*)bias));
}

int ec_row_norm_backward(int dtype, int rms, int64_t rows, int64_t cols, ec_ptr grad_in,
                         ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad, ec_ptr x, ec_ptr mean,
                         ec_ptr rstd, ec_ptr weight) {
    if (rows < 0 || cols < 0) return ec_fail(EC_ERR_INVALID, "norm backward: negative size");
    DISPATCH("norm backward",
             row_norm_backward_f32(rms, rows, cols, (float*)grad_in, (float*)grad_weight,
                                   (float*)grad_bias, (const float*)grad, (const float*)x,
                                   (const float*)mean, (const float*)rstd, (const float*)weight),
             row_norm_backward_f64(rms, rows, cols, (double*)grad_in, (double*)grad_weight,
                                   (double*)grad_bias, (const double*)grad, (const double*)x,
                                   (const double*)mean, (const double*)rstd,
                                   (const double*)weight));
}

int ec_batch_norm(int dtype, int running_dtype, int64_t n, int64_t c, int64_t s, int training,
                  double momentum, double eps, ec_ptr out, ec_ptr save_mean, ec_ptr save_invstd,
                  ec_ptr x, ec_ptr weight, ec_ptr bias, ec_ptr running_mean, ec_ptr running_var) {
    if (n < 0 || c < 0 || s < 0) return ec_fail(EC_ERR_INVALID, "batch_norm: negative size");
    if (!training && (!running_mean || !running_var))
        return ec_fail(EC_ERR_INVALID, "batch_norm: evaluation needs running_mean and running_var");
    DISPATCH("batch_norm",
             batch_norm_f32(running_dtype, n, c, s, training, momentum, eps, (float*)out,
                            (float*)save_mean, (float*)save_invstd, (const float*)x,
                            (const float*)weight, (const float*)bias, (void*)running_mean,
                            (void*)running_var),
             batch_norm_f64(running_dtype, n, c, s, training, momentum, eps, (double*)out,
                            (double*)save_mean, (double*)save_invstd, (const double*)x,
                            (const double*)weight, (const double*)bias, (void*)running_mean,
                            (void*)running_var));
}

int ec_batch_norm_backward(int dtype, int64_t n, int64_t c, int64_t s, int training,
                           ec_ptr grad_in, ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad,
                           ec_ptr x, ec_ptr save_mean, ec_ptr save_invstd, ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0)
        return ec_fail(EC_ERR_INVALID, "batch_norm backward: negative size");
    DISPATCH("batch_norm backward",
             batch_norm_backward_f32(n, c, s, training, (float*)grad_in, (float*)grad_weight,
                                     (float*)grad_bias, (const float*)grad, (const float*)x,
                                     (const float*)save_mean, (const float*)save_invstd,
                                     (const float*)weight),
             batch_norm_backward_f64(n, c, s, training, (double*)grad_in, (double*)grad_weight,
                                     (double*)grad_bias, (const double*)grad, (const double*)x,
                                     (const double*)save_mean, (const double*)save_invstd,
                                     (const double*)weight));
}

int ec_group_norm(int dtype, int64_t n, int64_t c, int64_t s, int64_t g, double eps, ec_ptr out,
                  ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight, ec_ptr bias) {
    if (n < 0 || c < 0 || s < 0 || g <= 0 || c % g)
        return ec_fail(EC_ERR_INVALID, "group_norm: bad sizes (c=%lld, groups=%lld)",
                       (long long)c, (long long)g);
    DISPATCH("group_norm",
             group_norm_f32(n, c, s, g, eps, (float*)out, (float*)mean, (float*)rstd,
                            (const float*)x, (const float*)weight, (const float*)bias),
             group_norm_f64(n, c, s, g, eps, (double*)out, (double*)mean, (double*)rstd,
                            (const double*)x, (const double*)weight, (const double*)bias));
}

int ec_group_norm_backward(int dtype, int64_t n, int64_t c, int64_t s, int64_t g, ec_ptr grad_in,
                           ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad, ec_ptr x,
                           ec_ptr mean, ec_ptr rstd, ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0 || g <= 0 || c % g)
        return ec_fail(EC_ERR_INVALID, "group_norm backward: bad sizes");
    DISPATCH("group_norm backward",
             group_norm_backward_f32(n, c, s, g, (float*)grad_in, (float*)grad_weight,
                                     (float*)grad_bias, (const float*)grad, (const float*)x,
                                     (const float*)mean, (const float*)rstd, (const float*)weight),
             group_norm_backward_f64(n, c, s, g, (double*)grad_in, (double*)grad_weight,
                                     (double*)grad_bias, (const double*)grad, (const double*)x,
                                     (const double*)mean, (const double*)rstd,
                                     (const double*)weight));
}
