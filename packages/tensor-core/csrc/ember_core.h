/* ember_core: the CPU kernels of ember's tensors.
 *
 * This header is both the C API and the source of the cffi cdef (the text
 * between the cdef markers is read by csrc/build.py), so it stays within what
 * cffi parses: declarations, enums and integer #defines only.
 *
 * Conventions (Note [Kernel contract]):
 *  - Kernels take raw pointers, shapes and strides and never allocate tensor
 *    memory; Python decides shapes, dtypes, output allocation and errors.
 *  - Strides are in elements of the operand's dtype and may be negative or zero.
 *  - A strided operation receives one int64 `layout` array: the shape (ndim
 *    values) followed by each operand's strides (ndim values each), output first.
 *  - Data pointers cross the boundary as ec_ptr (an address as an integer), which
 *    Python passes without building a cffi pointer object per call.
 *  - Op codes, dtypes and statuses are C enums: Python reads them through
 *    cffi (lib.EC_U_EXP), so no number is written twice.
 *  - Every function returns EC_OK or an EC_ERR_* status; details of the last
 *    failure of the calling thread are in ec_last_message(). C never raises.
 */
#ifndef EMBER_CORE_H
#define EMBER_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "ember_codes.h"

/* cdef:begin */

#define EC_MAX_DIMS 64

typedef uintptr_t ec_ptr;

/* Errors of the calling thread's last failed call. */
const char* ec_last_message(void);

/* Threads: one setting governs OpenMP and BLAS. */
void ec_set_num_threads(int n);
int ec_get_num_threads(void);
int ec_has_openmp(void);

/* Copy with conversion: dst[i] = (dst_dtype) src[i].  layout: shape, dst strides,
 * src strides. */
int ec_copy(int ndim, const int64_t* layout, ec_ptr dst, int dst_dtype, ec_ptr src,
            int src_dtype);
int ec_copy_contig(int64_t n, ec_ptr dst, int dst_dtype, ec_ptr src, int src_dtype);

/* Fill: every element = value (given as double and as int64 for exactness). */
int ec_fill(int ndim, const int64_t* layout, ec_ptr dst, int dtype, double value,
            int64_t ivalue);
/* Fill with a complex value (complex dtypes only; CPU only). */
int ec_fill_complex(int ndim, const int64_t* layout, ec_ptr dst, int dtype, double re, double im);

/* Elementwise.  `dtype` is the inputs' dtype; the output has `dtype` too except
 * for ops documented as -> bool.  Scalar forms take the scalar as double and
 * int64 (whichever the dtype needs); `scalar_first` puts it on the left. */
/* Whether the CPU has a loop for (op, dtype): Python asks before running an op
 * on a CPU-only dtype (Note [CPU-only dtypes]) so that the error names the op. */
int ec_unary_has_kernel(int op, int dtype);
int ec_binary_has_kernel(int op, int dtype);
int ec_unary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
             double p0, double p1);
int ec_unary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr x, double p0, double p1);
int ec_binary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
              ec_ptr b, double p0);
int ec_binary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, ec_ptr b,
                     double p0);
int ec_binary_scalar(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                     double s, int64_t si, int scalar_first, double p0);
int ec_binary_scalar_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, double s,
                            int64_t si, int scalar_first, double p0);
int ec_ternary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
               ec_ptr b, ec_ptr c, double p0);

/* Reductions.  The input is described as output dims (ndim_out: shape, out
 * strides, input strides) followed by reduced dims (ndim_red: shape, input
 * strides): layout = [out_shape, out_strides, in_strides_out, red_shape,
 * in_strides_red].  `out_dtype` is the result dtype; `idx` (int64, strides as
 * out) receives arg-indices for MAX/MIN when not NULL, counted row-major over the
 * reduced dims. */
int ec_reduce(int op, int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
              ec_ptr out, ec_ptr idx, ec_ptr x, double p0);

/* Scans along `dim`: layout = [shape, out strides, in strides, idx strides]. */
int ec_scan(int op, int dtype, int out_dtype, int ndim, int dim, const int64_t* layout, ec_ptr out,
            ec_ptr idx, ec_ptr x);

/* Matrix products through BLAS (float32/float64), converted float32 BLAS for
 * float16/bfloat16, and plain C loops for integer dtypes.  Each matrix has a row
 * stride and a column stride in elements (one of them should be 1 for BLAS;
 * otherwise the kernel copies), and batches have a batch stride.
 *   C[b] = alpha * A[b] @ B[b] + beta * C[b]    (beta == 0: C is not read) */
