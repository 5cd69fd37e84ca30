/* ember_core's CUDA backend: the runtime Python drives (devices, streams,
 * events, copies, loading the kernels it compiled with NVRTC) and the CUDA
 * launchers of the kernel interface.
 *
 * Note [Kernel interface per device]
 * Every kernel entry point of ember_core.h that has a CUDA implementation has a
 * twin here named ecu_* instead of ec_*, with the same parameters: the pointers
 * are device addresses, and the work is queued on the current stream of the
 * current device (set with ecu_set_device/ecu_set_stream) and not waited for.
 * Python picks the namespace by the tensors' device (ember_core/_tensor/device.py),
 * so an op's Python code is the same on every device.  A status is returned as
 * by the CPU kernels; errors that only the device sees (an index out of range)
 * are reported at the next synchronisation.
 *
 * Like ember_core.h, the text between the cdef markers is cffi's cdef. */
#ifndef EMBER_CUDA_H
#define EMBER_CUDA_H

#include "ember_core.h"

/* cdef:begin */

/* Kernel families: the unit the Python side compiles and loads at first use
 * (one module per family, op and dtype(s)).  Variants of a family's kernels:
 * contiguous, strided with 32-bit and with 64-bit index math. */
enum ecu_family {
    ECU_FAM_UNARY = 0,
    ECU_FAM_BINARY = 1,
    ECU_FAM_TERNARY = 2,
    ECU_FAM_CAST = 3,
    ECU_FAM_FILL = 4,
    ECU_FAM_REDUCE = 5,   /* op: EC_R_*, dtype: the input's */
    ECU_FAM_SCAN = 6,     /* op: EC_S_*, dtype: the input's */
    ECU_FAM_SOFTMAX = 7,  /* op: 0 forward, 1 backward; dtype: float32/float64 */
    ECU_FAM_RANDOM = 8,   /* op: EC_RNG_* (dtype 0) or ECU_RNG_* below */
    ECU_FAM_SEQUENCE = 9, /* op: ECU_SEQ_*; triangle: dtype of the item size */
    ECU_FAM_NN = 10,      /* op: ECU_NN_* (the nn kernels, cuda/nn_*.cuh); dtype: float */
    ECU_NUM_FAMILIES = 11
};
enum ecu_variant { ECU_VAR_C = 0, ECU_VAR_S32 = 1, ECU_VAR_S64 = 2 };
/* Reduction and scan kernels (Note [CUDA reductions] in cuda/reduce_launch.c). */
enum ecu_reduce_variant { ECU_RED_INNER = 0, ECU_RED_OUTER = 1, ECU_RED_FINAL = 2 };
enum ecu_scan_variant { ECU_SCAN_SEQ = 0, ECU_SCAN_LINE = 1 };
/* softmax kernels */
enum ecu_softmax_variant { ECU_SM_ROWS = 0, ECU_SM_COLS = 1 };
/* random-family ops besides the EC_RNG_* kinds (dtype: of p, or of x) */
enum ecu_random_op {
    ECU_RNG_BERNOULLI_P = 16,
    ECU_RNG_DROPOUT = 17,
    ECU_RNG_MASKED_SCALE = 18,
    ECU_RNG_RANDPERM = 19
};
enum ecu_randperm_variant { ECU_RNG_IOTA = 0, ECU_RNG_SHUFFLE = 1 };
enum ecu_sequence_op { ECU_SEQ_ARANGE = 0, ECU_SEQ_LINSPACE = 1, ECU_SEQ_TRIANGLE = 2 };
/* Reductions of fewer elements never split (and never need a workspace);
 * partial states take ECU_RED_SLOT bytes each; scan blocks have
 * ECU_SCAN_BLOCK threads. */
#define ECU_RED_SPLIT_MIN 16384
#define ECU_RED_SLOT 32
#define ECU_SCAN_BLOCK 256

/* --- runtime ------------------------------------------------------------ */

/* Load the driver (libcuda, by dlopen) and initialise it: EC_OK, or
 * EC_ERR_CUDA_UNAVAILABLE with the reason in ec_last_message(). */
