/* CUDA launchers of ember's nn kernels (nn_*.cuh), with the CPU kernels'
 * parameters (Note [Kernel interface per device]): losses (loss.c), the
 * multi-tensor optimizer steps whose CPU twins are ember_nn's fused steps
 * (packages/nn/csrc/optim.c; called as ec_optim_<name> through a CUDA
 * device's kernel namespace) and mixed precision's check (amp.c),
 * activations (activation.c), embeddings (embedding.c), norms (norm.c),
 * pooling and convolution (pool.c, conv.c), padding and interpolation
 * (resample.c), recurrent cells (rnn.c).  float32/float64 compute (Note [nn
 * kernel dtypes]); the kernels are compile groups of family ECU_FAM_NN
 * (ember_core/_cuda/nn_kernels.py).  Kernels that gather use grid-stride
 * loops; a launcher that needs a zeroed output clears it with an async memset
 * on the current stream first. */
#include <math.h>

#include "launch.h"
/* after launch.h (the types and codes it needs) */
#include "../index_map.h"

#define NN_BLOCK 256

static int nn_dtype_ok(int dtype, const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no CUDA kernel for dtype %d", op, dtype);
    return EC_OK;
}

static int nn_function(int op, int dtype, ecu_CUfunction* f) {
    return ecu_get_function(ECU_FAM_NN, op, dtype, 0, 0, f);
}

/* Blocks of NN_BLOCK threads for `work` items, a grid-stride loop beyond. */
static unsigned nn_blocks(int64_t work) {
    int64_t b = (work + NN_BLOCK - 1) / NN_BLOCK;
    if (b > 65535) b = 65535;
    return (unsigned)(b < 1 ? 1 : b);
}

/* Threads per row of a row kernel (a warp up to 256 lanes) and rows per block. */
static void row_shape(int64_t c, unsigned* bx, unsigned* by) {
    unsigned x = 32;
    while (x < 256 && (int64_t)x * 8 < c) x <<= 1;
    *bx = x;
    *by = 256 / x;
}

static int rows_grid(int64_t n, unsigned by, unsigned* gx, const char* op) {
    int64_t g = (n + by - 1) / by;
    if (g > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "%s: too many rows", op);
    *gx = (unsigned)g;
    return EC_OK;
}

/* ------------------------------------------------------------------ losses */

int ecu_nll_loss(int dtype, int64_t n, int64_t c, int64_t s, int reduction, int64_t ignore_index,
                 ec_ptr out, ec_ptr total_weight, ec_ptr x, ec_ptr target, ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0) return ec_fail(EC_ERR_INVALID, "nll_loss: negative size");
    int st = nn_dtype_ok(dtype, "nll_loss");
    if (st != EC_OK || ((st = ecu_ready()) != EC_OK)) return st;
    if (reduction == 0 && n * s == 0) return EC_OK;
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_NLL, dtype, &f)) != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&n, &c, &s, &reduction, &ignore_index, &out, &total_weight,
                    &x, &target, &weight, &err};
    /* Note [CUDA loss reductions]: one block sums a reduced loss */
    unsigned blocks = reduction == 0 ? nn_blocks(n * s) : 1;
    return ecu_launch(f, blocks, 1, 1, NN_BLOCK, 1, 1, 32 * sizeof(double), args);
}

int ecu_nll_loss_backward(int dtype, int64_t n, int64_t c, int64_t s, int reduction,
                          int64_t ignore_index, ec_ptr grad_in, ec_ptr grad, ec_ptr target,
                          ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0)
        return ec_fail(EC_ERR_INVALID, "nll_loss backward: negative size");
    int st = nn_dtype_ok(dtype, "nll_loss backward");
    if (st != EC_OK || ((st = ecu_ready()) != EC_OK)) return st;
    if (n * c * s == 0) return EC_OK;
    st = ecu_memset(grad_in, 0, (uint64_t)(n * c * s) * (uint64_t)ec_itemsize[dtype]);
    ecu_CUfunction f;
    if (st != EC_OK || (st = nn_function(ECU_NN_NLL_BWD, dtype, &f)) != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&n, &c, &s, &reduction, &ignore_index, &grad_in, &grad, &target, &weight, &err};
    unsigned blocks = reduction == 1 ? 1 : nn_blocks(n * s);
    return ecu_launch(f, blocks, 1, 1, NN_BLOCK, 1, 1, 32 * sizeof(double), args);
}

int ecu_cross_entropy(int dtype, int64_t n, int64_t c, int reduction, int64_t ignore_index,
                      ec_ptr out, ec_ptr total_weight, ec_ptr lse, ec_ptr x, ec_ptr target,
                      ec_ptr weight) {
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "cross_entropy: negative size");
    int st = nn_dtype_ok(dtype, "cross_entropy");
    if (st != EC_OK || ((st = ecu_ready()) != EC_OK)) return st;
    ecu_CUfunction f;
    ecu_CUdeviceptr err = ecu_error_word();
    if (n > 0) {
        unsigned bx, by, gx;
        row_shape(c, &bx, &by);
        if ((st = rows_grid(n, by, &gx, "cross_entropy")) != EC_OK) return st;
        if ((st = nn_function(ECU_NN_CE_ROWS, dtype, &f)) != EC_OK) return st;
        void* args[] = {&n, &c, &reduction, &ignore_index, &out, &lse, &x, &target, &weight, &err};
        st = ecu_launch(f, gx, 1, 1, bx, by, 1, 256 * (unsigned)ec_itemsize[dtype], args);
        if (st != EC_OK) return st;
    }
    if (reduction == 0) return EC_OK;
    if ((st = nn_function(ECU_NN_CE_REDUCE, dtype, &f)) != EC_OK) return st;
    void* args[] = {&n, &c, &reduction, &ignore_index, &out, &total_weight, &lse, &x, &target,
                    &weight};
    return ecu_launch(f, 1, 1, 1, NN_BLOCK, 1, 1, 32 * sizeof(double), args);
}

int ecu_cross_entropy_backward(int dtype, int64_t n, int64_t c, int reduction, int64_t ignore_index,
                               ec_ptr grad_in, ec_ptr grad, ec_ptr lse, ec_ptr x, ec_ptr target,
                               ec_ptr weight) {
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "cross_entropy backward: negative size");
    int st = nn_dtype_ok(dtype, "cross_entropy backward");
    if (st != EC_OK || ((st = ecu_ready()) != EC_OK)) return st;
    if (n == 0 || c == 0) return EC_OK;
    ecu_CUfunction f;
    ecu_CUdeviceptr err = ecu_error_word();
    /* Note [CUDA loss reductions]: coefficients into each row's first element */
    if ((st = nn_function(ECU_NN_CE_COEF, dtype, &f)) != EC_OK) return st;
    void* cargs[] = {&n, &c, &reduction, &ignore_index, &grad_in, &grad, &target, &weight, &err};
    unsigned blocks = reduction == 1 ? 1 : nn_blocks(n);
    st = ecu_launch(f, blocks, 1, 1, NN_BLOCK, 1, 1, 32 * sizeof(double), cargs);
    if (st != EC_OK) return st;
    unsigned bx, by, gx;
    row_shape(c, &bx, &by);
    if ((st = rows_grid(n, by, &gx, "cross_entropy backward")) != EC_OK) return st;
    if ((st = nn_function(ECU_NN_CE_BWD_ROWS, dtype, &f)) != EC_OK) return st;
    void* args[] = {&n, &c, &ignore_index, &grad_in, &lse, &x, &target};
    return ecu_launch(f, gx, 1, 1, bx, by, 1, 0, args);
}

/* ------------------------------------------------------- optimizer steps */

/* Note [Multi-tensor launches]
 * An optimizer step over a parameter group is a few launches, not one per
 * tensor: the tensors' addresses and sizes travel in the kernel's argument
 * (struct ecu_mt, under the 4 KiB parameter limit), up to ECU_MT_TENSORS
 * tensors and ECU_MT_BLOCKS chunks of ECU_MT_CHUNK elements per launch, each
 * block one chunk.  A tensor whose chunks do not fit continues in the next
 * launch.  The step counters are host tensors (as PyTorch's non-capturable
 * steps), bumped here, so the per-tensor scalars are plain numbers. */