int ec_matmul(int dtype, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
              ec_ptr a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
              ec_ptr b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
              ec_ptr c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

/* Counter-based random numbers (Philox4x32-10): element i of a call uses counter
 * offset + i / 4, lane i % 4, so results do not depend on the thread count.
 * Outputs are contiguous; each call consumes ceil(n / 4) * `per` counters where
 * ec_random_counters says how many. */
enum ec_rng_kind {
    EC_RNG_UNIFORM,     /* [p0, p1) */
    EC_RNG_NORMAL,      /* mean p0, std p1 */
    EC_RNG_BERNOULLI,   /* probability p0 */
    EC_RNG_RANDINT,     /* [i0, i1) */
    EC_RNG_BITS,        /* raw 64-bit values */
    EC_RNG_EXPONENTIAL, /* rate p0 */
    EC_RNG_CAUCHY,      /* median p0, sigma p1 */
    EC_RNG_LOG_NORMAL,  /* mean p0, std p1 of the log */
    EC_RNG_GEOMETRIC,   /* probability p0 */
};
int ec_random(int kind, int dtype, int64_t n, ec_ptr out, uint64_t seed, uint64_t offset,
              double p0, double p1, int64_t i0, int64_t i1);
uint64_t ec_random_counters(int kind, int dtype, int64_t n);
/* Bernoulli with a per-element probability tensor (contiguous, same n). */
int ec_bernoulli_tensor(int dtype, int p_dtype, int64_t n, ec_ptr out, ec_ptr p,
                        uint64_t seed, uint64_t offset);

/* A uniformly random permutation of 0..n-1 (Fisher-Yates over Philox draws,
 * consuming ceil(n / 2) counters). out: int64. */
int ec_randperm(int64_t n, ec_ptr out, uint64_t seed, uint64_t offset);
/* Sample `num_samples` category indices per row from non-negative weights
 * (rows x cats, contiguous); without replacement each row's samples are
 * distinct.  Consumes rows * num_samples counters. out: int64 (rows x samples). */
int ec_multinomial(int dtype, int64_t rows, int64_t cats, ec_ptr weights, int64_t num_samples,
                   int replacement, ec_ptr out, uint64_t seed, uint64_t offset);

/* Triangles: keep elements with (col - row) >= diagonal (upper) or <= (lower) of
 * the last two dims; others become 0.  layout: shape, out strides, in strides. */
int ec_triangle(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                int64_t diagonal, int upper);

/* Sequences into contiguous out: arange (start + i * step, integers exact) and
 * linspace (PyTorch's symmetric formula: the last element is exactly `end`). */
int ec_arange(int dtype, int64_t n, ec_ptr out, double start, double step, int64_t istart,
              int64_t istep);
int ec_linspace(int dtype, int64_t n, ec_ptr out, double start, double end);

/* ---------------------------------------------------------------------------
 * Indexing, sorting and counting (csrc/cpu/indexing/index.c, csrc/cpu/reduction/sort.c).
 * ------------------------------------------------------------------------- */

/* Advanced indexing (Note [Index iteration] in index.c).  The iteration space
 * has `ndim` dims; layout = [shape, values strides, x strides, then the strides
 * of each of the `nidx` int64 index tensors].  x's strides are 0 along the dims
 * the indices produce; index k addresses a dim of x of size sizes[k] and stride
 * xstrides[k] (dims[k] names it in errors).  Negative indices wrap once.
 *   GET  values = x[...]          PUT  x[...] = values
 *   ADD  x[...] += alpha * values MUL/MAX/MIN  x[...] = op(x[...], values)
 * Puts validate every index before writing and are deterministic (duplicates:
 * the last write wins; sums in index order). */
enum ec_index_mode {
    EC_INDEX_GET,
    EC_INDEX_PUT,
    EC_INDEX_ADD,
    EC_INDEX_MUL,
    EC_INDEX_MAX, /* NaN propagating */
    EC_INDEX_MIN,
};
int ec_index(int mode, int dtype, int ndim, const int64_t* layout, ec_ptr values, ec_ptr x,
             int nidx, const ec_ptr* idx, const int64_t* sizes, const int64_t* xstrides,
             const int64_t* dims, double alpha);

/* Masks (bool or uint8, broadcast by their strides).  layout: shape, then the
 * strides of x (or self) and of the mask.  masked_select writes the selected
 * elements to contiguous `out` in row-major order; masked_scatter copies
 * successive elements of contiguous `src` into the selected places. */
int ec_masked_select(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                     ec_ptr mask);
int ec_masked_scatter(int dtype, int ndim, const int64_t* layout, ec_ptr self, ec_ptr mask,
                      ec_ptr src, int64_t src_numel);
/* Coordinates of the n non-zero elements of x (layout: shape, x strides) into
 * int64 out, element i's coordinate d at out[i * st_n + d * st_d]. */
int ec_nonzero(int dtype, int ndim, const int64_t* layout, ec_ptr out, int64_t st_n, int64_t st_d,
               ec_ptr x, int64_t n);

/* Along one dim: lines of n elements, strides x_st/v_st/i_st along the line;
 * layout = [batch shape (ndim dims), strides of x, values, indices over them].
 * Sorting is stable; NaN sorts as the largest value.  values or indices may be
 * 0 (not wanted) for ec_sort. */
int ec_sort(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
            int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int descending);
int ec_topk(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
            int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int largest,
            int sorted);
enum ec_kth_mode {
    EC_KTH_VALUE,     /* the k-th smallest (k 0-based) */
    EC_KTH_MEDIAN,    /* lower median; the first NaN if any */
    EC_KTH_NANMEDIAN, /* lower median of the non-NaN values */
};
int ec_kthvalue(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
                int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int mode);
int ec_mode(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
            int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x);

/* Binary search of each value in its row of a sorted sequence (PyTorch's
 * predicates).  Contiguous rows: the sequence row r starts at r * seq_rs (0: one
 * shared sequence), values and out rows at r * nval; sorter (optional, int64)
 * orders an unsorted sequence, its rows at r * sorter_rs. */
int ec_searchsorted(int dtype, int64_t rows, int64_t nseq, ec_ptr seq, int64_t seq_rs,
                    int64_t nval, ec_ptr vals, ec_ptr out, int out_int32, int right,
                    ec_ptr sorter, int64_t sorter_rs);
/* Counts (or weight sums) of the values of contiguous int64 x in nbins bins;
 * out is zeroed by the caller: int64 without weights, else float32/float64. */
int ec_bincount(int64_t n, ec_ptr x, ec_ptr w, int w_dtype, ec_ptr out, int out_dtype,
                int64_t nbins);
/* Histogram of contiguous float x over [lo, hi] into `bins` equal bins (out:
 * contiguous, x's dtype); values outside (and NaN) are ignored. */
int ec_histc(int dtype, int64_t n, ec_ptr x, ec_ptr out, int64_t bins, double lo, double hi);
/* ------------------------------------------------------------------------
 * convolution, pooling, padding and resampling (conv.c, pool.c,
 * resample.c).  Note [Spatial geometry] (csrc/cpu/nn/spatial.h): 1 to 3 spatial dims are
 * seen as (D, H, W), leading ones of size 1.  `geom` is int64[EC_GEOM_LEN]:
 * input size[3], kernel[3], output size[3], stride[3], padding[3],
 * dilation[3].  Tensors are contiguous (N, C, D, H, W); `dtype` is
 * EC_FLOAT32 or EC_FLOAT64 (Python converts the others) unless noted.  `in3`
 * and `out3` are (D, H, W) sizes. */
#define EC_GEOM_LEN 18

/* Convolution (Note [GEMM convolution], conv_tmpl.h): image side x (n, ci,
 * in...), column side y (n, co, out...), weight (co, ci / groups, k...).
 * `par` images run concurrently, one per thread; `work` holds par column
 * buffers of ci * kvol * L elements (none for a pointwise convolution:
 * kernel 1, stride 1, padding 0), plus, for backward weight, par - 1 weight
 * sized partial sums.  bias may be 0 (none). */
int ec_conv_forward(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                    const int64_t* geom, ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y, ec_ptr work,
                    int par);
int ec_conv_backward_data(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                          const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx, ec_ptr work, int par);
int ec_conv_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                            const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw, ec_ptr work,
                            int par);
