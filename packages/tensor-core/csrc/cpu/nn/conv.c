/* Convolution kernels: im2col/col2im with BLAS GEMMs (Note [GEMM convolution]),
 * a direct depthwise path (Note [Depthwise convolution]) and the bias gradient.
 * Python (ember_core._ops.nn.conv) chooses the path, checks every shape and allocates
 * outputs and workspaces; these entry points only check what keeps memory
 * safe.  The per-type bodies live in conv_tmpl.h. */
#include <stdlib.h>

#include "cblas.h"
#include "spatial.h"

#define T float
#define F(name) name##_f32
#define GEMM(o, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc) \
    ec_gemm_f32((ta) == CblasTrans, (tb) == CblasTrans, m, n, k, al, a, lda, b, ldb, be, c, ldc)
#include "conv_tmpl.h"
#undef T
#undef F
#undef GEMM

#define T double
#define F(name) name##_f64
#define GEMM(o, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc) \
    ec_gemm_f64((ta) == CblasTrans, (tb) == CblasTrans, m, n, k, al, a, lda, b, ldb, be, c, ldc)
#include "conv_tmpl.h"
#undef T
#undef F
#undef GEMM

static int check_float(int dtype, const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no kernel for dtype %d (float32/float64 only)", op, dtype);
    return EC_OK;
}

static int check_conv(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                      const int64_t* geom, ec_geom* g, const char* op) {
    int st = check_float(dtype, op);
    if (st) return st;
    ec_geom_read(geom, g);
    if (n < 0 || ci < 1 || co < 1 || groups < 1 || ci % groups || co % groups || !ec_geom_valid(g))
        return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    return EC_OK;
}

/* BLAS takes 32-bit sizes. */
static int check_blas_sizes(int64_t ci, int64_t co, int64_t groups, const ec_geom* g, const char* op) {
    int64_t K = ci / groups * ec_geom_k_vol(g), L = ec_geom_out_vol(g);
    if (K > 2147483647 || L > 2147483647 || co > 2147483647 || ec_geom_in_vol(g) > 2147483647)
        return ec_fail(EC_ERR_INVALID, "%s: a dimension exceeds BLAS's 32-bit limit", op);
    return EC_OK;
}

int ec_conv_forward(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                    const int64_t* geom, ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y, ec_ptr work,
                    int par) {
    ec_geom g;
    int st = check_conv(dtype, n, ci, co, groups, geom, &g, "conv forward");
    if (!st) st = check_blas_sizes(ci, co, groups, &g, "conv forward");
    if (st) return st;
    if (n == 0 || ec_geom_out_vol(&g) == 0) return EC_OK;
    if (par < 1) par = 1;
    if (dtype == EC_FLOAT32) {
        conv_args_f32 a;
        conv_args_init_f32(&a, ci, co, groups, geom);
        return conv_forward_f32(n, &a, (const float*)x, (const float*)w, (const float*)bias,
                                (float*)y, (float*)work, par);
    }
    conv_args_f64 a;
    conv_args_init_f64(&a, ci, co, groups, geom);
    return conv_forward_f64(n, &a, (const double*)x, (const double*)w, (const double*)bias,
                            (double*)y, (double*)work, par);
}

int ec_conv_backward_data(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                          const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx, ec_ptr work, int par) {
    ec_geom g;
    int st = check_conv(dtype, n, ci, co, groups, geom, &g, "conv backward (input)");
    if (!st) st = check_blas_sizes(ci, co, groups, &g, "conv backward (input)");
    if (st) return st;
    if (n == 0) return EC_OK;
    if (ec_geom_out_vol(&g) == 0) {
        memset((void*)gx, 0, (size_t)(n * ci * ec_geom_in_vol(&g)) * ec_itemsize[dtype]);
        return EC_OK;
    }
    if (par < 1) par = 1;
    if (dtype == EC_FLOAT32) {
        conv_args_f32 a;
        conv_args_init_f32(&a, ci, co, groups, geom);
        return conv_backward_data_f32(n, &a, (const float*)gy, (const float*)w, (float*)gx,
                                      (float*)work, par);
    }
    conv_args_f64 a;
    conv_args_init_f64(&a, ci, co, groups, geom);
    return conv_backward_data_f64(n, &a, (const double*)gy, (const double*)w, (double*)gx,
                                  (double*)work, par);
}

