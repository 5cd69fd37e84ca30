/* CUDA launchers of the sampling kernels (cpu/nn/sampling.c's ec_grid_sample_* and
 * ec_ctc_loss_*, same parameters; kernels in nn_sample.cuh, compile groups of
 * family ECU_FAM_NN).  float32/float64 compute (float16/bfloat16 arrive as
 * float32, as on the CPU).  The CTC loss's targets, offsets and lengths are
 * device arrays here: what the CPU checks before running, the kernels check
 * and report through the device's error word (Note [Device-side errors]). */
#include "launch.h"

#define SAMPLE_BLOCK 256
#define SAMPLE_SMEM_DEFAULT (48 * 1024)

static unsigned sample_blocks(int64_t work) {
    int64_t b = (work + SAMPLE_BLOCK - 1) / SAMPLE_BLOCK;
    if (b > (1 << 20)) b = 1 << 20; /* grid-stride loops beyond */
    return (unsigned)(b < 1 ? 1 : b);
}

static int gs_check(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                    const int64_t* out3, int mode, int padding, const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no CUDA kernel for dtype %d", op, dtype);
    if (ndim != 2 && ndim != 3) return ec_fail(EC_ERR_INVALID, "%s: %d-D input", op, ndim);
    if (mode != EC_GS_BILINEAR && mode != EC_GS_NEAREST && mode != EC_GS_BICUBIC)
        return ec_fail(EC_ERR_INVALID, "%s: unknown mode %d", op, mode);
    if (ndim == 3 && mode == EC_GS_BICUBIC)
        return ec_fail(EC_ERR_INVALID, "%s: bicubic needs a 4-D input", op);
    if (padding != EC_GS_PAD_ZEROS && padding != EC_GS_PAD_BORDER &&
        padding != EC_GS_PAD_REFLECTION)
        return ec_fail(EC_ERR_INVALID, "%s: unknown padding mode %d", op, padding);
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    for (int d = 0; d < 3; d++)
        if (in3[d] < 1 || out3[d] < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    if (ndim == 2 && (in3[0] != 1 || out3[0] != 1))
        return ec_fail(EC_ERR_INVALID, "%s: 2-D sizes need D = 1", op);
    return ecu_ready();
}

/* One launch: a thread per output position; y is null for the backward. */
static int gs_launch(int dtype, int ndim, int backward, int64_t n, int64_t c, const int64_t* in3,
                     const int64_t* out3, int mode, int padding, int align_corners, ec_ptr x,
                     ec_ptr grid, ec_ptr y, ec_ptr gy, ec_ptr gx, ec_ptr ggrid) {
    int64_t positions = n * out3[0] * out3[1] * out3[2];
    if (positions == 0) return EC_OK;
    int op = ndim == 2 ? (backward ? ECU_NN_GRID_SAMPLE_2D_BWD : ECU_NN_GRID_SAMPLE_2D)
                       : (backward ? ECU_NN_GRID_SAMPLE_3D_BWD : ECU_NN_GRID_SAMPLE_3D);
    ecu_CUfunction f;
    int st = ecu_get_function(ECU_FAM_NN, op, dtype, 0, 0, &f);
    if (st != EC_OK) return st;
    unsigned blocks = sample_blocks(positions);
    if (ndim == 2) {
        int64_t H = in3[1], W = in3[2], Ho = out3[1], Wo = out3[2];
        void* args[] = {&n,    &c, &H,    &W,  &Ho, &Wo,    &mode, &padding, &align_corners,
                        &x, &grid, &y, &gy, &gx, &ggrid};
        return ecu_launch(f, blocks, 1, 1, SAMPLE_BLOCK, 1, 1, 0, args);
    }
    struct {
        int64_t v[3];
    } i3 = {{in3[0], in3[1], in3[2]}}, o3 = {{out3[0], out3[1], out3[2]}};
    void* args[] = {&n, &c, &i3, &o3, &mode, &padding, &align_corners, &x, &grid, &y, &gy,
                    &gx, &ggrid};
    return ecu_launch(f, blocks, 1, 1, SAMPLE_BLOCK, 1, 1, 0, args);
}

int ecu_grid_sample_forward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                            const int64_t* out3, int mode, int padding, int align_corners,
                            ec_ptr x, ec_ptr grid, ec_ptr y) {
    int st = gs_check(dtype, ndim, n, c, in3, out3, mode, padding, "grid_sample");
    if (st != EC_OK) return st;
    return gs_launch(dtype, ndim, 0, n, c, in3, out3, mode, padding, align_corners, x, grid, y,
                     0, 0, 0);
}