/* The same with `nb` images per GEMM (Note [Batched GEMM convolution]): groups
 * 1, not pointwise; `work` holds nb * (ci * kvol + co) * L elements. */
int ec_conv_forward_batched(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                            ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y, ec_ptr work, int64_t nb);
int ec_conv_backward_data_batched(int dtype, int64_t n, int64_t ci, int64_t co,
                                  const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx, ec_ptr work,
                                  int64_t nb);
int ec_conv_backward_weight_batched(int dtype, int64_t n, int64_t ci, int64_t co,
                                    const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw,
                                    ec_ptr work, int64_t nb);
/* Depthwise (groups == ci, co a multiple of ci; Note [Depthwise convolution]).
 * Backward weight's work: get_num_threads() * kvol doubles. */
int ec_conv_depthwise_forward(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                              ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y);
int ec_conv_depthwise_backward_data(int dtype, int64_t n, int64_t ci, int64_t co,
                                    const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx);
int ec_conv_depthwise_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co,
                                      const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw,
                                      ec_ptr work);
/* gb[c] = sum of gy (n, c, l) over n and l. */
int ec_conv_bias_grad(int dtype, int64_t n, int64_t c, int64_t l, ec_ptr gy, ec_ptr gb);
/* Sliding blocks of n images of c channels: col (n, c * kvol, L) and back
 * (col2im adds overlapping blocks; x is overwritten). */
int ec_im2col(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr x, ec_ptr col);
int ec_col2im(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr col, ec_ptr x);

/* Pooling over `planes` = N * C planes.  Max pooling writes int64 indices,
 * flat positions in the input plane (PyTorch's).  divisor 0: none. */
int ec_max_pool_forward(int dtype, int64_t planes, const int64_t* geom, ec_ptr x, ec_ptr y,
                        ec_ptr idx);
int ec_avg_pool_forward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                        int64_t divisor, ec_ptr x, ec_ptr y);
int ec_avg_pool_backward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                         int64_t divisor, ec_ptr gy, ec_ptr gx);
int ec_adaptive_pool_forward(int dtype, int is_max, int64_t planes, const int64_t* in3,
                             const int64_t* out3, ec_ptr x, ec_ptr y, ec_ptr idx);
int ec_adaptive_avg_pool_backward(int dtype, int64_t planes, const int64_t* in3,
                                  const int64_t* out3, ec_ptr gy, ec_ptr gx);
/* Per plane: gx[idx[j]] += gy[j] (gx zeroed first), and y[j] = x[idx[j]].
 * Out-of-range indices give EC_ERR_INDEX. */
int ec_index_scatter_add(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr gy,
                         ec_ptr idx, ec_ptr gx);
int ec_index_gather(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr x,
                    ec_ptr idx, ec_ptr y);

/* Index maps (Note [Index maps], resample.c): one dim's map of output
 * positions to input positions (`before`: padding before the input; `scale`:
 * the user's scale factor, <= 0 for none; `in_double`: compute in double, as
 * PyTorch does for float64, else in float).  `maps` holds the D, H and W maps
 * back to back.  The gather moves elements of any dtype by item size. */
/* kinds: enum ec_map_kind (ember_codes.h) */
int ec_index_map(int kind, int64_t in, int64_t out, int64_t before, double scale, int in_double,
                 ec_ptr map);