int ecu_init(void);
int ecu_driver_version(int* version);
int ecu_device_count(int* count);
int ecu_set_device(int device);
int ecu_get_device(void);
int ecu_device_name(int device, char* name, int len);
int ecu_device_attribute(int device, int attribute, int* value);
int ecu_device_total_memory(int device, uint64_t* bytes);
int ecu_mem_get_info(int device, uint64_t* free_bytes, uint64_t* total_bytes);
/* Wait for all work on the device; reports device-side errors. */
int ecu_synchronize(int device);
/* Report (and clear) an error a kernel recorded on the current device. */
int ecu_check_errors(void);
/* Wait after every launch (EMBER_LAUNCH_BLOCKING=1). */
void ecu_set_launch_blocking(int on);

/* Streams and events are passed as integers; stream 0 is the default stream. */
int ecu_stream_create(int device, int priority, uint64_t* stream);
int ecu_stream_destroy(uint64_t stream);
int ecu_stream_synchronize(uint64_t stream);
int ecu_stream_query(uint64_t stream, int* done);
int ecu_stream_wait_event(uint64_t stream, uint64_t event);
int ecu_stream_priority_range(int* least, int* greatest);
void ecu_set_stream(int device, uint64_t stream);
uint64_t ecu_current_stream(int device);
int ecu_event_create(int timing, uint64_t* event);
int ecu_event_destroy(uint64_t event);
int ecu_event_record(uint64_t event, uint64_t stream);
int ecu_event_synchronize(uint64_t event);
int ecu_event_query(uint64_t event, int* done);
int ecu_event_elapsed(uint64_t start, uint64_t end, float* ms);

/* Copies between any two addresses (host or device) on the current stream;
 * blocking: wait for the copy (always the case from pageable host memory). */
int ecu_memcpy(ec_ptr dst, ec_ptr src, uint64_t nbytes, int blocking);
int ecu_memset(ec_ptr dst, int value, uint64_t nbytes);
/* The device a pointer belongs to, or -1 for host memory. */
int ecu_pointer_device(ec_ptr ptr, int* device);

/* Kernels: the Python side compiles a module and loads it on the current
 * device, then registers each kernel under its (family, op, dtypes, variant). */
int ecu_module_load(const void* image, uint64_t* module);
int ecu_register(int family, int op, int dtype, int dtype2, int variant, uint64_t module,
                 const char* name);

/* --- launchers (Note [Kernel interface per device]) ---------------------- */

/* Note [Reduction workspace] (cuda/reduce_launch.c): the bytes of device
 * scratch a reduction or scan launch will need (0: none), and the workspace
 * for this thread's next such launch. */
uint64_t ecu_reduce_workspace(int op, int dtype, int out_dtype, int ndim_out, int ndim_red,
                              const int64_t* layout);
uint64_t ecu_scan_workspace(int op, int dtype, int out_dtype, int ndim, int dim,
                            const int64_t* layout);
void ecu_set_workspace(ec_ptr ptr, uint64_t nbytes);
/* The launch plans for a GPU of `sms` multiprocessors (no GPU needed; for tests):
 * reduce: kind, block x, block y, grid x, grid y, chunk, shared bytes, workspace
 * bytes; scan: kind, splits, chunk, workspace bytes.  Tuning: the threads per
 * multiprocessor a launch aims to fill (default 1024). */
int ecu_reduce_plan(int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
                    int sms, int64_t* plan);
int ecu_scan_plan(int dtype, int out_dtype, int ndim, int dim, const int64_t* layout, int sms,
                  int64_t* plan);
void ecu_reduce_tuning(int threads_per_sm);

int ecu_copy(int ndim, const int64_t* layout, ec_ptr dst, int dst_dtype, ec_ptr src,
             int src_dtype);
int ecu_copy_contig(int64_t n, ec_ptr dst, int dst_dtype, ec_ptr src, int src_dtype);
int ecu_fill(int ndim, const int64_t* layout, ec_ptr dst, int dtype, double value,
             int64_t ivalue);
int ecu_unary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
              double p0, double p1);
int ecu_unary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr x, double p0, double p1);
int ecu_binary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
               ec_ptr b, double p0);
int ecu_binary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, ec_ptr b, double p0);
int ecu_binary_scalar(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                      double s, int64_t si, int scalar_first, double p0);
int ecu_binary_scalar_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, double s,
                             int64_t si, int scalar_first, double p0);
int ecu_ternary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                ec_ptr b, ec_ptr c, double p0);
int ecu_reduce(int op, int dtype, int out_dtype, int ndim_out, int ndim_red, const int64_t* layout,
               ec_ptr out, ec_ptr idx, ec_ptr x, double p0);