int ecu_grid_sample_backward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                             const int64_t* out3, int mode, int padding, int align_corners,
                             ec_ptr gy, ec_ptr x, ec_ptr grid, ec_ptr gx, ec_ptr ggrid) {
    int st = gs_check(dtype, ndim, n, c, in3, out3, mode, padding, "grid_sample backward");
    if (st != EC_OK) return st;
    if (gx) { /* the kernel adds into it */
        uint64_t bytes = (uint64_t)(n * c * in3[0] * in3[1] * in3[2]) * ec_itemsize[dtype];
        if (bytes && (st = ecu_memset(gx, 0, bytes)) != EC_OK) return st;
    }
    return gs_launch(dtype, ndim, 1, n, c, in3, out3, mode, padding, align_corners, x, grid, 0,
                     gy, gx, ggrid);
}

/* ------------------------------------------------------------------ CTC */

static int ctc_check(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax, int64_t blank,
                     const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no CUDA kernel for dtype %d", op, dtype);
    if (tmax < 0 || n < 0 || c < 1 || smax < 0 || blank < 0 || blank >= c)
        return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    if (n > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "%s: batch of %lld is too large", op,
                                         (long long)n);
    return ecu_ready();
}

/* Threads of a sample's block: enough for the extended target, a warp at least. */
static unsigned ctc_threads(int64_t smax) {
    int64_t s2 = 2 * smax + 1;
    unsigned t = 32;
    while (t < 512 && (int64_t)t < s2) t <<= 1;
    return t;
}

int ecu_ctc_loss_forward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                         ec_ptr log_probs, ec_ptr targets, int64_t ntargets,
                         ec_ptr target_offsets, ec_ptr input_lengths, ec_ptr target_lengths,
                         int64_t blank, ec_ptr log_alpha, ec_ptr nll) {
    int st = ctc_check(dtype, tmax, n, c, smax, blank, "ctc_loss");
    if (st != EC_OK || n == 0) return st;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_NN, ECU_NN_CTC, dtype, 0, 0, &f)) != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&tmax,          &n,        &c,      &smax,          &log_probs,
                    &targets,       &ntargets, &target_offsets, &input_lengths,
                    &target_lengths, &blank,   &log_alpha, &nll, &err};
    return ecu_launch(f, (unsigned)n, 1, 1, ctc_threads(smax), 1, 1, 0, args);
}

int ecu_ctc_loss_backward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                          ec_ptr log_probs, ec_ptr targets, int64_t ntargets,
                          ec_ptr target_offsets, ec_ptr input_lengths, ec_ptr target_lengths,
                          int64_t blank, ec_ptr log_alpha, ec_ptr nll, ec_ptr grad_out,
                          int64_t grad_stride, int zero_infinity, ec_ptr grad) {
    int st = ctc_check(dtype, tmax, n, c, smax, blank, "ctc_loss backward");
    if (st != EC_OK || n == 0) return st;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_NN, ECU_NN_CTC_BWD, dtype, 0, 0, &f)) != EC_OK) return st;
    /* two rows of beta and two int32 per extended-target position */
    uint64_t smem = (uint64_t)(2 * smax + 1) * (2 * (uint64_t)ec_itemsize[dtype] + 8);
    if (smem > SAMPLE_SMEM_DEFAULT) {
        int limit = 0;
        /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
        if (ecu_device_attribute(ecu_device(), 97, &limit) != EC_OK || smem > (uint64_t)limit ||
            ecu_check(ecu_drv.cuFuncSetAttribute(
                          f, ECU_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
                      "cuFuncSetAttribute") != EC_OK)
            return ec_fail(EC_ERR_INVALID,
                           "ctc_loss backward on CUDA: targets of %lld symbols need %llu bytes "
                           "of shared memory, more than this device gives one block (%d)",
                           (long long)smax, (unsigned long long)smem, limit);
    }
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&tmax,      &n,           &c,           &smax,           &log_probs,
                    &targets,   &ntargets,    &target_offsets, &input_lengths, &target_lengths,
                    &blank,     &log_alpha,   &nll,         &grad_out,       &grad_stride,
                    &zero_infinity, &grad,    &err};
    return ecu_launch(f, (unsigned)n, 1, 1, ctc_threads(smax), 1, 1, (unsigned)smem, args);
}