int ec_map_gather(int itemsize, int64_t planes, const int64_t* in3, const int64_t* out3,
                  ec_ptr maps, ec_ptr x, ec_ptr y);
int ec_map_scatter_add(int dtype, int64_t planes, const int64_t* in3, const int64_t* out3,
                       ec_ptr maps, ec_ptr gy, ec_ptr gx);
/* Interpolation: forward (src x, dst y) or backward (src gy, dst gx, which is
 * overwritten).  scales: the user's scale factor per dim, <= 0 for none. */
int ec_upsample_linear(int dtype, int backward, int64_t planes, const int64_t* in3,
                       const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                       ec_ptr dst);
int ec_upsample_bicubic(int dtype, int backward, int64_t planes, const int64_t* in3,
                        const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                        ec_ptr dst);

/* ------------------------------------------------------------------------
 * nn kernels: softmax, normalization, losses, activations, dropout,
 * embedding and recurrent cells (csrc/cpu/nn/softmax.c, norm.c, loss.c,
 * activation.c, embedding.c, rnn.c).  Float dtypes only (float16/bfloat16
 * compute in float32).  Unless stated otherwise, arrays are contiguous.
 * ------------------------------------------------------------------------ */

/* Softmax over the middle dim of x viewed as (outer, dim, inner); log != 0
 * gives log_softmax.  out may alias x. */
int ec_softmax(int dtype, int log, int64_t outer, int64_t dim, int64_t inner, ec_ptr out,
               ec_ptr x);
/* From the output y and its gradient g: softmax: y * (g - sum(g * y));
 * log_softmax: g - exp(y) * sum(g), sums over dim. */
int ec_softmax_backward(int dtype, int log, int64_t outer, int64_t dim, int64_t inner,
                        ec_ptr grad_in, ec_ptr grad, ec_ptr y);

/* Row normalization of x (rows x cols): layer norm (rms == 0) or RMS norm
 * (rms != 0, no centring).  weight/bias (cols) may be 0.  mean and rstd (rows,
 * dtype) receive the statistics; rms leaves mean alone (it may be 0). */
int ec_row_norm(int dtype, int rms, int64_t rows, int64_t cols, double eps, ec_ptr out,
                ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight, ec_ptr bias);
/* Gradients of ec_row_norm: grad_in (rows x cols, may be 0), grad_weight and
 * grad_bias (cols, may be 0; bias only for layer norm). */
int ec_row_norm_backward(int dtype, int rms, int64_t rows, int64_t cols,
                         ec_ptr grad_in, ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad,
                         ec_ptr x, ec_ptr mean, ec_ptr rstd, ec_ptr weight);

/* Batch norm of x viewed as (n, c, s).  training: batch statistics, written to
 * save_mean/save_invstd (c, dtype), and the running stats (of running_dtype,
 * may be 0) updated with momentum and the unbiased variance.  Otherwise the
 * running stats normalize, and save_* receive them (mean and
 * 1/sqrt(var + eps)).  weight/bias (c) may be 0. */
int ec_batch_norm(int dtype, int running_dtype, int64_t n, int64_t c, int64_t s,
                  int training, double momentum, double eps, ec_ptr out, ec_ptr save_mean,
                  ec_ptr save_invstd, ec_ptr x, ec_ptr weight, ec_ptr bias, ec_ptr running_mean,
                  ec_ptr running_var);
/* training != 0: save_* are batch statistics (the gradient flows through them);
 * otherwise they are constants. */
int ec_batch_norm_backward(int dtype, int64_t n, int64_t c, int64_t s,
                           int training, ec_ptr grad_in, ec_ptr grad_weight, ec_ptr grad_bias,
                           ec_ptr grad, ec_ptr x, ec_ptr save_mean, ec_ptr save_invstd,
                           ec_ptr weight);

/* Group norm of x viewed as (n, c, s) with g groups; mean/rstd: (n, g);
 * weight/bias (c) may be 0. */
int ec_group_norm(int dtype, int64_t n, int64_t c, int64_t s, int64_t g,
                  double eps, ec_ptr out, ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight,
                  ec_ptr bias);
int ec_group_norm_backward(int dtype, int64_t n, int64_t c, int64_t s, int64_t g,
                           ec_ptr grad_in, ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad,
                           ec_ptr x, ec_ptr mean, ec_ptr rstd, ec_ptr weight);

/* Negative log likelihood of log-probabilities x viewed as (n, c, s) against
 * int64 targets (n, s).  weight (c, dtype) may be 0.  reduction 0 (none):
 * out is (n, s); 1 (mean) / 2 (sum): out is one value and total_weight (one
 * value, dtype) the summed weight of counted targets.  A target outside
 * [0, c) that is not ignore_index fails with EC_ERR_INDEX. */
int ec_nll_loss(int dtype, int64_t n, int64_t c, int64_t s, int reduction, int64_t ignore_index,
                ec_ptr out, ec_ptr total_weight, ec_ptr x, ec_ptr target, ec_ptr weight);
/* grad_in (n, c, s) = -weight[t] * grad (/ total weight for mean) at the
 * target, 0 elsewhere; grad is (n, s) for none, one value otherwise. */
