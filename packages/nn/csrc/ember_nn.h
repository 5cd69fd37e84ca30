/* ember_nn: fused multi-tensor optimizer kernels.
 *
 * This header is both the C API and the cffi cdef source (between the markers).
 * Each kernel updates a whole parameter group in one call: the arguments are
 * arrays with one entry per tensor (addresses as integers, element counts,
 * step counters), so a 100-tensor model steps in one C call.  Parameters,
 * gradients and optimizer state share one dtype (float32 or float64); steps
 * (and NAdam's mu products) are 0-d tensors of the scalar dtype sdt (EN_FLOAT32
 * or EN_FLOAT64) the kernel updates.  nthreads: ember's thread count (Note
 * [Optimizer threads] in optim.c).  Hyper-parameters follow
 * torch.optim's algorithms exactly, operation for operation.
 */
#ifndef EMBER_NN_H
#define EMBER_NN_H

#include <stdint.h>

/* cdef:begin */

#define EN_OK 0
#define EN_ERR_DTYPE 1
#define EN_ERR_INVALID 2

#define EN_FLOAT32 8
#define EN_FLOAT64 9

const char* en_last_message(void);

/* SGD: bufs may be 0 when momentum == 0; first_step[i] != 0 seeds buf with the grad. */
int en_sgd(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads, const uint64_t* bufs,
           const uint8_t* first_step, const int64_t* numels, double lr, double momentum,
           double dampening, double weight_decay, int nesterov, int maximize);

/* Adam and AdamW (decoupled != 0); max_sqs used when amsgrad. */
int en_adam(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
            const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs, const uint64_t* max_sqs,
            const uint64_t* steps, int sdt, const int64_t* numels, double lr, double beta1, double beta2,
            double eps, double weight_decay, int amsgrad, int maximize, int decoupled);

/* RMSprop: grad_avgs when centered, bufs when momentum > 0. */
int en_rmsprop(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
               const uint64_t* square_avgs, const uint64_t* grad_avgs, const uint64_t* bufs,
               const uint64_t* steps, int sdt, const int64_t* numels, double lr, double alpha, double eps,
               double weight_decay, double momentum, int centered, int maximize);

int en_adagrad(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
               const uint64_t* sums, const uint64_t* steps, int sdt, const int64_t* numels, double lr,
               double lr_decay, double weight_decay, double eps, int maximize);

int en_adadelta(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
                const uint64_t* square_avgs, const uint64_t* acc_deltas, const uint64_t* steps, int sdt,
                const int64_t* numels, double lr, double rho, double eps, double weight_decay,
                int maximize);

int en_adamax(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
              const uint64_t* exp_avgs, const uint64_t* exp_infs, const uint64_t* steps, int sdt,
              const int64_t* numels, double lr, double beta1, double beta2, double eps,
              double weight_decay, int maximize);

/* NAdam: mu_products are float32 scalars (per tensor) the kernel updates. */
int en_nadam(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
             const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs, const uint64_t* mu_products,
             const uint64_t* steps, int sdt, const int64_t* numels, double lr, double beta1, double beta2,
             double eps, double weight_decay, double momentum_decay, int decoupled, int maximize);

int en_radam(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
             const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs, const uint64_t* steps, int sdt,
             const int64_t* numels, double lr, double beta1, double beta2, double eps,
             double weight_decay, int decoupled, int maximize);

/* cdef:end */

#endif
