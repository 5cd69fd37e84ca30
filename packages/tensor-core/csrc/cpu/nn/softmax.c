/* softmax and log_softmax along one dim, and their backward (ec_softmax*). */
#include "nn.h"

#define T float
#define SFX _f32
#define EXP nn_expf
#define LOG logf
#include "softmax.inc"
#undef T
#undef SFX
#undef EXP
#undef LOG

#define T double
#define SFX _f64
#define EXP exp
#define LOG log
#include "softmax.inc"
#undef T
#undef SFX
#undef EXP
#undef LOG

static int check_sizes(const char* op, int64_t outer, int64_t dim, int64_t inner) {
    if (outer < 0 || dim < 0 || inner < 0)
        return ec_fail(EC_ERR_INVALID, "%s: negative size", op);
    return EC_OK;
}

int ec_softmax(int dtype, int log, int64_t outer, int64_t dim, int64_t inner, ec_ptr out,
               ec_ptr x) {
    int st = check_sizes("softmax", outer, dim, inner);
    if (st) return st;
    if (dtype == EC_FLOAT32) return softmax_f32(log, outer, dim, inner, (float*)out, (const float*)x);
    if (dtype == EC_FLOAT64)
        return softmax_f64(log, outer, dim, inner, (double*)out, (const double*)x);
    return ec_fail(EC_ERR_DTYPE, "softmax: no kernel for dtype %d", dtype);
}

int ec_softmax_backward(int dtype, int log, int64_t outer, int64_t dim, int64_t inner,
                        ec_ptr grad_in, ec_ptr grad, ec_ptr y) {
    int st = check_sizes("softmax_backward", outer, dim, inner);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return softmax_backward_f32(log, outer, dim, inner, (float*)grad_in, (const float*)grad,
                                    (const float*)y);
    if (dtype == EC_FLOAT64)
        return softmax_backward_f64(log, outer, dim, inner, (double*)grad_in, (const double*)grad,
                                    (const double*)y);
    return ec_fail(EC_ERR_DTYPE, "softmax_backward: no kernel for dtype %d", dtype);
}