int ec_nll_loss_backward(int dtype, int64_t n, int64_t c, int64_t s, int reduction,
                         int64_t ignore_index, ec_ptr grad_in, ec_ptr grad, ec_ptr target,
                         ec_ptr weight);

/* Cross entropy of logits x (n rows of c classes) against int64 targets (n),
 * fused: log-softmax and the loss in one pass, without writing the
 * log-probabilities.  Writes lse (n, dtype: each row's log-sum-exp, for the
 * backward) and out as ec_nll_loss does (reduction 0: (n); 1/2: one value)
 * with total_weight.  Targets out of [0, c) that are not ignore_index fail with
 * EC_ERR_INDEX. */
int ec_cross_entropy(int dtype, int64_t n, int64_t c, int reduction, int64_t ignore_index,
                     ec_ptr out, ec_ptr total_weight, ec_ptr lse, ec_ptr x, ec_ptr target,
                     ec_ptr weight);
/* grad_in (n, c) = coef * (softmax(x) - onehot(target)), coef = grad *
 * weight[target] (divided by the total weight for mean), 0 for ignored rows. */
int ec_cross_entropy_backward(int dtype, int64_t n, int64_t c, int reduction, int64_t ignore_index,
                              ec_ptr grad_in, ec_ptr grad, ec_ptr lse, ec_ptr x, ec_ptr target,
                              ec_ptr weight);

/* Activations: the forward of those missing from the elementwise table
 * (hardshrink, softshrink), and one fused backward for the family:
 * grad_in = grad * f'(x).  Strided; layout: shape, then the strides of the
 * output, grad (backward only) and x. */
/* kinds: enum ec_activation_kind (ember_codes.h) */
int ec_activation(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                  double p0, double p1);
int ec_activation_backward(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr grad_in,
                           ec_ptr grad, ec_ptr x, double p0, double p1);

/* Dropout: out = keep ? x * scale : 0 with keep (bool, n) drawn from Philox
 * with probability 1 - p (ec_random's Bernoulli stream: ceil(n / 4) counters). */
int ec_dropout(int dtype, int64_t n, double p, ec_ptr out, ec_ptr keep, ec_ptr x, uint64_t seed,
               uint64_t offset);
/* out = keep ? x * scale : 0 (strided; layout: shape, strides of out, x, keep). */
int ec_masked_scale(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x, ec_ptr keep,
                    double scale);

/* GradScaler's check (amp.c): each of the n gradients (addresses, element
 * counts; one float dtype) *= inv_scale[0]; any non-finite element sets
 * found_inf[0] = 1.  Both scalars float32. */
int ec_amp_unscale(int dtype, int64_t n, const uint64_t* grads, const int64_t* numels,
                   ec_ptr found_inf, ec_ptr inv_scale);

/* Embedding rows: out (n, dim) = weight[idx] (weight rows of row stride
 * w_rs, unit column stride; idx int64 or int32 by idx_is_i32). */
int ec_embedding(int dtype, int64_t num, int64_t dim, ec_ptr out, ec_ptr weight, int64_t w_rs,
                 ec_ptr idx, int idx_is_i32, int64_t n);
/* Scatter-add of grad (n, dim) into grad_weight (num, dim, zeroed here);
 * rows of padding_idx (when >= 0) get nothing; scale_by_freq divides each
 * row's contributions by how often its index occurs. */
int ec_embedding_backward(int dtype, int64_t num, int64_t dim, ec_ptr grad_weight, ec_ptr grad,
                          ec_ptr idx, int idx_is_i32, int64_t n, int64_t padding_idx,
                          int scale_by_freq);
/* Rescale (in place) each distinct referenced row whose p-norm exceeds
 * max_norm to norm max_norm (PyTorch's embedding_renorm_). */
int ec_embedding_renorm(int dtype, int64_t num, int64_t dim, ec_ptr weight, int64_t w_rs,
                        ec_ptr idx, int idx_is_i32, int64_t n, double max_norm, double norm_type);
/* Bags of rows: bag b takes idx[offsets[b] .. offsets[b + 1]) (the last bag ends
 * at n); mode 0 sum, 1 mean, 2 max.  psw (per-sample weights, n, dtype) may be 0
 * (sum only).  Rows equal to padding_idx (>= 0) are skipped.  Writes out (bags,
 * dim), offset2bag (n, int64), bag_size (bags, int64) and, for max, max_idx
 * (bags, dim, int64: the chosen index, -1 for an empty bag). */
int ec_embedding_bag(int dtype, int64_t num, int64_t dim, int mode, ec_ptr out, ec_ptr offset2bag,
                     ec_ptr bag_size, ec_ptr max_idx, ec_ptr weight, int64_t w_rs, ec_ptr idx,
                     int64_t n, ec_ptr offsets, int64_t bags, ec_ptr psw, int64_t padding_idx);
/* grad_weight (num, dim, zeroed here) from grad (bags, dim); grad_psw (n, may
 * be 0) = <grad[bag], weight[idx]> for sum mode with per-sample weights;
 * scale_by_freq divides a row's contributions by how often its index occurs
 * (sum and mean modes). */
int ec_embedding_bag_backward(int dtype, int64_t num, int64_t dim, int mode, ec_ptr grad_weight,
                              ec_ptr grad_psw, ec_ptr grad, ec_ptr weight, int64_t w_rs,
                              ec_ptr idx, int64_t n, ec_ptr offset2bag, ec_ptr bag_size,
                              ec_ptr max_idx, int64_t bags, ec_ptr psw, int64_t padding_idx,
                              int scale_by_freq);