int ecu_scan(int op, int dtype, int out_dtype, int ndim, int dim, const int64_t* layout,
             ec_ptr out, ec_ptr idx, ec_ptr x);
int ecu_softmax(int dtype, int log, int64_t outer, int64_t dim, int64_t inner, ec_ptr out,
                ec_ptr x);
int ecu_softmax_backward(int dtype, int log, int64_t outer, int64_t dim, int64_t inner,
                         ec_ptr grad_in, ec_ptr grad, ec_ptr y);
int ecu_random(int kind, int dtype, int64_t n, ec_ptr out, uint64_t seed, uint64_t offset,
               double p0, double p1, int64_t i0, int64_t i1);
int ecu_bernoulli_tensor(int dtype, int p_dtype, int64_t n, ec_ptr out, ec_ptr p, uint64_t seed,
                         uint64_t offset);
int ecu_dropout(int dtype, int64_t n, double p, ec_ptr out, ec_ptr keep, ec_ptr x, uint64_t seed,
                uint64_t offset);
int ecu_masked_scale(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x, ec_ptr keep,
                     double scale);
int ecu_randperm(int64_t n, ec_ptr out, uint64_t seed, uint64_t offset);
int ecu_arange(int dtype, int64_t n, ec_ptr out, double start, double step, int64_t istart,
               int64_t istep);
int ecu_linspace(int dtype, int64_t n, ec_ptr out, double start, double end);
int ecu_triangle(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                 int64_t diagonal, int upper);

/* --- indexing, sorting and counting (cuda/indexing_launch.c, cuda/sort_launch.c) */

/* Their kernel families (numbered apart from the list above), and the ops of
 * the index family besides ec_index's modes (EC_INDEX_*). */
enum ecu_family_indexing { ECU_FAM_INDEX = 20, ECU_FAM_SORT = 21 };
enum ecu_index_op { ECU_IX_MASKED_SELECT = 8, ECU_IX_MASKED_SCATTER = 9, ECU_IX_NONZERO = 10 };
/* threads of the one block that compacts (Note [Ordered compaction]) */
#define ECU_COMPACT_BLOCK 1024

int ecu_index(int mode, int dtype, int ndim, const int64_t* layout, ec_ptr values, ec_ptr x,
              int nidx, const ec_ptr* idx, const int64_t* sizes, const int64_t* xstrides,
              const int64_t* dims, double alpha);
int ecu_masked_select(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                      ec_ptr mask);
int ecu_masked_scatter(int dtype, int ndim, const int64_t* layout, ec_ptr self, ec_ptr mask,
                       ec_ptr src, int64_t src_numel);
int ecu_nonzero(int dtype, int ndim, const int64_t* layout, ec_ptr out, int64_t st_n,
                int64_t st_d, ec_ptr x, int64_t n);
/* Note [CUDA sort] (cuda/sort.cuh): topk, kthvalue and mode of lines longer
 * than a tile need a workspace of this many bytes (0: none), set with
 * ecu_set_workspace just before the call. */
uint64_t ecu_sort_workspace(int64_t lines, int64_t n);
int ecu_sort(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
             int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int descending);
int ecu_topk(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
             int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int largest,
             int sorted);
int ecu_kthvalue(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t k, int64_t x_st,
                 int64_t v_st, int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x, int mode);
int ecu_mode(int dtype, int ndim, const int64_t* layout, int64_t n, int64_t x_st, int64_t v_st,
             int64_t i_st, ec_ptr values, ec_ptr indices, ec_ptr x);
int ecu_searchsorted(int dtype, int64_t rows, int64_t nseq, ec_ptr seq, int64_t seq_rs,
                     int64_t nval, ec_ptr vals, ec_ptr out, int out_int32, int right,
                     ec_ptr sorter, int64_t sorter_rs);
int ecu_bincount(int64_t n, ec_ptr x, ec_ptr w, int w_dtype, ec_ptr out, int out_dtype,
                 int64_t nbins);
int ecu_histc(int dtype, int64_t n, ec_ptr x, ec_ptr out, int64_t bins, double lo, double hi);
int ecu_multinomial(int dtype, int64_t rows, int64_t cats, ec_ptr weights, int64_t num_samples,
                    int replacement, ec_ptr out, uint64_t seed, uint64_t offset);
