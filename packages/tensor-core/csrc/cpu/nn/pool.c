/* Pooling kernels: max (with indices), average, adaptive average and max, and
 * the index scatter/gather that max pooling's backward and double backward
 * use.  Python (ember_core._ops.nn.pool) checks shapes, computes output sizes and
 * allocates outputs; the per-type bodies live in pool_tmpl.h. */
#include "spatial.h"

#define T float
#define F(name) name##_f32
#include "pool_tmpl.h"
#undef T
#undef F

#define T double
#define F(name) name##_f64
#include "pool_tmpl.h"
#undef T
#undef F

static int pool_check(int dtype, int64_t planes, const int64_t* geom, ec_geom* g, const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no kernel for dtype %d (float32/float64 only)", op, dtype);
    ec_geom_read(geom, g);
    if (planes < 0 || !ec_geom_valid(g)) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    return EC_OK;
}

int ec_max_pool_forward(int dtype, int64_t planes, const int64_t* geom, ec_ptr x, ec_ptr y,
                        ec_ptr idx) {
    ec_geom g;
    int st = pool_check(dtype, planes, geom, &g, "max_pool");
    if (st) return st;
    if (ec_geom_in_vol(&g) == 0 && ec_geom_out_vol(&g) > 0)
        return ec_fail(EC_ERR_INVALID, "max_pool: empty input plane");
    if (dtype == EC_FLOAT32)
        return max_pool_forward_f32(planes, &g, (const float*)x, (float*)y, (int64_t*)idx);
    return max_pool_forward_f64(planes, &g, (const double*)x, (double*)y, (int64_t*)idx);
}

int ec_avg_pool_forward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                        int64_t divisor, ec_ptr x, ec_ptr y) {
    ec_geom g;
    int st = pool_check(dtype, planes, geom, &g, "avg_pool");
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return avg_pool_forward_f32(planes, &g, count_include_pad, divisor, (const float*)x, (float*)y);
    return avg_pool_forward_f64(planes, &g, count_include_pad, divisor, (const double*)x, (double*)y);
}

int ec_avg_pool_backward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                         int64_t divisor, ec_ptr gy, ec_ptr gx) {
    ec_geom g;
    int st = pool_check(dtype, planes, geom, &g, "avg_pool backward");
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return avg_pool_backward_f32(planes, &g, count_include_pad, divisor, (const float*)gy,
                                     (float*)gx);
    return avg_pool_backward_f64(planes, &g, count_include_pad, divisor, (const double*)gy,
                                 (double*)gx);
}

static int adaptive_check(int dtype, int64_t planes, const int64_t* in3, const int64_t* out3,
                          const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no kernel for dtype %d (float32/float64 only)", op, dtype);
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    for (int i = 0; i < 3; i++)
        if (in3[i] < 1 || out3[i] < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    return EC_OK;
}

int ec_adaptive_pool_forward(int dtype, int is_max, int64_t planes, const int64_t* in3,
                             const int64_t* out3, ec_ptr x, ec_ptr y, ec_ptr idx) {
    int st = adaptive_check(dtype, planes, in3, out3, is_max ? "adaptive_max_pool" : "adaptive_avg_pool");
    if (st) return st;
    if (out3[0] * out3[1] * out3[2] == 0) return EC_OK;
    if (dtype == EC_FLOAT32)
        return adaptive_pool_forward_f32(is_max, planes, in3, out3, (const float*)x, (float*)y,
                                         (int64_t*)idx);
    return adaptive_pool_forward_f64(is_max, planes, in3, out3, (const double*)x, (double*)y,
                                     (int64_t*)idx);
}

int ec_adaptive_avg_pool_backward(int dtype, int64_t planes, const int64_t* in3,
                                  const int64_t* out3, ec_ptr gy, ec_ptr gx) {
    int st = adaptive_check(dtype, planes, in3, out3, "adaptive_avg_pool backward");
    if (st) return st;
    if (out3[0] * out3[1] * out3[2] == 0) {
        memset((void*)gx, 0, (size_t)(planes * in3[0] * in3[1] * in3[2]) * ec_itemsize[dtype]);
        return EC_OK;
    }
    if (dtype == EC_FLOAT32)
        return adaptive_avg_pool_backward_f32(planes, in3, out3, (const float*)gy, (float*)gx);
    return adaptive_avg_pool_backward_f64(planes, in3, out3, (const double*)gy, (double*)gx);
}

int ec_index_scatter_add(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr gy,
                         ec_ptr idx, ec_ptr gx) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "max_pool backward: no kernel for dtype %d", dtype);
    if (planes < 0 || in_vol < 0 || out_vol < 0)
        return ec_fail(EC_ERR_INVALID, "max_pool backward: bad sizes");
    int64_t bad = 0;
    int failed = dtype == EC_FLOAT32
                     ? index_scatter_add_f32(planes, in_vol, out_vol, (const float*)gy,
                                             (const int64_t*)idx, (float*)gx, &bad)
                     : index_scatter_add_f64(planes, in_vol, out_vol, (const double*)gy,
                                             (const int64_t*)idx, (double*)gx, &bad);
    if (failed)
        return ec_fail(EC_ERR_INDEX, "index %lld is out of bounds for a plane of %lld elements",
                       (long long)bad, (long long)in_vol);
    return EC_OK;
}

int ec_index_gather(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr x,
                    ec_ptr idx, ec_ptr y) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "max_pool double backward: no kernel for dtype %d", dtype);
    if (planes < 0 || in_vol < 0 || out_vol < 0)
        return ec_fail(EC_ERR_INVALID, "max_pool double backward: bad sizes");
    int64_t bad = 0;
    int failed = dtype == EC_FLOAT32
                     ? index_gather_f32(planes, in_vol, out_vol, (const float*)x,
                                        (const int64_t*)idx, (float*)y, &bad)
                     : index_gather_f64(planes, in_vol, out_vol, (const double*)x,
                                        (const int64_t*)idx, (double*)y, &bad);
    if (failed)
        return ec_fail(EC_ERR_INDEX, "index %lld is out of bounds for a plane of %lld elements",
                       (long long)bad, (long long)in_vol);
    return EC_OK;
}