int ec_conv_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                            const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw, ec_ptr work,
                            int par) {
    ec_geom g;
    int st = check_conv(dtype, n, ci, co, groups, geom, &g, "conv backward (weight)");
    if (!st) st = check_blas_sizes(ci, co, groups, &g, "conv backward (weight)");
    if (st) return st;
    if (ec_geom_out_vol(&g) == 0) n = 0; /* no products: the gradient is zero */
    if (par < 1) par = 1;
    if (dtype == EC_FLOAT32) {
        conv_args_f32 a;
        conv_args_init_f32(&a, ci, co, groups, geom);
        return conv_backward_weight_f32(n, &a, (const float*)x, (const float*)gy, (float*)gw,
                                        (float*)work, par);
    }
    conv_args_f64 a;
    conv_args_init_f64(&a, ci, co, groups, geom);
    return conv_backward_weight_f64(n, &a, (const double*)x, (const double*)gy, (double*)gw,
                                    (double*)work, par);
}

/* Note [Batched GEMM convolution]: groups 1, not pointwise, nb >= 1 images per product. */
static int check_batched(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                         int64_t nb, ec_geom* g, const char* op) {
    int st = check_conv(dtype, n, ci, co, 1, geom, g, op);
    if (!st) st = check_blas_sizes(ci, co, 1, g, op);
    if (st) return st;
    int pointwise = 1;
    for (int i = 0; i < 3; i++) pointwise &= g->k[i] == 1 && g->s[i] == 1 && g->p[i] == 0;
    if (pointwise || nb < 1 || nb * ec_geom_out_vol(g) > 2147483647)
        return ec_fail(EC_ERR_INVALID, "%s: bad batching", op);
    return EC_OK;
}

#define BATCHED_THREADS(ci, g, nb) ec_threads_for((ci) * ec_geom_k_vol(g) * ec_geom_out_vol(g) * (nb), EC_GRAIN)

int ec_conv_forward_batched(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                            ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y, ec_ptr work, int64_t nb) {
    ec_geom g;
    int st = check_batched(dtype, n, ci, co, geom, nb, &g, "conv forward");
    if (st) return st;
    if (n == 0 || ec_geom_out_vol(&g) == 0) return EC_OK;
    int nt = BATCHED_THREADS(ci, &g, nb);
    if (dtype == EC_FLOAT32) {
        conv_args_f32 a;
        conv_args_init_f32(&a, ci, co, 1, geom);
        return conv_forward_batched_f32(n, &a, (const float*)x, (const float*)w,
                                        (const float*)bias, (float*)y, (float*)work, nb, nt);
    }
    conv_args_f64 a;
    conv_args_init_f64(&a, ci, co, 1, geom);
    return conv_forward_batched_f64(n, &a, (const double*)x, (const double*)w, (const double*)bias,
                                    (double*)y, (double*)work, nb, nt);
}

int ec_conv_backward_data_batched(int dtype, int64_t n, int64_t ci, int64_t co,
                                  const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx, ec_ptr work,
                                  int64_t nb) {
    ec_geom g;
    int st = check_batched(dtype, n, ci, co, geom, nb, &g, "conv backward (input)");
    if (st) return st;
    if (n == 0) return EC_OK;
    if (ec_geom_out_vol(&g) == 0) {
        memset((void*)gx, 0, (size_t)(n * ci * ec_geom_in_vol(&g)) * ec_itemsize[dtype]);
        return EC_OK;
    }
    int nt = BATCHED_THREADS(ci, &g, nb);
    if (dtype == EC_FLOAT32) {
        conv_args_f32 a;
        conv_args_init_f32(&a, ci, co, 1, geom);
        return conv_backward_data_batched_f32(n, &a, (const float*)gy, (const float*)w, (float*)gx,
                                              (float*)work, nb, nt);
    }
    conv_args_f64 a;
    conv_args_init_f64(&a, ci, co, 1, geom);
    return conv_backward_data_batched_f64(n, &a, (const double*)gy, (const double*)w, (double*)gx,
                                          (double*)work, nb, nt);
}