int ecu_standard_gamma(int dtype, int64_t n, ec_ptr alpha, ec_ptr out, uint64_t seed,
                       uint64_t offset);
int ecu_standard_gamma_grad(int dtype, int64_t n, ec_ptr alpha, ec_ptr x, ec_ptr out);
int ecu_poisson(int dtype, int64_t n, ec_ptr rate, ec_ptr out, uint64_t seed, uint64_t offset);
int ecu_binomial(int dtype, int64_t n, ec_ptr count, ec_ptr prob, ec_ptr out, uint64_t seed,
                 uint64_t offset);
/* --- nn kernels (cuda/nn_launch.c, cuda/nn_*.cuh) ------------------------ */

/* The kernels of family ECU_FAM_NN (one compile group each, per dtype). */
enum ecu_nn_op {
    ECU_NN_NLL = 0,
    ECU_NN_NLL_BWD = 1,
    ECU_NN_CE_ROWS = 2,
    ECU_NN_CE_REDUCE = 3,
    ECU_NN_CE_COEF = 4,
    ECU_NN_CE_BWD_ROWS = 5,
    ECU_NN_MT_SGD = 6,
    ECU_NN_MT_ADAM = 7,
    ECU_NN_MT_UNSCALE = 8,
    ECU_NN_ACT_FWD = 9, /* dtype2: the EC_ACT_* kind; variant S32/S64 */
    ECU_NN_ACT_BWD = 10,
    ECU_NN_EMBEDDING = 11, /* dtype: of the item size (uint8, int16, int32, int64) */
    ECU_NN_EMBEDDING_BWD = 12,
    ECU_NN_ROW_NORM = 13,
    ECU_NN_ROW_NORM_BWD = 14,
    ECU_NN_ROW_NORM_COLS = 15,
    ECU_NN_BATCH_NORM = 16,
    ECU_NN_BATCH_NORM_BWD = 17,
    ECU_NN_GROUP_NORM = 18,
    ECU_NN_GROUP_NORM_BWD = 19,
    ECU_NN_GROUP_NORM_WGRAD = 20,
    ECU_NN_MAX_POOL = 21,
    ECU_NN_AVG_POOL = 22,
    ECU_NN_AVG_POOL_BWD = 23,
    ECU_NN_ADAPTIVE_POOL = 24,
    ECU_NN_ADAPTIVE_AVG_BWD = 25,
    ECU_NN_INDEX_SCATTER_ADD = 26,
    ECU_NN_INDEX_GATHER = 27,
    ECU_NN_IM2COL = 28,
    ECU_NN_COL2IM = 29,
    ECU_NN_FILL_BIAS = 30,
    ECU_NN_BIAS_GRAD = 31,
    ECU_NN_DW_CONV = 32,
    ECU_NN_DW_CONV_BWD_DATA = 33,
    ECU_NN_DW_CONV_BWD_WEIGHT = 34,
    ECU_NN_INDEX_MAP = 35,
    ECU_NN_MAP_GATHER = 36, /* dtype: of the item size */
    ECU_NN_MAP_SCATTER_ADD = 37,
    ECU_NN_UPSAMPLE_LINEAR = 38,
    ECU_NN_UPSAMPLE_LINEAR_BWD = 39,
    ECU_NN_UPSAMPLE_BICUBIC = 40,
    ECU_NN_UPSAMPLE_BICUBIC_BWD = 41,
    ECU_NN_EMBEDDING_BAG = 42,
    ECU_NN_EMBEDDING_BAG_BWD = 43,
    ECU_NN_EMBEDDING_BAG_PSW = 44,
    ECU_NN_EMBEDDING_RENORM = 45,
    ECU_NN_RNN_BIAS = 46,
    ECU_NN_RNN_COL_SUM = 47,
    ECU_NN_LSTM_POINT = 48,
    ECU_NN_LSTM_POINT_BWD = 49,
    ECU_NN_GRU_POINT = 50,
    ECU_NN_GRU_POINT_BWD = 51,
    /* grid_sample and the CTC loss (cuda/nn_sample.cuh, cuda/sample_launch.c) */
    ECU_NN_GRID_SAMPLE_2D = 52,
    ECU_NN_GRID_SAMPLE_2D_BWD = 53,
    ECU_NN_GRID_SAMPLE_3D = 54,
    ECU_NN_GRID_SAMPLE_3D_BWD = 55,
    ECU_NN_CTC = 56,
    ECU_NN_CTC_BWD = 57,
    /* fused attention (cuda/attention.cuh, cuda/attention_launch.c) */
    ECU_NN_ATTN_FWD = 58,
    ECU_NN_ATTN_BWD_DQ = 59,
    ECU_NN_ATTN_BWD_DKV = 60
};
int ecu_embedding(int dtype, int64_t num, int64_t dim, ec_ptr out, ec_ptr weight, int64_t w_rs,
                  ec_ptr idx, int idx_is_i32, int64_t n);