#define ECU_MT_TENSORS 24
#define ECU_MT_BLOCKS 192
#define ECU_MT_CHUNK 16384
#define ECU_MT_LISTS 5

typedef struct ecu_mt {
    uint64_t ptr[ECU_MT_LISTS][ECU_MT_TENSORS];
    int64_t numel[ECU_MT_TENSORS];
    double s0[ECU_MT_TENSORS], s1[ECU_MT_TENSORS];
    int32_t chunk[ECU_MT_BLOCKS];
    uint8_t tensor[ECU_MT_BLOCKS];
} ecu_mt;

typedef struct ecu_mt_hyper {
    double lr, beta1, beta2, eps, weight_decay, momentum, dampening;
    int32_t amsgrad, maximize, decoupled, nesterov;
} ecu_mt_hyper;

/* Per-tensor values of a step: list pointers and the two scalars. */
typedef void (*mt_fill_fn)(const void* ctx, int64_t i, uint64_t* ptrs, double* s0, double* s1);

/* Run f over n tensors; `second` (may be 0) is the launch's second argument. */
static int mt_run(ecu_CUfunction f, int64_t n, const int64_t* numels, int lists, mt_fill_fn fill,
                  const void* ctx, void* second, void* third) {
    ecu_mt L;
    memset(&L, 0, sizeof L);
    int nt = 0, nb = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t m = numels[i];
        if (m <= 0) continue;
        int64_t chunks = (m + ECU_MT_CHUNK - 1) / ECU_MT_CHUNK;
        if (chunks > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "optimizer step: tensor too large");
        int64_t c = 0;
        while (c < chunks) {
            uint64_t ptrs[ECU_MT_LISTS] = {0};
            double s0 = 0, s1 = 0;
            fill(ctx, i, ptrs, &s0, &s1);
            for (int k = 0; k < lists; k++) L.ptr[k][nt] = ptrs[k];
            L.numel[nt] = m;
            L.s0[nt] = s0;
            L.s1[nt] = s1;
            for (; c < chunks && nb < ECU_MT_BLOCKS; c++, nb++) {
                L.tensor[nb] = (uint8_t)nt;
                L.chunk[nb] = (int32_t)c;
            }
            nt++;
            if (nt == ECU_MT_TENSORS || nb == ECU_MT_BLOCKS) {
                void* args[] = {&L, second, third};
                int st = ecu_launch(f, (unsigned)nb, 1, 1, NN_BLOCK, 1, 1, 0, args);
                if (st != EC_OK) return st;
                memset(&L, 0, sizeof L);
                nt = nb = 0;
            }
        }
    }
    if (nb > 0) {
        void* args[] = {&L, second, third};
        return ecu_launch(f, (unsigned)nb, 1, 1, NN_BLOCK, 1, 1, 0, args);
    }
    return EC_OK;
}

/* ++step of host counter i (float32 or float64, as ember_nn's bump). */
static double bump(const uint64_t* steps, int64_t i, int sdt) {
    if (sdt == EC_FLOAT64) return ++*(double*)(uintptr_t)steps[i];
    return ++*(float*)(uintptr_t)steps[i];
}

typedef struct {
    const uint64_t *params, *grads, *bufs;
    const uint8_t* first;
} sgd_ctx;

static void sgd_fill(const void* ctx, int64_t i, uint64_t* ptrs, double* s0, double* s1) {
    const sgd_ctx* c = (const sgd_ctx*)ctx;
    ptrs[0] = c->params[i];
    ptrs[1] = c->grads[i];
    ptrs[2] = c->bufs ? c->bufs[i] : 0;
    *s0 = c->first && c->first[i] ? 1 : 0;
    *s1 = 0;
}

int ecu_optim_sgd(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
                  const uint64_t* bufs, const uint8_t* first_step, const int64_t* numels,
                  double lr, double momentum, double dampening, double weight_decay, int nesterov,
                  int maximize) {
    (void)nthreads;
    int st = nn_dtype_ok(dtype, "SGD.step");
    if (st != EC_OK || n <= 0 || ((st = ecu_ready()) != EC_OK)) return st;
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_MT_SGD, dtype, &f)) != EC_OK) return st;
    ecu_mt_hyper h = {lr, 0, 0, 0, weight_decay, momentum, dampening, 0, maximize, 0, nesterov};
    sgd_ctx ctx = {params, grads, momentum != 0 ? bufs : NULL, first_step};
    return mt_run(f, n, numels, 3, sgd_fill, &ctx, &h, NULL);
}

typedef struct {
    const uint64_t *params, *grads, *m1, *m2, *mx, *steps;
    int sdt;
    double lr, beta1, beta2;
    int64_t last; /* the tensor whose step was bumped last (a tensor may span launches) */
    double s0, s1;
} adam_ctx;

static void adam_fill(const void* ctx, int64_t i, uint64_t* ptrs, double* s0, double* s1) {
    adam_ctx* c = (adam_ctx*)ctx;
    ptrs[0] = c->params[i];
    ptrs[1] = c->grads[i];
    ptrs[2] = c->m1[i];
    ptrs[3] = c->m2[i];
    ptrs[4] = c->mx ? c->mx[i] : 0;
    if (c->last != i) { /* once per tensor, as the CPU step */
        double step = bump(c->steps, i, c->sdt);
        double bc1 = 1 - pow(c->beta1, step), bc2 = 1 - pow(c->beta2, step);
        c->s0 = c->lr / bc1;
        c->s1 = sqrt(bc2);
        c->last = i;
    }
    *s0 = c->s0;
    *s1 = c->s1;
}

int ecu_optim_adam(int dtype, int nthreads, int64_t n, const uint64_t* params,
                   const uint64_t* grads, const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs,
                   const uint64_t* max_sqs, const uint64_t* steps, int sdt, const int64_t* numels,
                   double lr, double beta1, double beta2, double eps, double weight_decay,
                   int amsgrad, int maximize, int decoupled) {
    (void)nthreads;
    int st = nn_dtype_ok(dtype, "Adam.step");
    if (st != EC_OK || n <= 0 || ((st = ecu_ready()) != EC_OK)) return st;
    if (sdt != EC_FLOAT32 && sdt != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "Adam.step: step counters of dtype %d", sdt);
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_MT_ADAM, dtype, &f)) != EC_OK) return st;
    ecu_mt_hyper h = {lr, beta1, beta2, eps, weight_decay, 0, 0, amsgrad, maximize, decoupled, 0};
    adam_ctx ctx = {params, grads, exp_avgs, exp_avg_sqs, amsgrad ? max_sqs : NULL, steps, sdt,
                    lr, beta1, beta2, -1, 0, 0};
    /* a tensor of no elements still counts a step (the CPU loop bumps it too) */
    for (int64_t i = 0; i < n; i++)
        if (numels[i] <= 0) bump(steps, i, sdt);
    return mt_run(f, n, numels, 5, adam_fill, &ctx, &h, NULL);
}

typedef struct {
    const uint64_t* grads;
} unscale_ctx;

static void unscale_fill(const void* ctx, int64_t i, uint64_t* ptrs, double* s0, double* s1) {
    ptrs[0] = ((const unscale_ctx*)ctx)->grads[i];
    *s0 = *s1 = 0;
}

int ecu_amp_unscale(int dtype, int64_t n, const uint64_t* grads, const int64_t* numels,
                    ec_ptr found_inf, ec_ptr inv_scale) {
    if (!ec_valid_dtype(dtype) || !ec_is_float(dtype))
        return ec_fail(EC_ERR_DTYPE, "GradScaler.unscale_: gradients of dtype %d", dtype);
    int st;
    if (n <= 0 || ((st = ecu_ready()) != EC_OK)) return n <= 0 ? EC_OK : st;
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_MT_UNSCALE, dtype, &f)) != EC_OK) return st;
    unscale_ctx ctx = {grads};
    return mt_run(f, n, numels, 1, unscale_fill, &ctx, &inv_scale, &found_inf);
}