int ec_conv_backward_weight_batched(int dtype, int64_t n, int64_t ci, int64_t co,
                                    const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw,
                                    ec_ptr work, int64_t nb) {
    ec_geom g;
    int st = check_batched(dtype, n, ci, co, geom, nb, &g, "conv backward (weight)");
    if (st) return st;
    if (ec_geom_out_vol(&g) == 0) n = 0; /* no products: the gradient is zero */
    int nt = BATCHED_THREADS(ci, &g, nb);
    if (dtype == EC_FLOAT32) {
        conv_args_f32 a;
        conv_args_init_f32(&a, ci, co, 1, geom);
        return conv_backward_weight_batched_f32(n, &a, (const float*)x, (const float*)gy,
                                                (float*)gw, (float*)work, nb, nt);
    }
    conv_args_f64 a;
    conv_args_init_f64(&a, ci, co, 1, geom);
    return conv_backward_weight_batched_f64(n, &a, (const double*)x, (const double*)gy,
                                            (double*)gw, (double*)work, nb, nt);
}

int ec_conv_depthwise_forward(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                              ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y) {
    ec_geom g;
    int st = check_conv(dtype, n, ci, co, ci, geom, &g, "depthwise conv forward");
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return dw_forward_f32(n, ci, co, &g, (const float*)x, (const float*)w, (const float*)bias,
                              (float*)y);
    return dw_forward_f64(n, ci, co, &g, (const double*)x, (const double*)w, (const double*)bias,
                          (double*)y);
}

int ec_conv_depthwise_backward_data(int dtype, int64_t n, int64_t ci, int64_t co,
                                    const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx) {
    ec_geom g;
    int st = check_conv(dtype, n, ci, co, ci, geom, &g, "depthwise conv backward (input)");
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return dw_backward_data_f32(n, ci, co, &g, (const float*)gy, (const float*)w, (float*)gx);
    return dw_backward_data_f64(n, ci, co, &g, (const double*)gy, (const double*)w, (double*)gx);
}

int ec_conv_depthwise_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co,
                                      const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw,
                                      ec_ptr work) {
    ec_geom g;
    int st = check_conv(dtype, n, ci, co, ci, geom, &g, "depthwise conv backward (weight)");
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return dw_backward_weight_f32(n, ci, co, &g, (const float*)x, (const float*)gy, (float*)gw,
                                      (double*)work);
    return dw_backward_weight_f64(n, ci, co, &g, (const double*)x, (const double*)gy, (double*)gw,
                                  (double*)work);
}

int ec_conv_bias_grad(int dtype, int64_t n, int64_t c, int64_t l, ec_ptr gy, ec_ptr gb) {
    int st = check_float(dtype, "conv bias gradient");
    if (st) return st;
    if (n < 0 || c < 0 || l < 0) return ec_fail(EC_ERR_INVALID, "conv bias gradient: bad sizes");
    if (dtype == EC_FLOAT32) return bias_grad_f32(n, c, l, (const float*)gy, (float*)gb);
    return bias_grad_f64(n, c, l, (const double*)gy, (double*)gb);
}

int ec_im2col(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr x, ec_ptr col) {
    ec_geom g;
    int st = check_float(dtype, "im2col");
    if (st) return st;
    ec_geom_read(geom, &g);
    if (n < 0 || c < 0 || !ec_geom_valid(&g)) return ec_fail(EC_ERR_INVALID, "im2col: bad sizes");
    if (dtype == EC_FLOAT32) return im2col_batch_f32(n, c, &g, (const float*)x, (float*)col);
    return im2col_batch_f64(n, c, &g, (const double*)x, (double*)col);
}

int ec_col2im(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr col, ec_ptr x) {
    ec_geom g;
    int st = check_float(dtype, "col2im");
    if (st) return st;
    ec_geom_read(geom, &g);
    if (n < 0 || c < 0 || !ec_geom_valid(&g)) return ec_fail(EC_ERR_INVALID, "col2im: bad sizes");
    if (dtype == EC_FLOAT32) return col2im_batch_f32(n, c, &g, (const float*)col, (float*)x);
    return col2im_batch_f64(n, c, &g, (const double*)col, (double*)x);
}