/* scale_by_freq is refused (no CUDA kernel yet). */
int ecu_embedding_backward(int dtype, int64_t num, int64_t dim, ec_ptr grad_weight, ec_ptr grad,
                           ec_ptr idx, int idx_is_i32, int64_t n, int64_t padding_idx,
                           int scale_by_freq);
/* Bags: bad indices and offsets are reported at the next synchronisation;
 * scale_grad_by_freq is refused. */
int ecu_embedding_bag(int dtype, int64_t num, int64_t dim, int mode, ec_ptr out,
                      ec_ptr offset2bag, ec_ptr bag_size, ec_ptr max_idx, ec_ptr weight,
                      int64_t w_rs, ec_ptr idx, int64_t n, ec_ptr offsets, int64_t bags,
                      ec_ptr psw, int64_t padding_idx);
int ecu_embedding_bag_backward(int dtype, int64_t num, int64_t dim, int mode, ec_ptr grad_weight,
                               ec_ptr grad_psw, ec_ptr grad, ec_ptr weight, int64_t w_rs,
                               ec_ptr idx, int64_t n, ec_ptr offset2bag, ec_ptr bag_size,
                               ec_ptr max_idx, int64_t bags, ec_ptr psw, int64_t padding_idx,
                               int scale_by_freq);
/* float32/float64 weights. */
int ecu_embedding_renorm(int dtype, int64_t num, int64_t dim, ec_ptr weight, int64_t w_rs,
                         ec_ptr idx, int idx_is_i32, int64_t n, double max_norm,
                         double norm_type);
int ecu_row_norm(int dtype, int rms, int64_t rows, int64_t cols, double eps, ec_ptr out,
                 ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight, ec_ptr bias);
int ecu_row_norm_backward(int dtype, int rms, int64_t rows, int64_t cols, ec_ptr grad_in,
                          ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad, ec_ptr x,
                          ec_ptr mean, ec_ptr rstd, ec_ptr weight);
int ecu_batch_norm(int dtype, int running_dtype, int64_t n, int64_t c, int64_t s, int training,
                   double momentum, double eps, ec_ptr out, ec_ptr save_mean, ec_ptr save_invstd,
                   ec_ptr x, ec_ptr weight, ec_ptr bias, ec_ptr running_mean,
                   ec_ptr running_var);
int ecu_batch_norm_backward(int dtype, int64_t n, int64_t c, int64_t s, int training,
                            ec_ptr grad_in, ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad,
                            ec_ptr x, ec_ptr save_mean, ec_ptr save_invstd, ec_ptr weight);
int ecu_group_norm(int dtype, int64_t n, int64_t c, int64_t s, int64_t g, double eps, ec_ptr out,
                   ec_ptr mean, ec_ptr rstd, ec_ptr x, ec_ptr weight, ec_ptr bias);
int ecu_group_norm_backward(int dtype, int64_t n, int64_t c, int64_t s, int64_t g,
                            ec_ptr grad_in, ec_ptr grad_weight, ec_ptr grad_bias, ec_ptr grad,
                            ec_ptr x, ec_ptr mean, ec_ptr rstd, ec_ptr weight);
int ecu_activation(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                   double p0, double p1);
int ecu_activation_backward(int kind, int dtype, int ndim, const int64_t* layout, ec_ptr grad_in,
                            ec_ptr grad, ec_ptr x, double p0, double p1);
int ecu_nll_loss(int dtype, int64_t n, int64_t c, int64_t s, int reduction, int64_t ignore_index,
                 ec_ptr out, ec_ptr total_weight, ec_ptr x, ec_ptr target, ec_ptr weight);