/* ------------------------------------------------------------ activations */

/* Threads for a grid-stride loop over n elements. */
static unsigned stride_blocks(int64_t n) {
    int64_t b = (n + NN_BLOCK - 1) / NN_BLOCK;
    if (b > (1 << 20)) b = 1 << 20;
    return (unsigned)(b < 1 ? 1 : b);
}

static int activation_launch(int bwd, int kind, int dtype, int ndim, const int64_t* layout,
                             ec_ptr out, ec_ptr a, ec_ptr b, double p0, double p1) {
    const char* op = bwd ? "activation backward" : "activation";
    if (kind < 0 || kind >= EC_NUM_ACT)
        return ec_fail(EC_ERR_DTYPE, "%s: no kernel for kind %d", op, kind);
    int st = nn_dtype_ok(dtype, op);
    if (st != EC_OK || ((st = ecu_ready()) != EC_OK)) return st;
    int isz[3] = {ec_itemsize[dtype], ec_itemsize[dtype], ec_itemsize[dtype]};
    ecu_geo g;
    int i32;
    st = ecu_geometry(bwd ? 3 : 2, ndim, layout, isz, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_NN, bwd ? ECU_NN_ACT_BWD : ECU_NN_ACT_FWD, dtype, kind,
                          i32 ? ECU_VAR_S32 : ECU_VAR_S64, &f);
    if (st != EC_OK) return st;
    void* args[] = {&g, &out, &a, &b, &p0, &p1};
    return ecu_launch(f, stride_blocks(g.numel), 1, 1, NN_BLOCK, 1, 1, 0, args);
}

int ecu_activation(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                   double p0, double p1) {
    return activation_launch(0, kind, dtype, ndim, layout, out, x, 0, p0, p1);
}

int ecu_activation_backward(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr grad_in,
                            ec_ptr grad, ec_ptr x, double p0, double p1) {
    return activation_launch(1, kind, dtype, ndim, layout, grad_in, grad, x, p0, p1);
}

/* -------------------------------------------------------------- embedding */

/* The unsigned type of each item size, as the dtype the launcher asks with. */
static int item_dtype(int itemsize) {
    switch (itemsize) {
        case 1: return EC_UINT8;
        case 2: return EC_INT16;
        case 4: return EC_INT32;
        default: return EC_INT64;
    }
}

int ecu_embedding(int dtype, int64_t num, int64_t dim, ec_ptr out, ec_ptr weight, int64_t w_rs,
                  ec_ptr idx, int idx_is_i32, int64_t n) {
    if (!ec_valid_dtype(dtype) || num < 0 || dim < 0 || n < 0)
        return ec_fail(EC_ERR_INVALID, "embedding: bad arguments");
    int st = ecu_ready();
    if (st != EC_OK || n * dim == 0) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_NN, ECU_NN_EMBEDDING, item_dtype(ec_itemsize[dtype]), 0, 0, &f);
    if (st != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&num, &dim, &out, &weight, &w_rs, &idx, &idx_is_i32, &n, &err};
    return ecu_launch(f, stride_blocks(n * dim), 1, 1, NN_BLOCK, 1, 1, 0, args);
}

int ecu_embedding_backward(int dtype, int64_t num, int64_t dim, ec_ptr grad_weight, ec_ptr grad,
                           ec_ptr idx, int idx_is_i32, int64_t n, int64_t padding_idx,
                           int scale_by_freq) {
    if (num < 0 || dim < 0 || n < 0)
        return ec_fail(EC_ERR_INVALID, "embedding backward: bad sizes");
    if (scale_by_freq)
        return ec_fail(EC_ERR_INVALID,
                       "embedding backward: scale_grad_by_freq has no CUDA kernel yet");
    int st = nn_dtype_ok(dtype, "embedding backward");
    if (st != EC_OK || ((st = ecu_ready()) != EC_OK)) return st;
    st = ecu_memset(grad_weight, 0, (uint64_t)(num * dim) * (uint64_t)ec_itemsize[dtype]);
    if (st != EC_OK || n * dim == 0) return st;
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_EMBEDDING_BWD, dtype, &f)) != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&num, &dim, &grad_weight, &grad, &idx, &idx_is_i32, &n, &padding_idx, &err};
    return ecu_launch(f, stride_blocks(n * dim), 1, 1, NN_BLOCK, 1, 1, 0, args);
}

/* ---------------------------------------------------------- normalization */

static int norm_args(int dtype, const char* op) {
    int st = nn_dtype_ok(dtype, op);
    return st != EC_OK ? st : ecu_ready();
}

/* One block of up to 512 threads per (channel, group) segment of `len` elements. */
static unsigned segment_threads(int64_t len) {
    unsigned t = 32;
    while (t < 512 && (int64_t)t * 4 < len) t <<= 1;
    return t;
}

int ecu_row_norm(int dtype, int rms, int64_t rows, int64_t cols, double eps, ec_ptr out,
                 ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight, ec_ptr bias) {
    if (rows < 0 || cols < 0) return ec_fail(EC_ERR_INVALID, "norm: negative size");
    int st = norm_args(dtype, "norm");
    if (st != EC_OK || rows == 0) return st;
    unsigned bx, by, gx;
    row_shape(cols, &bx, &by);
    if ((st = rows_grid(rows, by, &gx, "norm")) != EC_OK) return st;
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_ROW_NORM, dtype, &f)) != EC_OK) return st;
    if (rms) mean = 0;
    void* args[] = {&rows, &cols, &rms, &eps, &out, &mean, &rstd, &x, &weight, &bias};
    return ecu_launch(f, gx, 1, 1, bx, by, 1, 256 * sizeof(double), args);
}

int ecu_row_norm_backward(int dtype, int rms, int64_t rows, int64_t cols, ec_ptr grad_in,
                          ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad, ec_ptr x,
                          ec_ptr mean, ec_ptr rstd, ec_ptr weight) {
    if (rows < 0 || cols < 0) return ec_fail(EC_ERR_INVALID, "norm backward: negative size");
    int st = norm_args(dtype, "norm backward");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    if (rms) grad_bias = 0;
    if (grad_in && rows > 0) {
        unsigned bx, by, gx;
        row_shape(cols, &bx, &by);
        if ((st = rows_grid(rows, by, &gx, "norm backward")) != EC_OK) return st;
        if ((st = nn_function(ECU_NN_ROW_NORM_BWD, dtype, &f)) != EC_OK) return st;
        void* args[] = {&rows, &cols, &rms, &grad_in, &grad, &x, &mean, &rstd, &weight};
        st = ecu_launch(f, gx, 1, 1, bx, by, 1, 256 * sizeof(double), args);
        if (st != EC_OK) return st;
    }
    if ((!grad_weight && !grad_bias) || cols == 0) return EC_OK;
    if ((st = nn_function(ECU_NN_ROW_NORM_COLS, dtype, &f)) != EC_OK) return st;
    int64_t gx = (cols + 31) / 32;
    if (gx > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "norm backward: too many columns");
    void* args[] = {&rows, &cols, &rms, &grad_weight, &grad_bias, &grad, &x, &mean, &rstd};
    return ecu_launch(f, (unsigned)gx, 1, 1, 32, 8, 1, 2 * 256 * sizeof(double), args);
}