/* Recurrent cells (float32/float64), batch b, input size i, hidden size h.
 * Weights are (gates*h, i) and (gates*h, h) with unit column stride and row
 * strides wih_rs / whh_rs; biases (gates*h) may be 0.  x (b, i), hx/cx (b, h)
 * rows have strides x_rs, h_rs, c_rs (unit column stride).
 * LSTM (gates i, f, g, o): writes hy, cy (b, h) and ws (b, 4h): the activated
 * gates, kept for the backward. */
int ec_lstm_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr cy, ec_ptr ws,
                 ec_ptr x, int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr cx, int64_t c_rs,
                 ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh, int64_t whh_rs, ec_ptr b_ih,
                 ec_ptr b_hh);
/* From grad_hy, grad_cy (b, h; either may be 0): grad_x (b, i), grad_hx,
 * grad_cx (b, h), grad_w_ih, grad_w_hh (4h x i, 4h x h), grad_b (4h; the
 * gradient of both biases), each 0 when not wanted; dgates (b, 4h) is scratch
 * supplied by the caller. */
int ec_lstm_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                          ec_ptr grad_hx, ec_ptr grad_cx, ec_ptr grad_w_ih, ec_ptr grad_w_hh,
                          ec_ptr grad_b, ec_ptr dgates, ec_ptr grad_hy, ec_ptr grad_cy,
                          ec_ptr ws, ec_ptr cx, int64_t c_rs, ec_ptr cy, ec_ptr x, int64_t x_rs,
                          ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                          int64_t whh_rs);
/* GRU (gates r, z, n): writes hy (b, h) and ws (b, 4h): r, z, n and the hidden
 * part of the n gate (W_hn h + b_hn). */
int ec_gru_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr ws, ec_ptr x,
                int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                int64_t whh_rs, ec_ptr b_ih, ec_ptr b_hh);
/* grad_b_ih and grad_b_hh (3h) differ (the n gate's hidden part is scaled by
 * r); dgates (b, 6h) is scratch. */
int ec_gru_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                         ec_ptr grad_hx, ec_ptr grad_w_ih, ec_ptr grad_w_hh, ec_ptr grad_b_ih,
                         ec_ptr grad_b_hh, ec_ptr dgates, ec_ptr grad_hy, ec_ptr ws, ec_ptr x,
                         int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs,
                         ec_ptr w_hh, int64_t whh_rs);

/* ---- DLPack (dlpack.c; its entry points take Python objects and are declared
 * in dlpack.h, outside this cdef).  Indices of the info array that
 * ec_dlpack_from_capsule fills. */
#define EC_DLPACK_MAJOR 1
#define EC_DLPACK_MINOR 0
#define EC_DLPACK_FLAG_READ_ONLY 1
#define EC_DLPACK_FLAG_IS_COPIED 2
#define EC_DLPACK_DATA 0          /* data + byte_offset */
#define EC_DLPACK_DEVICE_TYPE 1
#define EC_DLPACK_DEVICE_ID 2
#define EC_DLPACK_NDIM 3
#define EC_DLPACK_CODE 4          /* DLDataTypeCode */
#define EC_DLPACK_BITS 5
#define EC_DLPACK_LANES 6
#define EC_DLPACK_FLAGS 7         /* 0 for legacy capsules */
#define EC_DLPACK_HAS_STRIDES 8   /* 0: compact row-major */
#define EC_DLPACK_INFO_SIZE 9

/* ---- linalg: LAPACK (scipy-openblas32), batched over column-major matrices
 * packed back to back (Note [LAPACK layout] in linalg.c).  float32/float64.
 * Inputs are overwritten; pivots, ranks and per-matrix LAPACK info codes are
 * int32 arrays.  Python turns non-zero info codes into errors. */
/* LU of (m x n) matrices in place; ipiv holds min(m, n) 1-based pivots each. */
int ec_linalg_lu(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a, ec_ptr ipiv,
                 ec_ptr info);
/* Inverse in place (LU, then getri); ipiv is n per matrix of scratch. */
int ec_linalg_inv(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr ipiv, ec_ptr info);
/* A X = B: a (n x n) becomes its LU factors, x (n x nrhs) holds B, then X. */
int ec_linalg_solve(int dtype, int64_t batch, int64_t n, int64_t nrhs, ec_ptr a, ec_ptr x,
                    ec_ptr ipiv, ec_ptr info);
/* Cholesky factor in place (the other triangle is left as it was). */
int ec_linalg_cholesky(int dtype, int64_t batch, int64_t n, int upper, ec_ptr a, ec_ptr info);
/* op(A) X = B with triangular A (trans: op = transpose; unit: unit diagonal). */
int ec_linalg_solve_triangular(int dtype, int64_t batch, int64_t n, int64_t nrhs, int upper,
                               int trans, int unit, ec_ptr a, ec_ptr x, ec_ptr info);
/* Householder QR: a (m x n) gets R in its upper triangle; q (m x qcols, may be
 * 0) gets the first qcols columns of Q, min(m, n) <= qcols <= m. */
int ec_linalg_qr(int dtype, int64_t batch, int64_t m, int64_t n, int64_t qcols, ec_ptr a,
                 ec_ptr q, ec_ptr info);
