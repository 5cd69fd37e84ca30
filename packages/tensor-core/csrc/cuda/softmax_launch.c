/* CUDA launchers of softmax and log_softmax, forward and backward
 * (ec_softmax, ec_softmax_backward), with the CPU kernels' parameters (Note
 * [Kernel interface per device]): rows when the softmax dim is innermost
 * (lanes of a warp up to a 512-thread block per row, vector loads), columns
 * otherwise (a thread per inner position, a few more splitting the dim). */
#include "launch.h"

static int64_t pow2ceil(int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

static int softmax_launch(int bwd, int dtype, int log, int64_t outer, int64_t dim, int64_t inner,
                          ec_ptr y, ec_ptr x, ec_ptr z) {
    const char* op = bwd ? "softmax_backward" : "softmax";
    if (outer < 0 || dim < 0 || inner < 0) return ec_fail(EC_ERR_INVALID, "%s: negative size", op);
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no kernel for dtype %d", op, dtype);
    if (outer == 0 || dim == 0 || inner == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype];
    ecu_CUfunction f;
    if (inner == 1) {
        int64_t vec = 16 / isz, bx = 32;
        while (bx < 512 && bx * vec * 4 < dim) bx <<= 1;
        int64_t by = bx >= 256 ? 1 : 256 / bx;
        int64_t gx = (outer + by - 1) / by;
        if (gx > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "%s: too many rows", op);
        unsigned smem = bx > 32 ? (unsigned)(by * (bx / 32) * 16) : 0;
        st = ecu_get_function(ECU_FAM_SOFTMAX, bwd, dtype, 0, ECU_SM_ROWS, &f);
        if (st != EC_OK) return st;
        void* args[] = {&outer, &dim, &y, &x, &z, &log};
        return ecu_launch(f, (unsigned)gx, 1, 1, (unsigned)bx, (unsigned)by, 1, smem, args);
    }
    int64_t bx = inner < 32 ? pow2ceil(inner) : 32, by = 1;
    while (by < 8 && by * 2 <= dim && bx * by * 2 <= 256) by <<= 1;
    int64_t nib = (inner + bx - 1) / bx;
    if (nib > 0x7fffffffLL / outer) return ec_fail(EC_ERR_INVALID, "%s: too many columns", op);
    int64_t gx = outer * nib;
    st = ecu_get_function(ECU_FAM_SOFTMAX, bwd, dtype, 0, ECU_SM_COLS, &f);
    if (st != EC_OK) return st;
    void* args[] = {&outer, &dim, &inner, &y, &x, &z, &log};
    return ecu_launch(f, (unsigned)gx, 1, 1, (unsigned)bx, (unsigned)by, 1,
                      (unsigned)(bx * by * 16), args);
}

int ecu_softmax(int dtype, int log, int64_t outer, int64_t dim, int64_t inner, ec_ptr out,
                ec_ptr x) {
    return softmax_launch(0, dtype, log, outer, dim, inner, out, x, 0);
}

int ecu_softmax_backward(int dtype, int log, int64_t outer, int64_t dim, int64_t inner,
                         ec_ptr grad_in, ec_ptr grad, ec_ptr y) {
    return softmax_launch(1, dtype, log, outer, dim, inner, grad_in, grad, y);
}