int ecu_batch_norm(int dtype, int running_dtype, int64_t n, int64_t c, int64_t s, int training,
                   double momentum, double eps, ec_ptr out, ec_ptr save_mean, ec_ptr save_invstd,
                   ec_ptr x, ec_ptr weight, ec_ptr bias, ec_ptr running_mean,
                   ec_ptr running_var) {
    if (n < 0 || c < 0 || s < 0) return ec_fail(EC_ERR_INVALID, "batch_norm: negative size");
    if (!training && (!running_mean || !running_var))
        return ec_fail(EC_ERR_INVALID, "batch_norm: evaluation needs running_mean and running_var");
    if ((running_mean || running_var) &&
        (!ec_valid_dtype(running_dtype) || !ec_is_float(running_dtype)))
        return ec_fail(EC_ERR_DTYPE, "batch_norm: running statistics of dtype %d", running_dtype);
    int st = norm_args(dtype, "batch_norm");
    if (st != EC_OK || c == 0) return st;
    if (c > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "batch_norm: too many channels");
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_BATCH_NORM, dtype, &f)) != EC_OK) return st;
    unsigned t = segment_threads(n * s);
    void* args[] = {&running_dtype, &n, &c, &s, &training, &momentum, &eps, &out, &save_mean,
                    &save_invstd, &x, &weight, &bias, &running_mean, &running_var};
    return ecu_launch(f, (unsigned)c, 1, 1, t, 1, 1, 32 * 3 * sizeof(double), args);
}

int ecu_batch_norm_backward(int dtype, int64_t n, int64_t c, int64_t s, int training,
                            ec_ptr grad_in, ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad,
                            ec_ptr x, ec_ptr save_mean, ec_ptr save_invstd, ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0)
        return ec_fail(EC_ERR_INVALID, "batch_norm backward: negative size");
    int st = norm_args(dtype, "batch_norm backward");
    if (st != EC_OK || c == 0) return st;
    if (c > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "batch_norm: too many channels");
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_BATCH_NORM_BWD, dtype, &f)) != EC_OK) return st;
    unsigned t = segment_threads(n * s);
    void* args[] = {&n, &c, &s, &training, &grad_in, &grad_weight, &grad_bias, &grad, &x,
                    &save_mean, &save_invstd, &weight};
    return ecu_launch(f, (unsigned)c, 1, 1, t, 1, 1, 32 * sizeof(double), args);
}

int ecu_group_norm(int dtype, int64_t n, int64_t c, int64_t s, int64_t g, double eps, ec_ptr out,
                   ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight, ec_ptr bias) {
    if (n < 0 || c < 0 || s < 0 || g <= 0 || c % g)
        return ec_fail(EC_ERR_INVALID, "group_norm: bad sizes (c=%lld, groups=%lld)",
                       (long long)c, (long long)g);
    int st = norm_args(dtype, "group_norm");
    if (st != EC_OK || n == 0) return st;
    if (n * g > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "group_norm: too many groups");
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_GROUP_NORM, dtype, &f)) != EC_OK) return st;
    unsigned t = segment_threads(c / g * s);
    void* args[] = {&n, &c, &s, &g, &eps, &out, &mean, &rstd, &x, &weight, &bias};
    return ecu_launch(f, (unsigned)(n * g), 1, 1, t, 1, 1, 32 * 3 * sizeof(double), args);
}

int ecu_group_norm_backward(int dtype, int64_t n, int64_t c, int64_t s, int64_t g, ec_ptr grad_in,
                            ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad, ec_ptr x,
                            ec_ptr mean, ec_ptr rstd, ec_ptr weight) {
    if (n < 0 || c < 0 || s < 0 || g <= 0 || c % g)
        return ec_fail(EC_ERR_INVALID, "group_norm backward: bad sizes");
    int st = norm_args(dtype, "group_norm backward");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    if (grad_in && n > 0) {
        if (n * g > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "group_norm: too many groups");
        if ((st = nn_function(ECU_NN_GROUP_NORM_BWD, dtype, &f)) != EC_OK) return st;
        unsigned t = segment_threads(c / g * s);
        void* args[] = {&n, &c, &s, &g, &grad_in, &grad, &x, &mean, &rstd, &weight};
        st = ecu_launch(f, (unsigned)(n * g), 1, 1, t, 1, 1, 32 * sizeof(double), args);
        if (st != EC_OK) return st;
    }
    if ((!grad_weight && !grad_bias) || c == 0) return EC_OK;
    if (c > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "group_norm: too many channels");
    if ((st = nn_function(ECU_NN_GROUP_NORM_WGRAD, dtype, &f)) != EC_OK) return st;
    unsigned t = segment_threads(n * s);
    void* args[] = {&n, &c, &s, &g, &grad_weight, &grad_bias, &grad, &x, &mean, &rstd};
    return ecu_launch(f, (unsigned)c, 1, 1, t, 1, 1, 32 * sizeof(double), args);
}

/* ------------------------------------------------- pooling and convolution */

/* The host twin of struct ecu_sgeom (nn_spatial.cuh): ember_core.h's geom
 * array as it is laid out. */
typedef struct {
    int64_t v[EC_GEOM_LEN];
} sgeom;

typedef struct {
    int64_t v[3];
} dims3;

static int sgeom_read(const int64_t* geom, sgeom* g, const char* op) {
    memcpy(g->v, geom, sizeof g->v);
    for (int i = 0; i < 3; i++)
        if (g->v[i] < 0 || g->v[3 + i] < 1 || g->v[6 + i] < 0 || g->v[9 + i] < 1 ||
            g->v[12 + i] < 0 || g->v[15 + i] < 1)
            return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    return EC_OK;
}

static int64_t vol3(const int64_t* v) { return v[0] * v[1] * v[2]; }

/* A grid-stride launch of op over `work` items. */
static int nn_elements(int op, int dtype, int64_t work, void** args) {
    if (work <= 0) return EC_OK;
    ecu_CUfunction f;
    int st = nn_function(op, dtype, &f);
    if (st != EC_OK) return st;
    return ecu_launch(f, stride_blocks(work), 1, 1, NN_BLOCK, 1, 1, 0, args);
}

int ecu_max_pool_forward(int dtype, int64_t planes, const int64_t* geom, ec_ptr x, ec_ptr y,
                         ec_ptr idx) {
    sgeom g;
    int st = nn_dtype_ok(dtype, "max_pool");
    if (st != EC_OK || (st = sgeom_read(geom, &g, "max_pool")) != EC_OK) return st;
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "max_pool: bad sizes");
    if (vol3(g.v) == 0 && vol3(g.v + 6) > 0)
        return ec_fail(EC_ERR_INVALID, "max_pool: empty input plane");
    if ((st = ecu_ready()) != EC_OK) return st;
    void* args[] = {&planes, &g, &x, &y, &idx};
    return nn_elements(ECU_NN_MAX_POOL, dtype, planes * vol3(g.v + 6), args);
}

int ecu_avg_pool_forward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                         int64_t divisor, ec_ptr x, ec_ptr y) {
    sgeom g;
    int st = nn_dtype_ok(dtype, "avg_pool");
    if (st != EC_OK || (st = sgeom_read(geom, &g, "avg_pool")) != EC_OK) return st;
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "avg_pool: bad sizes");
    if ((st = ecu_ready()) != EC_OK) return st;
    void* args[] = {&planes, &g, &count_include_pad, &divisor, &x, &y};
    return nn_elements(ECU_NN_AVG_POOL, dtype, planes * vol3(g.v + 6), args);
}

int ecu_avg_pool_backward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                          int64_t divisor, ec_ptr gy, ec_ptr gx) {
    sgeom g;
    int st = nn_dtype_ok(dtype, "avg_pool backward");
    if (st != EC_OK || (st = sgeom_read(geom, &g, "avg_pool backward")) != EC_OK) return st;
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "avg_pool backward: bad sizes");
    if ((st = ecu_ready()) != EC_OK) return st;
    void* args[] = {&planes, &g, &count_include_pad, &divisor, &gy, &gx};
    return nn_elements(ECU_NN_AVG_POOL_BWD, dtype, planes * vol3(g.v), args);
}