/* Symmetric eigendecomposition (syevd) from the upper or lower triangle:
 * ascending eigenvalues in w (n each), eigenvectors over a when vectors. */
int ec_linalg_eigh(int dtype, int64_t batch, int64_t n, int upper, int vectors, ec_ptr a,
                   ec_ptr w, ec_ptr info);
/* SVD (gesdd); job 'A' (U m x m, Vh n x n), 'S' (m x k, k x n) or 'N' (s only,
 * u = vt = 0); s holds min(m, n) descending values per matrix. */
int ec_linalg_svd(int dtype, int64_t batch, int64_t m, int64_t n, int job, ec_ptr a, ec_ptr s,
                  ec_ptr u, ec_ptr vt, ec_ptr info);
/* Least squares min ||A X - B|| (driver 0 gels, 1 gelsy, 2 gelsd, 3 gelss); b
 * has leading dimension max(m, n) and receives X in its first n rows; rank and
 * s (singular values, gelsd/gelss) may be 0. */
int ec_linalg_lstsq(int dtype, int64_t batch, int64_t m, int64_t n, int64_t nrhs, int driver,
                    double rcond, ec_ptr a, ec_ptr b, ec_ptr s, ec_ptr rank, ec_ptr info);

/* ---- the same on complex64/complex128 (csrc/cpu/linalg/linalg_complex.c):
 * same signatures and layout; eigh's w, svd's s and lstsq's s are real (float for
 * complex64, double for complex128). */
int ec_linalg_lu_complex(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a, ec_ptr ipiv,
                         ec_ptr info);
int ec_linalg_inv_complex(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr ipiv,
                          ec_ptr info);
int ec_linalg_solve_complex(int dtype, int64_t batch, int64_t n, int64_t nrhs, ec_ptr a,
                            ec_ptr x, ec_ptr ipiv, ec_ptr info);
int ec_linalg_cholesky_complex(int dtype, int64_t batch, int64_t n, int upper, ec_ptr a,
                               ec_ptr info);
/* trans: 0 none, 1 transpose, 2 conjugate transpose */
int ec_linalg_solve_triangular_complex(int dtype, int64_t batch, int64_t n, int64_t nrhs,
                                       int upper, int trans, int unit, ec_ptr a, ec_ptr x,
                                       ec_ptr info);
int ec_linalg_qr_complex(int dtype, int64_t batch, int64_t m, int64_t n, int64_t qcols,
                         ec_ptr a, ec_ptr q, ec_ptr info);
int ec_linalg_eigh_complex(int dtype, int64_t batch, int64_t n, int upper, int vectors,
                           ec_ptr a, ec_ptr w, ec_ptr info);
int ec_linalg_svd_complex(int dtype, int64_t batch, int64_t m, int64_t n, int job, ec_ptr a,
                          ec_ptr s, ec_ptr u, ec_ptr vt, ec_ptr info);
int ec_linalg_lstsq_complex(int dtype, int64_t batch, int64_t m, int64_t n, int64_t nrhs,
                            int driver, double rcond, ec_ptr a, ec_ptr b, ec_ptr s, ec_ptr rank,
                            ec_ptr info);
/* geqrf alone (torch.geqrf), as ec_linalg_geqrf. */
int ec_linalg_geqrf_complex(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a,
                            ec_ptr tau, ec_ptr info);
/* LDL of complex matrices from their lower triangle: complex symmetric (sytrf/
 * sytrs) or, with hermitian, Hermitian (hetrf/hetrs); as ec_linalg_ldl_*. */
int ec_linalg_ldl_factor_complex(int dtype, int64_t batch, int64_t n, int hermitian, ec_ptr a,
                                 ec_ptr ipiv, ec_ptr info);
int ec_linalg_ldl_solve_complex(int dtype, int64_t batch, int64_t n, int64_t nrhs, int hermitian,
                                ec_ptr a, ec_ptr ipiv, ec_ptr x, ec_ptr info);
/* General eigendecomposition (geev) of float32/64 or complex64/128 (n x n)
 * matrices: w (n complex eigenvalues each) and, when v is not 0, the right
 * eigenvectors as complex columns (n x n), normalized as LAPACK does; a is
 * overwritten.  Outputs are complex64 for float32/complex64 input, complex128
 * otherwise. */
int ec_linalg_eig(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr w, ec_ptr v,
                  ec_ptr info);

/* ------------------------------------------------------------------------
 * grid sampling and the CTC loss (csrc/cpu/nn/sampling.c).  float32/float64,
 * contiguous arrays.
 * ------------------------------------------------------------------------ */

/* grid_sample over ndim = 2 (in3/out3 = (1, H, W)) or 3 spatial dims: x
 * (n, c, in3...), grid (n, out3..., ndim) normalised (x, y[, z]), y (n, c,
 * out3...).  Backward: gx (overwritten) and ggrid from gy; either may be 0. */
enum ec_grid_sample_mode {
    EC_GS_BILINEAR,
    EC_GS_NEAREST,
    EC_GS_BICUBIC,
};
enum ec_grid_sample_padding {
    EC_GS_PAD_ZEROS,
    EC_GS_PAD_BORDER,
    EC_GS_PAD_REFLECTION,
};
int ec_grid_sample_forward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                           const int64_t* out3, int mode, int padding, int align_corners,
                           ec_ptr x, ec_ptr grid, ec_ptr y);