int ecu_nll_loss_backward(int dtype, int64_t n, int64_t c, int64_t s, int reduction,
                          int64_t ignore_index, ec_ptr grad_in, ec_ptr grad, ec_ptr target,
                          ec_ptr weight);
int ecu_cross_entropy(int dtype, int64_t n, int64_t c, int reduction, int64_t ignore_index,
                      ec_ptr out, ec_ptr total_weight, ec_ptr lse, ec_ptr x, ec_ptr target,
                      ec_ptr weight);
int ecu_cross_entropy_backward(int dtype, int64_t n, int64_t c, int reduction,
                               int64_t ignore_index, ec_ptr grad_in, ec_ptr grad, ec_ptr lse,
                               ec_ptr x, ec_ptr target, ec_ptr weight);
/* Multi-tensor optimizer steps (Note [Multi-tensor launches]): the parameters
 * of ember_nn's fused CPU steps en_sgd / en_adam (packages/nn/csrc/ember_nn.h);
 * the address arrays and the step counters are host memory, the tensors
 * device memory; nthreads is unused. */
int ecu_optim_sgd(int dtype, int nthreads, int64_t n, const uint64_t* params,
                  const uint64_t* grads, const uint64_t* bufs, const uint8_t* first_step,
                  const int64_t* numels, double lr, double momentum, double dampening,
                  double weight_decay, int nesterov, int maximize);
int ecu_optim_adam(int dtype, int nthreads, int64_t n, const uint64_t* params,
                   const uint64_t* grads, const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs,
                   const uint64_t* max_sqs, const uint64_t* steps, int sdt, const int64_t* numels,
                   double lr, double beta1, double beta2, double eps, double weight_decay,
                   int amsgrad, int maximize, int decoupled);
/* GradScaler: grads (n tensors of `dtype`, any float) *= inv_scale[0]; a
 * non-finite element sets found_inf[0] = 1 (both float32 device scalars). */
int ecu_amp_unscale(int dtype, int64_t n, const uint64_t* grads, const int64_t* numels,
                    ec_ptr found_inf, ec_ptr inv_scale);

/* Pooling and convolution (cuda/nn_spatial.cuh).  The GEMM convolution runs
 * its products on cuBLAS (Note [CUDA convolution without cuDNN]). */
int ecu_max_pool_forward(int dtype, int64_t planes, const int64_t* geom, ec_ptr x, ec_ptr y,
                         ec_ptr idx);
int ecu_avg_pool_forward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                         int64_t divisor, ec_ptr x, ec_ptr y);
int ecu_avg_pool_backward(int dtype, int64_t planes, const int64_t* geom, int count_include_pad,
                          int64_t divisor, ec_ptr gy, ec_ptr gx);
int ecu_adaptive_pool_forward(int dtype, int is_max, int64_t planes, const int64_t* in3,
                              const int64_t* out3, ec_ptr x, ec_ptr y, ec_ptr idx);
int ecu_adaptive_avg_pool_backward(int dtype, int64_t planes, const int64_t* in3,
                                   const int64_t* out3, ec_ptr gy, ec_ptr gx);
int ecu_index_scatter_add(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr gy,
                          ec_ptr idx, ec_ptr gx);
int ecu_index_gather(int dtype, int64_t planes, int64_t in_vol, int64_t out_vol, ec_ptr x,
                     ec_ptr idx, ec_ptr y);
int ecu_im2col(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr x, ec_ptr col);
int ecu_col2im(int dtype, int64_t n, int64_t c, const int64_t* geom, ec_ptr col, ec_ptr x);
int ecu_conv_bias_grad(int dtype, int64_t n, int64_t c, int64_t l, ec_ptr gy, ec_ptr gb);
int ecu_conv_forward(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                     const int64_t* geom, ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y, ec_ptr work,
                     int par);
int ecu_conv_backward_data(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                           const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx, ec_ptr work,
                           int par);
int ecu_conv_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co, int64_t groups,
                             const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw, ec_ptr work,
                             int par);
int ecu_conv_depthwise_forward(int dtype, int64_t n, int64_t ci, int64_t co, const int64_t* geom,
                               ec_ptr x, ec_ptr w, ec_ptr bias, ec_ptr y);