static int adaptive_dims(int dtype, int64_t planes, const int64_t* in3, const int64_t* out3,
                         dims3* i3, dims3* o3, const char* op) {
    int st = nn_dtype_ok(dtype, op);
    if (st != EC_OK) return st;
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    for (int i = 0; i < 3; i++) {
        if (in3[i] < 1 || out3[i] < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
        i3->v[i] = in3[i];
        o3->v[i] = out3[i];
    }
    return ecu_ready();
}

int ecu_adaptive_pool_forward(int dtype, int is_max, int64_t planes, const int64_t* in3,
                              const int64_t* out3, ec_ptr x, ec_ptr y, ec_ptr idx) {
    dims3 i3, o3;
    int st = adaptive_dims(dtype, planes, in3, out3, &i3, &o3,
                           is_max ? "adaptive_max_pool" : "adaptive_avg_pool");
    if (st != EC_OK) return st;
    void* args[] = {&is_max, &planes, &i3, &o3, &x, &y, &idx};
    return nn_elements(ECU_NN_ADAPTIVE_POOL, dtype, planes * vol3(o3.v), args);
}

int ecu_adaptive_avg_pool_backward(int dtype, int64_t planes, const int64_t* in3,
                                   const int64_t* out3, ec_ptr gy, ec_ptr gx) {
    dims3 i3, o3;
    int st = adaptive_dims(dtype, planes, in3, out3, &i3, &o3, "adaptive_avg_pool backward");
    if (st != EC_OK) return st;
    if (vol3(o3.v) == 0)
        return ecu_memset(gx, 0, (uint64_t)(planes * vol3(i3.v)) * (uint64_t)ec_itemsize[dtype]);
    void* args[] = {&planes, &i3, &o3, &gy, &gx};
    return nn_elements(ECU_NN_ADAPTIVE_AVG_BWD, dtype, planes * vol3(i3.v), args);
}

int ecu_index_scatter_add(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr gy,
                          ec_ptr idx, ec_ptr gx) {
    int st = nn_dtype_ok(dtype, "max_pool backward");
    if (st != EC_OK) return st;
    if (planes < 0 || in_vol < 0 || out_vol < 0)
        return ec_fail(EC_ERR_INVALID, "max_pool backward: bad sizes");
    if ((st = ecu_ready()) != EC_OK) return st;
    st = ecu_memset(gx, 0, (uint64_t)(planes * in_vol) * (uint64_t)ec_itemsize[dtype]);
    if (st != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&planes, &in_vol, &out_vol, &gy, &idx, &gx, &err};
    return nn_elements(ECU_NN_INDEX_SCATTER_ADD, dtype, planes * out_vol, args);
}

int ecu_index_gather(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr x,
                     ec_ptr idx, ec_ptr y) {
    int st = nn_dtype_ok(dtype, "max_pool double backward");
    if (st != EC_OK) return st;
    if (planes < 0 || in_vol < 0 || out_vol < 0)
        return ec_fail(EC_ERR_INVALID, "max_pool double backward: bad sizes");
    if ((st = ecu_ready()) != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&planes, &in_vol, &out_vol, &x, &idx, &y, &err};
    return nn_elements(ECU_NN_INDEX_GATHER, dtype, planes * out_vol, args);
}

int ecu_im2col(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr x, ec_ptr col) {
    sgeom g;
    int st = nn_dtype_ok(dtype, "im2col");
    if (st != EC_OK || (st = sgeom_read(geom, &g, "im2col")) != EC_OK) return st;
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "im2col: bad sizes");
    if ((st = ecu_ready()) != EC_OK) return st;
    void* args[] = {&n, &c, &g, &x, &col};
    return nn_elements(ECU_NN_IM2COL, dtype, n * c * vol3(g.v + 3) * vol3(g.v + 6), args);
}

int ecu_col2im(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr col, ec_ptr x) {
    sgeom g;
    int st = nn_dtype_ok(dtype, "col2im");
    if (st != EC_OK || (st = sgeom_read(geom, &g, "col2im")) != EC_OK) return st;
    if (n < 0 || c < 0) return ec_fail(EC_ERR_INVALID, "col2im: bad sizes");
    if ((st = ecu_ready()) != EC_OK) return st;
    void* args[] = {&n, &c, &g, &col, &x};
    return nn_elements(ECU_NN_COL2IM, dtype, n * c * vol3(g.v), args);
}

int ecu_conv_bias_grad(int dtype, int64_t n, int64_t c, int64_t l, ec_ptr gy, ec_ptr gb) {
    int st = nn_dtype_ok(dtype, "conv bias gradient");
    if (st != EC_OK) return st;
    if (n < 0 || c < 0 || l < 0) return ec_fail(EC_ERR_INVALID, "conv bias gradient: bad sizes");
    if (c == 0 || (st = ecu_ready()) != EC_OK) return st;
    if (c > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "conv bias gradient: too many channels");
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_BIAS_GRAD, dtype, &f)) != EC_OK) return st;
    void* args[] = {&n, &c, &l, &gy, &gb};
    return ecu_launch(f, (unsigned)c, 1, 1, segment_threads(n * l), 1, 1, 32 * sizeof(double),
                      args);
}

/* Note [CUDA convolution without cuDNN]
 * The GEMM convolution of conv_tmpl.h (Note [GEMM convolution]) with the
 * column matrix built on the device (ecu_im2col_k) and the products on cuBLAS
 * (ecu_matmul, batched over the groups): per image, y_g = w_g @ col_g;
 * backward data col_g = w_g^T @ gy_g then col2im; backward weight gw_g +=
 * gy_g @ col_g^T (beta 1 after the first image).  Images run one after
 * another through the first column buffer of `work` (par is the CPU's
 * thread count and is ignored here).  A pointwise convolution uses x itself. */
typedef struct {
    int64_t ci, co, groups, cig, cog, K, L, ivol;
    int pointwise;
    sgeom g;
} conv_plan;

static int conv_plan_make(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                          const int64_t* geom, conv_plan* p, const char* op) {
    int st = nn_dtype_ok(dtype, op);
    if (st != EC_OK || (st = sgeom_read(geom, &p->g, op)) != EC_OK) return st;
    if (n < 0 || ci < 1 || co < 1 || groups < 1 || ci % groups || co % groups)
        return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    p->ci = ci;
    p->co = co;
    p->groups = groups;
    p->cig = ci / groups;
    p->cog = co / groups;
    p->K = p->cig * vol3(p->g.v + 3);
    p->L = vol3(p->g.v + 6);
    p->ivol = vol3(p->g.v);
    p->pointwise = 1;
    for (int i = 0; i < 3; i++)
        p->pointwise &= p->g.v[3 + i] == 1 && p->g.v[9 + i] == 1 && p->g.v[12 + i] == 0;
    return ecu_ready();
}

static int conv_im2col_image(int dtype, const conv_plan* p, ec_ptr x, ec_ptr col) {
    int64_t one = 1, c = p->ci;
    sgeom g = p->g;
    void* args[] = {&one, &c, &g, &x, &col};
    return nn_elements(ECU_NN_IM2COL, dtype, p->ci * vol3(p->g.v + 3) * p->L, args);
}

int ecu_conv_forward(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                     const int64_t* geom, ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y, ec_ptr work,
                     int par) {
    (void)par;
    conv_plan p;
    int st = conv_plan_make(dtype, n, ci, co, groups, geom, &p, "conv forward");
    if (st != EC_OK || n == 0 || p.L == 0) return st;
    const int64_t isz = ec_itemsize[dtype];
    double beta = 0;
    if (bias) {
        void* args[] = {&n, &co, &p.L, &bias, &y};
        if ((st = nn_elements(ECU_NN_FILL_BIAS, dtype, n * co * p.L, args)) != EC_OK) return st;
        beta = 1;
    }
    for (int64_t i = 0; i < n; i++) {
        ec_ptr xi = x + (ec_ptr)(i * ci * p.ivol * isz), yi = y + (ec_ptr)(i * co * p.L * isz);
        ec_ptr col = xi;
        int64_t col_bs = p.cig * p.ivol;
        if (!p.pointwise) {
            if ((st = conv_im2col_image(dtype, &p, xi, work)) != EC_OK) return st;
            col = work;
            col_bs = p.K * p.L;
        }
        st = ecu_matmul(dtype, p.groups, p.cog, p.L, p.K, 1.0, w, p.cog * p.K, p.K, 1, col, col_bs,
                        p.L, 1, beta, yi, p.cog * p.L, p.L, 1);
        if (st != EC_OK) return st;
    }
    return EC_OK;
}