int ec_grid_sample_backward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                            const int64_t* out3, int mode, int padding, int align_corners,
                            ec_ptr gy, ec_ptr x, ec_ptr grid, ec_ptr gx, ec_ptr ggrid);
/* CTC loss (Note [CTC in log space]): log_probs (tmax, n, c); the int64
 * targets of element b start at targets + target_offsets[b] (ntargets in
 * all); smax: the longest target; log_alpha (n, tmax, 2 smax + 1) and nll (n)
 * are written.  Backward: grad (tmax, n, c) from grad_out[b * grad_stride]. */
int ec_ctc_loss_forward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                        ec_ptr log_probs, ec_ptr targets, int64_t ntargets, ec_ptr target_offsets,
                        ec_ptr input_lengths, ec_ptr target_lengths, int64_t blank,
                        ec_ptr log_alpha, ec_ptr nll);
int ec_ctc_loss_backward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                         ec_ptr log_probs, ec_ptr targets, int64_t ntargets,
                         ec_ptr target_offsets, ec_ptr input_lengths, ec_ptr target_lengths,
                         int64_t blank, ec_ptr log_alpha, ec_ptr nll, ec_ptr grad_out,
                         int64_t grad_stride, int zero_infinity, ec_ptr grad);

/* samplers with per-element parameters (random_dist.c).  Contiguous
 * float32/float64 operands of n elements, all of one dtype; element i draws from
 * its own Philox stream (Note [Per-element random streams]), so a call consumes
 * n counters.  _standard_gamma_grad: d sample / d alpha (no randomness). */
int ec_standard_gamma(int dtype, int64_t n, ec_ptr alpha, ec_ptr out, uint64_t seed,
                      uint64_t offset);
int ec_standard_gamma_grad(int dtype, int64_t n, ec_ptr alpha, ec_ptr x, ec_ptr out);
int ec_poisson(int dtype, int64_t n, ec_ptr rate, ec_ptr out, uint64_t seed, uint64_t offset);
int ec_binomial(int dtype, int64_t n, ec_ptr count, ec_ptr prob, ec_ptr out, uint64_t seed,
                uint64_t offset);

/* torch.special's functions (csrc/cpu/pointwise/special_fn.c).  Contiguous operands of
 * one dtype (float32 or float64) and, for binary ops, one length n
 * (Note [Special kernels are contiguous]).  Unary ops first, then binary:
 * f(input, other); the polynomials take (x, n). */
enum ec_special_op {
    EC_SP_I0,
    EC_SP_I0E,
    EC_SP_I1,
    EC_SP_I1E,
    EC_SP_MODIFIED_BESSEL_I0,
    EC_SP_MODIFIED_BESSEL_I1,
    EC_SP_MODIFIED_BESSEL_K0,
    EC_SP_MODIFIED_BESSEL_K1,
    EC_SP_SCALED_MODIFIED_BESSEL_K0,
    EC_SP_SCALED_MODIFIED_BESSEL_K1,
    EC_SP_BESSEL_J0,
    EC_SP_BESSEL_J1,
    EC_SP_BESSEL_Y0,
    EC_SP_BESSEL_Y1,
    EC_SP_AIRY_AI,
    EC_SP_SPHERICAL_BESSEL_J0,
    EC_SP_NDTR,
    EC_SP_NDTRI,
    EC_SP_LOG_NDTR,
    EC_SP_ERFCX,
    EC_SP_ENTR,
    EC_SP_TRIGAMMA,
    EC_SP_ZETA,
    EC_SP_POLYGAMMA,
    EC_SP_GAMMAINC,
    EC_SP_GAMMAINCC,
    EC_SP_XLOG1PY,
    EC_SP_CHEBYSHEV_T,
    EC_SP_CHEBYSHEV_U,
    EC_SP_CHEBYSHEV_V,
    EC_SP_CHEBYSHEV_W,
    EC_SP_SHIFTED_CHEBYSHEV_T,
    EC_SP_SHIFTED_CHEBYSHEV_U,
    EC_SP_SHIFTED_CHEBYSHEV_V,
    EC_SP_SHIFTED_CHEBYSHEV_W,
    EC_SP_HERMITE_H,
    EC_SP_HERMITE_HE,
    EC_SP_LAGUERRE_L,
    EC_SP_LEGENDRE_P,
    EC_SP_NUM_OPS,
};
int ec_special_unary(int op, int dtype, int64_t n, ec_ptr out, ec_ptr x);
int ec_special_binary(int op, int dtype, int64_t n, ec_ptr out, ec_ptr x, ec_ptr y);

/* geqrf alone (csrc/cpu/linalg/linalg_qr.c), for torch.geqrf; layout as
 * Note [LAPACK layout]; a (batch of m x n) overwritten, tau (batch, min(m, n)). */
int ec_linalg_geqrf(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a, ec_ptr tau,
                    ec_ptr info);
/* LDL^T of symmetric matrices (sytrf, lower) and its solve (sytrs), same
 * layout; ipiv (batch, n) int32, LAPACK's; x (batch of n x nrhs) overwritten. */
int ec_linalg_ldl_factor(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr ipiv,
                         ec_ptr info);
int ec_linalg_ldl_solve(int dtype, int64_t batch, int64_t n, int64_t nrhs, ec_ptr a,
                        ec_ptr ipiv, ec_ptr x, ec_ptr info);

/* cdef:end */

#endif