int ecu_conv_depthwise_backward_data(int dtype, int64_t n, int64_t ci, int64_t co,
                                     const int64_t* geom, ec_ptr gy, ec_ptr w, ec_ptr gx);
int ecu_conv_depthwise_backward_weight(int dtype, int64_t n, int64_t ci, int64_t co,
                                       const int64_t* geom, ec_ptr x, ec_ptr gy, ec_ptr gw,
                                       ec_ptr work);

/* Padding modes and interpolation (cuda/nn_resample.cuh): the index maps
 * are computed on the device. */
int ecu_index_map(int kind, int64_t in, int64_t out, int64_t before, double scale, int in_double,
                  ec_ptr map);
int ecu_map_gather(int itemsize, int64_t planes, const int64_t* in3, const int64_t* out3,
                   ec_ptr maps, ec_ptr x, ec_ptr y);
int ecu_map_scatter_add(int dtype, int64_t planes, const int64_t* in3, const int64_t* out3,
                        ec_ptr maps, ec_ptr gy, ec_ptr gx);
int ecu_upsample_linear(int dtype, int backward, int64_t planes, const int64_t* in3,
                        const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                        ec_ptr dst);
int ecu_upsample_bicubic(int dtype, int backward, int64_t planes, const int64_t* in3,
                         const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                         ec_ptr dst);

/* Recurrent cells (cuda/nn_rnn.cuh): gate GEMMs on cuBLAS, one fused gate
 * kernel each way. */
int ecu_lstm_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr cy, ec_ptr ws,
                  ec_ptr x, int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr cx, int64_t c_rs,
                  ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh, int64_t whh_rs, ec_ptr b_ih,
                  ec_ptr b_hh);
int ecu_lstm_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                           ec_ptr grad_hx, ec_ptr grad_cx, ec_ptr grad_w_ih, ec_ptr grad_w_hh,
                           ec_ptr grad_b, ec_ptr dgates, ec_ptr grad_hy, ec_ptr grad_cy,
                           ec_ptr ws, ec_ptr cx, int64_t c_rs, ec_ptr cy, ec_ptr x, int64_t x_rs,
                           ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                           int64_t whh_rs);
int ecu_gru_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr ws, ec_ptr x,
                 int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                 int64_t whh_rs, ec_ptr b_ih, ec_ptr b_hh);
int ecu_gru_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                          ec_ptr grad_hx, ec_ptr grad_w_ih, ec_ptr grad_w_hh, ec_ptr grad_b_ih,
                          ec_ptr grad_b_hh, ec_ptr dgates, ec_ptr grad_hy, ec_ptr ws, ec_ptr x,
                          int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs,
                          ec_ptr w_hh, int64_t whh_rs);

/* grid_sample (2-D bilinear/nearest/bicubic, 3-D bilinear/nearest; atomics for
 * gx) and the CTC loss (one block per batch element; the lengths, offsets and
 * targets are device arrays, bad ones raise at the next synchronisation) --
 * cuda/sample_launch.c, cuda/nn_sample.cuh. */
int ecu_grid_sample_forward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                            const int64_t* out3, int mode, int padding, int align_corners,
                            ec_ptr x, ec_ptr grid, ec_ptr y);
int ecu_grid_sample_backward(int dtype, int ndim, int64_t n, int64_t c, const int64_t* in3,
                             const int64_t* out3, int mode, int padding, int align_corners,
                             ec_ptr gy, ec_ptr x, ec_ptr grid, ec_ptr gx, ec_ptr ggrid);
int ecu_ctc_loss_forward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                         ec_ptr log_probs, ec_ptr targets, int64_t ntargets,
                         ec_ptr target_offsets, ec_ptr input_lengths, ec_ptr target_lengths,
                         int64_t blank, ec_ptr log_alpha, ec_ptr nll);
int ecu_ctc_loss_backward(int dtype, int64_t tmax, int64_t n, int64_t c, int64_t smax,
                          ec_ptr log_probs, ec_ptr targets, int64_t ntargets,
                          ec_ptr target_offsets, ec_ptr input_lengths, ec_ptr target_lengths,
                          int64_t blank, ec_ptr log_alpha, ec_ptr nll, ec_ptr grad_out,
                          int64_t grad_stride, int zero_infinity, ec_ptr grad);