int ecu_conv_backward_data(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                           const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx, ec_ptr work,
                           int par) {
    (void)par;
    conv_plan p;
    int st = conv_plan_make(dtype, n, ci, co, groups, geom, &p, "conv backward (input)");
    if (st != EC_OK || n == 0) return st;
    const int64_t isz = ec_itemsize[dtype];
    if (p.L == 0) return ecu_memset(gx, 0, (uint64_t)(n * ci * p.ivol * isz));
    for (int64_t i = 0; i < n; i++) {
        ec_ptr gyi = gy + (ec_ptr)(i * co * p.L * isz), gxi = gx + (ec_ptr)(i * ci * p.ivol * isz);
        ec_ptr col = p.pointwise ? gxi : work;
        int64_t col_bs = p.pointwise ? p.cig * p.ivol : p.K * p.L;
        /* col_g (K x L) = w_g^T (K x cog) @ gy_g (cog x L) */
        st = ecu_matmul(dtype, p.groups, p.K, p.L, p.cog, 1.0, w, p.cog * p.K, 1, p.K, gyi,
                        p.cog * p.L, p.L, 1, 0.0, col, col_bs, p.L, 1);
        if (st != EC_OK) return st;
        if (!p.pointwise) {
            int64_t one = 1, c = ci;
            sgeom g = p.g;
            void* args[] = {&one, &c, &g, &work, &gxi};
            if ((st = nn_elements(ECU_NN_COL2IM, dtype, ci * p.ivol, args)) != EC_OK) return st;
        }
    }
    return EC_OK;
}

int ecu_conv_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                             const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw, ec_ptr work,
                             int par) {
    (void)par;
    conv_plan p;
    int st = conv_plan_make(dtype, n, ci, co, groups, geom, &p, "conv backward (weight)");
    if (st != EC_OK) return st;
    const int64_t isz = ec_itemsize[dtype];
    if (n == 0 || p.L == 0) return ecu_memset(gw, 0, (uint64_t)(co * p.K * isz));
    for (int64_t i = 0; i < n; i++) {
        ec_ptr xi = x + (ec_ptr)(i * ci * p.ivol * isz), gyi = gy + (ec_ptr)(i * co * p.L * isz);
        ec_ptr col = xi;
        int64_t col_bs = p.cig * p.ivol;
        if (!p.pointwise) {
            if ((st = conv_im2col_image(dtype, &p, xi, work)) != EC_OK) return st;
            col = work;
            col_bs = p.K * p.L;
        }
        /* gw_g (cog x K) (+)= gy_g (cog x L) @ col_g^T (L x K) */
        st = ecu_matmul(dtype, p.groups, p.cog, p.K, p.L, 1.0, gyi, p.cog * p.L, p.L, 1, col,
                        col_bs, 1, p.L, i ? 1.0 : 0.0, gw, p.cog * p.K, p.K, 1);
        if (st != EC_OK) return st;
    }
    return EC_OK;
}

static int depthwise_plan(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                          sgeom* g, const char* op) {
    int st = nn_dtype_ok(dtype, op);
    if (st != EC_OK || (st = sgeom_read(geom, g, op)) != EC_OK) return st;
    if (n < 0 || ci < 1 || co < 1 || co % ci) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    return ecu_ready();
}

int ecu_conv_depthwise_forward(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                               ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y) {
    sgeom g;
    int st = depthwise_plan(dtype, n, ci, co, geom, &g, "depthwise conv forward");
    if (st != EC_OK) return st;
    void* args[] = {&n, &ci, &co, &g, &x, &w, &bias, &y};
    return nn_elements(ECU_NN_DW_CONV, dtype, n * co * vol3(g.v + 6), args);
}

int ecu_conv_depthwise_backward_data(int dtype, int64_t n, int64_t ci, int64_t co,
                                     const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx) {
    sgeom g;
    int st = depthwise_plan(dtype, n, ci, co, geom, &g, "depthwise conv backward (input)");
    if (st != EC_OK) return st;
    void* args[] = {&n, &ci, &co, &g, &gy, &w, &gx};
    return nn_elements(ECU_NN_DW_CONV_BWD_DATA, dtype, n * ci * vol3(g.v), args);
}

int ecu_conv_depthwise_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co,
                                       const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw,
                                       ec_ptr work) {
    (void)work;
    sgeom g;
    int st = depthwise_plan(dtype, n, ci, co, geom, &g, "depthwise conv backward (weight)");
    if (st != EC_OK) return st;
    int64_t blocks = co * vol3(g.v + 3);
    if (blocks > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "depthwise conv: too many taps");
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_DW_CONV_BWD_WEIGHT, dtype, &f)) != EC_OK) return st;
    void* args[] = {&n, &ci, &co, &g, &x, &gy, &gw};
    return ecu_launch(f, (unsigned)blocks, 1, 1, segment_threads(n * vol3(g.v + 6)), 1, 1,
                      32 * sizeof(double), args);
}

/* ------------------------------------------------------------- resampling */

int ecu_index_map(int kind, int64_t in, int64_t out, int64_t before, double scale, int in_double,
                  ec_ptr map) {
    if (in < 1 || out < 0) return ec_fail(EC_ERR_INVALID, "index map: bad sizes");
    float sf = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
    double sd = scale > 0 ? 1.0 / scale : (double)in / (double)out;
    /* the argument errors of ec_index_map, found on the host (the map itself
     * is computed on the device: no copy, no synchronisation) */
    if (kind < EC_MAP_REFLECT || kind > EC_MAP_NEAREST_EXACT)
        return ec_fail(EC_ERR_INVALID, "index map: unknown kind %d", kind);
    if (kind == EC_MAP_REFLECT)
        for (int64_t o = 0; o < out; o++)
            if (ec_index_map_at(kind, in, before, sf, sd, in_double, o) < 0)
                return ec_fail(EC_ERR_INVALID, "reflection padding wider than the input");
    int st = ecu_ready();
    if (st != EC_OK || out == 0) return st;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_NN, ECU_NN_INDEX_MAP, EC_INT64, 0, 0, &f)) != EC_OK)
        return st;
    void* args[] = {&kind, &in, &out, &before, &sf, &sd, &in_double, &map};
    return ecu_launch(f, stride_blocks(out), 1, 1, NN_BLOCK, 1, 1, 0, args);
}

static int rs_dims(int64_t planes, const int64_t* in3, const int64_t* out3, dims3* i3, dims3* o3,
                   int64_t min_out, const char* op) {
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    for (int i = 0; i < 3; i++) {
        if (in3[i] < 1 || out3[i] < min_out) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
        i3->v[i] = in3[i];
        o3->v[i] = out3[i];
    }
    return ecu_ready();
}

/* Maps are the device's (made by ecu_index_map, whose positions are in range
 * by construction), so unlike the CPU they are not checked again here. */
int ecu_map_gather(int itemsize, int64_t planes, const int64_t* in3, const int64_t* out3,
                   ec_ptr maps, ec_ptr x, ec_ptr y) {
    if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8)
        return ec_fail(EC_ERR_DTYPE, "index map gather: item size %d", itemsize);
    dims3 i3, o3;
    int st = rs_dims(planes, in3, out3, &i3, &o3, 0, "index map gather");
    if (st != EC_OK) return st;
    void* args[] = {&planes, &i3, &o3, &maps, &x, &y};
    return nn_elements(ECU_NN_MAP_GATHER, item_dtype(itemsize), planes * vol3(o3.v), args);
}

int ecu_map_scatter_add(int dtype, int64_t planes, const int64_t* in3, const int64_t* out3,
                        ec_ptr maps, ec_ptr gy, ec_ptr gx) {
    int st = nn_dtype_ok(dtype, "index map scatter");
    if (st != EC_OK) return st;
    dims3 i3, o3;
    if ((st = rs_dims(planes, in3, out3, &i3, &o3, 0, "index map scatter")) != EC_OK) return st;
    st = ecu_memset(gx, 0, (uint64_t)(planes * vol3(i3.v)) * (uint64_t)ec_itemsize[dtype]);
    if (st != EC_OK) return st;
    void* args[] = {&planes, &i3, &o3, &maps, &gy, &gx};
    return nn_elements(ECU_NN_MAP_SCATTER_ADD, dtype, planes * vol3(o3.v), args);
}

int ecu_upsample_linear(int dtype, int backward, int64_t planes, const int64_t* in3,
                        const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                        ec_ptr dst) {
    int st = nn_dtype_ok(dtype, "interpolate (linear)");
    if (st != EC_OK) return st;
    dims3 i3, o3;
    if ((st = rs_dims(planes, in3, out3, &i3, &o3, 1, "interpolate (linear)")) != EC_OK) return st;
    struct {
        double v[3];
    } sc = {{scales[0], scales[1], scales[2]}};
    if (backward) {
        st = ecu_memset(dst, 0, (uint64_t)(planes * vol3(i3.v)) * (uint64_t)ec_itemsize[dtype]);
        if (st != EC_OK) return st;
    }
    void* args[] = {&planes, &i3, &o3, &align_corners, &sc, &src, &dst};
    return nn_elements(backward ? ECU_NN_UPSAMPLE_LINEAR_BWD : ECU_NN_UPSAMPLE_LINEAR, dtype,
                       planes * vol3(o3.v), args);
}

int ecu_upsample_bicubic(int dtype, int backward, int64_t planes, const int64_t* in3,
                         const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                         ec_ptr dst) {
    int st = nn_dtype_ok(dtype, "interpolate (bicubic)");
    if (st != EC_OK) return st;
    dims3 i3, o3;
    if ((st = rs_dims(planes, in3, out3, &i3, &o3, 1, "interpolate (bicubic)")) != EC_OK) return st;
    int64_t IH = in3[1], IW = in3[2], OH = out3[1], OW = out3[2];
    double hs = scales[1], ws = scales[2];
    if (backward) {
        st = ecu_memset(dst, 0, (uint64_t)(planes * IH * IW) * (uint64_t)ec_itemsize[dtype]);
        if (st != EC_OK) return st;
    }
    void* args[] = {&planes, &IH, &IW, &OH, &OW, &align_corners, &hs, &ws, &src, &dst};
    return nn_elements(backward ? ECU_NN_UPSAMPLE_BICUBIC_BWD : ECU_NN_UPSAMPLE_BICUBIC, dtype,
                       planes * OH * OW, args);
}

/* ---------------------------------------------- embedding bags and max_norm */

int ecu_embedding_bag(int dtype, int64_t num, int64_t dim, int mode, ec_ptr out,
                      ec_ptr offset2bag, ec_ptr bag_size, ec_ptr max_idx, ec_ptr weight,
                      int64_t w_rs, ec_ptr idx, int64_t n, ec_ptr offsets, int64_t bags,
                      ec_ptr psw, int64_t padding_idx) {
    if (num < 0 || dim < 0 || n < 0 || bags < 0 || mode < 0 || mode > 2)
        return ec_fail(EC_ERR_INVALID, "embedding_bag: bad arguments");
    int st = nn_dtype_ok(dtype, "embedding_bag");
    if (st != EC_OK || (st = ecu_ready()) != EC_OK) return st;
    /* indices outside every bag keep offset2bag -1, as on the CPU */
    if ((st = ecu_memset(offset2bag, 0xff, (uint64_t)n * 8)) != EC_OK) return st;
    if (bags == 0) return EC_OK;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&num, &dim, &mode, &out, &offset2bag, &bag_size, &max_idx, &weight, &w_rs,
                    &idx, &n, &offsets, &bags, &psw, &padding_idx, &err};
    return nn_elements(ECU_NN_EMBEDDING_BAG, dtype, bags * (dim ? dim : 1), args);
}

int ecu_embedding_bag_backward(int dtype, int64_t num, int64_t dim, int mode, ec_ptr grad_weight,
                               ec_ptr grad_psw, ec_ptr grad, ec_ptr weight, int64_t w_rs,
                               ec_ptr idx, int64_t n, ec_ptr offset2bag, ec_ptr bag_size,
                               ec_ptr max_idx, int64_t bags, ec_ptr psw, int64_t padding_idx,
                               int scale_by_freq) {
    if (num < 0 || dim < 0 || n < 0 || bags < 0 || mode < 0 || mode > 2)
        return ec_fail(EC_ERR_INVALID, "embedding_bag backward: bad arguments");
    if (scale_by_freq && mode != 2)
        return ec_fail(EC_ERR_INVALID,
                       "embedding_bag backward: scale_grad_by_freq has no CUDA kernel yet");
    int st = nn_dtype_ok(dtype, "embedding_bag backward");
    if (st != EC_OK || (st = ecu_ready()) != EC_OK) return st;
    st = ecu_memset(grad_weight, 0, (uint64_t)(num * dim) * (uint64_t)ec_itemsize[dtype]);
    if (st != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&num, &dim, &mode, &grad_weight, &grad, &idx, &n, &offset2bag, &bag_size,
                    &max_idx, &bags, &psw, &padding_idx, &err};
    st = nn_elements(ECU_NN_EMBEDDING_BAG_BWD, dtype, (mode == 2 ? bags : n) * dim, args);
    if (st != EC_OK || !grad_psw) return st;
    void* pargs[] = {&num, &dim, &grad_psw, &grad, &weight, &w_rs, &idx, &n, &offset2bag,
                     &padding_idx};
    return nn_elements(ECU_NN_EMBEDDING_BAG_PSW, dtype, n, pargs);
}

int ecu_embedding_renorm(int dtype, int64_t num, int64_t dim, ec_ptr weight, int64_t w_rs,
                         ec_ptr idx, int idx_is_i32, int64_t n, double max_norm,
                         double norm_type) {
    if (num < 0 || dim < 0 || n < 0) return ec_fail(EC_ERR_INVALID, "embedding_renorm_: bad sizes");
    int st = nn_dtype_ok(dtype, "embedding_renorm_");
    if (st != EC_OK || n == 0 || (st = ecu_ready()) != EC_OK) return st;
    if (n > 0x7fffffffLL) return ec_fail(EC_ERR_INVALID, "embedding_renorm_: too many indices");
    ecu_CUfunction f;
    if ((st = nn_function(ECU_NN_EMBEDDING_RENORM, dtype, &f)) != EC_OK) return st;
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&num, &dim, &weight, &w_rs, &idx, &idx_is_i32, &n, &max_norm, &norm_type, &err};
    return ecu_launch(f, (unsigned)n, 1, 1, segment_threads(dim), 1, 1, 32 * sizeof(double), args);
}

/* ------------------------------------------------------------ RNN cells */

static int rnn_check(int dtype, int64_t b, int64_t i, int64_t h, const char* op) {
    int st = nn_dtype_ok(dtype, op);
    if (st != EC_OK) return st;
    if (b < 0 || i < 0 || h < 0) return ec_fail(EC_ERR_INVALID, "%s: negative size", op);
    return ecu_ready();
}

/* out (b, w; row stride ld) += a (b, k; row stride a_rs) @ wt^T, wt (w, k) of
 * row stride w_rs (rnn.inc's gemm_nt). */
static int gemm_nt(int dtype, ec_ptr out, int64_t ld, int64_t b, int64_t w, int64_t k, ec_ptr a,
                   int64_t a_rs, ec_ptr wt, int64_t w_rs) {
    return ecu_matmul(dtype, 1, b, w, k, 1.0, a, 0, a_rs, 1, wt, 0, 1, w_rs, 1.0, out, 0, ld, 1);
}