/* Fused scaled-dot-product attention (Note [Fused attention] in
 * cuda/attention.cuh; CUDA only, no CPU twin): float16/bfloat16/float32, head
 * dims up to 128.  geo: N, H, L, S, E, Ev, the (n, h, row) element strides of
 * q, k, v and the (n, h, row, column) strides of the mask; mask_kind 0 none, 1
 * bool, 2 additive float32.  out (N, H, L, Ev) and lse (N, H, L) float32 are
 * dense; the backward takes dense grad_out, a float32 workspace delta (N, H, L)
 * and writes dense dq, dk, dv. */
int ecu_attention_forward(int dtype, const int64_t* geo, double scale, int causal, int mask_kind,
                          ec_ptr q, ec_ptr k, ec_ptr v, ec_ptr mask, ec_ptr out, ec_ptr lse);
int ecu_attention_backward(int dtype, const int64_t* geo, double scale, int causal, int mask_kind,
                           ec_ptr q, ec_ptr k, ec_ptr v, ec_ptr mask, ec_ptr out, ec_ptr lse,
                           ec_ptr grad_out, ec_ptr delta, ec_ptr dq, ec_ptr dk, ec_ptr dv);

/* --- matrix products on cuBLAS (Note [cuBLAS], cuda/blas_launch.c) ------- */

/* Note [GEMM plan]: how C[b] = alpha A[b] B[b] + beta C[b], with ec_matmul's
 * row and column strides (elements), maps onto one column-major cuBLAS GEMM.
 * A matrix with a unit column stride is the transpose of a column-major matrix
 * whose leading dimension is its row stride; one with a unit row stride is
 * column-major with its column stride as leading dimension.  When C is
 * row-major cuBLAS computes C^T = B^T A^T (swap: its first operand is ember's
 * B), else C = A B.  `copy` names the operands neither form fits (a zero,
 * negative or too small stride): the caller passes dense row-major copies of
 * those (batch stride rows*cols, or 0 for an operand broadcast over the batch)
 * and asks again.  transa/transb: 1 = CUBLAS_OP_T.  loop: C's batch stride is
 * 0, so the products run one after another (as on the CPU). */
enum ecu_gemm_copy { ECU_GEMM_COPY_A = 1, ECU_GEMM_COPY_B = 2, ECU_GEMM_COPY_C = 4 };
typedef struct ecu_gemm_plan {
    int copy, swap, transa, transb, loop;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c; /* batch strides of cuBLAS's A, B and C */
} ecu_gemm_plan;
int ecu_gemm_plan_make(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_bs,
                       int64_t a_rs, int64_t a_cs, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                       int64_t c_bs, int64_t c_rs, int64_t c_cs, ecu_gemm_plan* plan);
/* Just the copy bits of the plan (the per-call check of the Python side). */
int ecu_gemm_copies(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_bs, int64_t a_rs,
                    int64_t a_cs, int64_t b_bs, int64_t b_rs, int64_t b_cs, int64_t c_bs,
                    int64_t c_rs, int64_t c_cs);

/* Open libcublas (`path`, or by soname when NULL or empty); EC_OK when loaded. */
int ecu_blas_load(const char* path);
int ecu_blas_loaded(void);

/* ember.backends.cuda.matmul's switches (PyTorch's defaults: TF32 off,
 * reduced-precision reductions allowed for float16 and bfloat16). */
enum ecu_blas_flag {
    ECU_BLAS_ALLOW_TF32 = 1,
    ECU_BLAS_ALLOW_FP16_REDUCED = 2,
    ECU_BLAS_ALLOW_BF16_REDUCED = 4
};
void ecu_blas_set_flags(int flags);
int ecu_blas_get_flags(void);

int ecu_matmul(int dtype, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
               ec_ptr a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
               ec_ptr b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
               ec_ptr c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

/* cdef:end */

/* Implemented by the Python side (cffi extern "Python+C", ember_core/_cuda/runtime.py):
 * compile and register the kernel (family, op, dtype, dtype2, variant) on `device`. */
int ecu_py_compile(int device, int family, int op, int dtype, int dtype2, int variant);
/* Allocate cuBLAS's workspace for (device, stream) from ember_allocator (Note
 * [cuBLAS], ember_core/_cuda/blas.py); *nbytes 0 leaves cuBLAS its own. */
int ecu_py_blas_workspace(int device, uint64_t stream, uint64_t* ptr, uint64_t* nbytes);

#endif