/* rnn.inc's cell_gemm_back on cuBLAS. */
static int cell_gemm_back(int dtype, int64_t b, int64_t in, int64_t h, int64_t gates, ec_ptr dg,
                          ec_ptr dgh, int64_t ld, ec_ptr gx, ec_ptr gh, double beta_h,
                          ec_ptr gwih, ec_ptr gwhh, ec_ptr x, int64_t x_rs, ec_ptr hx,
                          int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                          int64_t whh_rs) {
    int64_t gw = gates * h;
    int st = EC_OK;
    if (gx)
        st = ecu_matmul(dtype, 1, b, in, gw, 1.0, dg, 0, ld, 1, w_ih, 0, wih_rs, 1, 0.0, gx, 0, in,
                        1);
    if (st == EC_OK && gh)
        st = ecu_matmul(dtype, 1, b, h, gw, 1.0, dgh, 0, ld, 1, w_hh, 0, whh_rs, 1, beta_h, gh, 0,
                        h, 1);
    if (st == EC_OK && gwih)
        st = ecu_matmul(dtype, 1, gw, in, b, 1.0, dg, 0, 1, ld, x, 0, x_rs, 1, 0.0, gwih, 0, in, 1);
    if (st == EC_OK && gwhh)
        st = ecu_matmul(dtype, 1, gw, h, b, 1.0, dgh, 0, 1, ld, hx, 0, h_rs, 1, 0.0, gwhh, 0, h, 1);
    return st;
}

static int col_sum(int dtype, ec_ptr db, ec_ptr d, int64_t b, int64_t w, int64_t ld) {
    void* args[] = {&b, &w, &ld, &db, &d};
    return nn_elements(ECU_NN_RNN_COL_SUM, dtype, w, args);
}

static int rnn_bias(int dtype, ec_ptr out, int64_t b, int64_t w, int64_t ld, ec_ptr b1,
                    ec_ptr b2) {
    void* args[] = {&b, &w, &ld, &out, &b1, &b2};
    return nn_elements(ECU_NN_RNN_BIAS, dtype, b * w, args);
}

int ecu_lstm_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr cy, ec_ptr ws,
                  ec_ptr x, int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr cx, int64_t c_rs,
                  ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh, int64_t whh_rs, ec_ptr b_ih,
                  ec_ptr b_hh) {
    int st = rnn_check(dtype, b, i, h, "lstm_cell");
    if (st != EC_OK || b == 0 || h == 0) return st;
    int64_t g4 = 4 * h;
    if ((st = rnn_bias(dtype, ws, b, g4, g4, b_ih, b_hh)) != EC_OK) return st;
    if ((st = gemm_nt(dtype, ws, g4, b, g4, i, x, x_rs, w_ih, wih_rs)) != EC_OK) return st;
    if ((st = gemm_nt(dtype, ws, g4, b, g4, h, hx, h_rs, w_hh, whh_rs)) != EC_OK) return st;
    void* args[] = {&b, &h, &ws, &hy, &cy, &cx, &c_rs};
    return nn_elements(ECU_NN_LSTM_POINT, dtype, b * h, args);
}

int ecu_lstm_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                           ec_ptr grad_hx, ec_ptr grad_cx, ec_ptr grad_w_ih, ec_ptr grad_w_hh,
                           ec_ptr grad_b, ec_ptr dgates, ec_ptr grad_hy, ec_ptr grad_cy,
                           ec_ptr ws, ec_ptr cx, int64_t c_rs, ec_ptr cy, ec_ptr x, int64_t x_rs,
                           ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                           int64_t whh_rs) {
    int st = rnn_check(dtype, b, i, h, "lstm_cell backward");
    if (st != EC_OK) return st;
    int64_t g4 = 4 * h;
    void* args[] = {&b, &h, &dgates, &grad_cx, &ws, &grad_hy, &grad_cy, &cx, &c_rs, &cy};
    if ((st = nn_elements(ECU_NN_LSTM_POINT_BWD, dtype, b * h, args)) != EC_OK) return st;
    if (grad_b && (st = col_sum(dtype, grad_b, dgates, b, g4, g4)) != EC_OK) return st;
    return cell_gemm_back(dtype, b, i, h, 4, dgates, dgates, g4, grad_x, grad_hx, 0.0, grad_w_ih,
                          grad_w_hh, x, x_rs, hx, h_rs, w_ih, wih_rs, w_hh, whh_rs);
}

/* Note: the GRU's gates need the hidden GEMM's n part apart from the input's;
 * ws (b, 4h) holds [r, z] pre-activations (both GEMMs added, both biases),
 * the input part of n (+ b_ih), and the hidden part of n (+ b_hh), so no
 * scratch beyond ws is needed. */
int ecu_gru_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr ws, ec_ptr x,
                 int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                 int64_t whh_rs, ec_ptr b_ih, ec_ptr b_hh) {
    int st = rnn_check(dtype, b, i, h, "gru_cell");
    if (st != EC_OK || b == 0 || h == 0) return st;
    const int64_t g4 = 4 * h, isz = ec_itemsize[dtype];
    const ec_ptr ws_n = ws + (ec_ptr)(2 * h * isz), ws_hn = ws + (ec_ptr)(3 * h * isz);
    const ec_ptr whh_n = w_hh + (ec_ptr)(2 * h * whh_rs * isz);
    /* [r, z]: b_ih + b_hh; n: b_ih; hn: b_hh */
    if ((st = rnn_bias(dtype, ws, b, 2 * h, g4, b_ih, b_hh)) != EC_OK) return st;
    if ((st = rnn_bias(dtype, ws_n, b, h, g4, b_ih ? b_ih + (ec_ptr)(2 * h * isz) : 0, 0)) != EC_OK)
        return st;
    if ((st = rnn_bias(dtype, ws_hn, b, h, g4, b_hh ? b_hh + (ec_ptr)(2 * h * isz) : 0, 0)) != EC_OK)
        return st;
    if ((st = gemm_nt(dtype, ws, g4, b, 3 * h, i, x, x_rs, w_ih, wih_rs)) != EC_OK) return st;
    if ((st = gemm_nt(dtype, ws, g4, b, 2 * h, h, hx, h_rs, w_hh, whh_rs)) != EC_OK) return st;
    if ((st = gemm_nt(dtype, ws_hn, g4, b, h, h, hx, h_rs, whh_n, whh_rs)) != EC_OK) return st;
    void* args[] = {&b, &h, &ws, &hy, &hx, &h_rs};
    return nn_elements(ECU_NN_GRU_POINT, dtype, b * h, args);
}

int ecu_gru_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                          ec_ptr grad_hx, ec_ptr grad_w_ih, ec_ptr grad_w_hh, ec_ptr grad_b_ih,
                          ec_ptr grad_b_hh, ec_ptr dgates, ec_ptr grad_hy, ec_ptr ws, ec_ptr x,
                          int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs,
                          ec_ptr w_hh, int64_t whh_rs) {
    int st = rnn_check(dtype, b, i, h, "gru_cell backward");
    if (st != EC_OK) return st;
    const int64_t g6 = 6 * h, g3 = 3 * h, isz = ec_itemsize[dtype];
    void* args[] = {&b, &h, &dgates, &grad_hx, &ws, &grad_hy, &hx, &h_rs};
    if ((st = nn_elements(ECU_NN_GRU_POINT_BWD, dtype, b * h, args)) != EC_OK) return st;
    const ec_ptr dgh = dgates + (ec_ptr)(g3 * isz);
    if (grad_b_ih && (st = col_sum(dtype, grad_b_ih, dgates, b, g3, g6)) != EC_OK) return st;
    if (grad_b_hh && (st = col_sum(dtype, grad_b_hh, dgh, b, g3, g6)) != EC_OK) return st;
    return cell_gemm_back(dtype, b, i, h, 3, dgates, dgh, g6, grad_x, grad_hx, 1.0, grad_w_ih,
                          grad_w_hh, x, x_rs, hx, h_rs, w_ih, wih_rs, w_hh, whh_rs);
}
