/* Fused optimizer steps over whole parameter groups (see ember_nn.h).  Each
 * kernel is written once, generic over float/double through the EN_STEPS
 * macro, and parallelised over the elements of large tensors. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "ember_nn.h"

static _Thread_local char message[256];

const char* en_last_message(void) { return message; }

static int fail(int status, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return status;
}

/* Note [Optimizer threads]: the caller passes ember's thread count (ember_core
 * keeps it; OpenMP's own default would ignore set_num_threads and oversubscribe
 * a busy machine).  A tensor is split between threads only when each gets at
 * least GRAIN elements: below that the fork/join costs more than the loop, which
 * moves a few bytes per element. */
#define GRAIN 262144
#define THREADS(m) (nthreads > 1 && (m) >= 2 * GRAIN ? ((m) / GRAIN < nthreads ? (int)((m) / GRAIN) : nthreads) : 1)
#define P(arr, i, T) ((T*)(uintptr_t)(arr)[i])
/* Step counters (and NAdam's mu products) are 0-d tensors of the scalar dtype
 * sdt (float32, or float64 when that is the default dtype), as in PyTorch. */
#define STEP(i) bump(steps, i, sdt)

static inline double bump(const uint64_t* steps, int64_t i, int sdt) {
    if (sdt == EN_FLOAT64) return ++*(double*)(uintptr_t)steps[i];
    return ++*(float*)(uintptr_t)steps[i];
}

static inline double scale_scalar(const uint64_t* xs, int64_t i, int sdt, double by) {
    if (sdt == EN_FLOAT64) return *(double*)(uintptr_t)xs[i] *= by;
    /* in float arithmetic, as a float32 tensor times a Python scalar is in PyTorch */
    float* x = (float*)(uintptr_t)xs[i];
    *x = *x * (float)by;
    return *x;
}

/* ------------------------------------------------------------------- SGD */

/* The common case (momentum after the first step, no weight decay, nesterov or
 * maximize) gets a loop without branches, which the compiler vectorises; it does
 * the same arithmetic in the same order as the general loop. */
#define SGD_BODY(T)                                                                           \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* b = (momentum != 0) ? P(bufs, t, T) : NULL;                                        \
        int64_t m = numels[t];                                                                \
        int first = first_step ? first_step[t] : 0;                                           \
        int nt = THREADS(m);                                                                  \
        if (b && !first && !maximize && weight_decay == 0 && !nesterov) {                     \
            const T mom = (T)momentum, damp = (T)(1 - dampening), step = (T)lr;               \
            _Pragma("omp parallel for if (nt > 1) num_threads(nt) schedule(static)")          \
            for (int64_t i = 0; i < m; i++) {                                                 \
                b[i] = mom * b[i] + damp * g[i];                                              \
                p[i] = p[i] - step * b[i];                                                    \
            }                                                                                 \
            continue;                                                                         \
        }                                                                                     \
        _Pragma("omp parallel for if (nt > 1) num_threads(nt) schedule(static)")              \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) d = d + (T)weight_decay * p[i];                            \
            if (b) {                                                                          \
                b[i] = first ? d : (T)momentum * b[i] + (T)(1 - dampening) * d;               \
                d = nesterov ? d + (T)momentum * b[i] : b[i];                                 \
            }                                                                                 \
            p[i] = p[i] - (T)lr * d;                                                          \
        }                                                                                     \
    }

int en_sgd(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads, const uint64_t* bufs,
           const uint8_t* first_step, const int64_t* numels, double lr, double momentum,
           double dampening, double weight_decay, int nesterov, int maximize) {
    if (dtype == EN_FLOAT32) { SGD_BODY(float) }
    else if (dtype == EN_FLOAT64) { SGD_BODY(double) }
    else return fail(EN_ERR_DTYPE, "sgd: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}

/* ------------------------------------------------------------------ Adam */

#define ADAM_BODY(T)                                                                          \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* m1 = P(exp_avgs, t, T);                                                            \
        T* m2 = P(exp_avg_sqs, t, T);                                                         \
        T* mx = amsgrad ? P(max_sqs, t, T) : NULL;                                            \
        int64_t m = numels[t];                                                                \
        double step = STEP(t);                                                                \
        double bc1 = 1 - pow(beta1, step), bc2 = 1 - pow(beta2, step);                        \
        T step_size = (T)(lr / bc1);                                                          \
        T bc2_sqrt = (T)sqrt(bc2);                                                            \
        T decay = (T)(1 - lr * weight_decay);                                                 \
        _Pragma("omp parallel for if (THREADS(m) > 1) num_threads(THREADS(m)) schedule(static)")                           \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) {                                                          \
                if (decoupled) p[i] = p[i] * decay;                                           \
                else d = d + (T)weight_decay * p[i];                                          \
            }                                                                                 \
            m1[i] = m1[i] + (T)(1 - beta1) * (d - m1[i]);                                     \
            m2[i] = m2[i] * (T)beta2 + (T)(1 - beta2) * d * d;                                \
            T v = m2[i];                                                                      \
            if (mx) {                                                                         \
                if (v > mx[i] || mx[i] != mx[i]) mx[i] = v;                                   \
                v = mx[i];                                                                    \
            }                                                                                 \
            T denom = sqrt(v) / bc2_sqrt + (T)eps;                                            \
            p[i] = p[i] - step_size * (m1[i] / denom);                                        \
        }                                                                                     \
    }

int en_adam(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
            const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs, const uint64_t* max_sqs,
            const uint64_t* steps, int sdt, const int64_t* numels, double lr, double beta1, double beta2,
            double eps, double weight_decay, int amsgrad, int maximize, int decoupled) {
    if (dtype == EN_FLOAT32) { ADAM_BODY(float) }
    else if (dtype == EN_FLOAT64) { ADAM_BODY(double) }
    else return fail(EN_ERR_DTYPE, "adam: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}

/* --------------------------------------------------------------- RMSprop */

#define RMSPROP_BODY(T)                                                                       \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* sq = P(square_avgs, t, T);                                                         \
        T* ga = centered ? P(grad_avgs, t, T) : NULL;                                         \
        T* b = momentum > 0 ? P(bufs, t, T) : NULL;                                           \
        int64_t m = numels[t];                                                                \
        STEP(t);                                                                              \
        _Pragma("omp parallel for if (THREADS(m) > 1) num_threads(THREADS(m)) schedule(static)")                           \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) d = d + (T)weight_decay * p[i];                            \
            sq[i] = sq[i] * (T)alpha + (T)(1 - alpha) * d * d;                                \
            T avg;                                                                            \
            if (ga) {                                                                         \
                ga[i] = ga[i] + (T)(1 - alpha) * (d - ga[i]);                                 \
                avg = sqrt(sq[i] - ga[i] * ga[i]) + (T)eps;                                   \
            } else {                                                                          \
                avg = sqrt(sq[i]) + (T)eps;                                                   \
            }                                                                                 \
            if (b) {                                                                          \
                b[i] = b[i] * (T)momentum + d / avg;                                          \
                p[i] = p[i] - (T)lr * b[i];                                                   \
            } else {                                                                          \
                p[i] = p[i] - (T)lr * (d / avg);                                              \
            }                                                                                 \
        }                                                                                     \
    }

int en_rmsprop(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
               const uint64_t* square_avgs, const uint64_t* grad_avgs, const uint64_t* bufs,
               const uint64_t* steps, int sdt, const int64_t* numels, double lr, double alpha, double eps,
               double weight_decay, double momentum, int centered, int maximize) {
    if (dtype == EN_FLOAT32) { RMSPROP_BODY(float) }
    else if (dtype == EN_FLOAT64) { RMSPROP_BODY(double) }
    else return fail(EN_ERR_DTYPE, "rmsprop: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}

/* --------------------------------------------------------------- Adagrad */

#define ADAGRAD_BODY(T)                                                                       \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* s = P(sums, t, T);                                                                 \
        int64_t m = numels[t];                                                                \
        double step = STEP(t);                                                                \
        T clr = (T)(lr / (1 + (step - 1) * lr_decay));                                        \
        _Pragma("omp parallel for if (THREADS(m) > 1) num_threads(THREADS(m)) schedule(static)")                           \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) d = d + (T)weight_decay * p[i];                            \
            s[i] = s[i] + d * d;                                                              \
            T std = sqrt(s[i]) + (T)eps;                                                      \
            p[i] = p[i] - clr * (d / std);                                                    \
        }                                                                                     \
    }

int en_adagrad(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
               const uint64_t* sums, const uint64_t* steps, int sdt, const int64_t* numels, double lr,
               double lr_decay, double weight_decay, double eps, int maximize) {
    if (dtype == EN_FLOAT32) { ADAGRAD_BODY(float) }
    else if (dtype == EN_FLOAT64) { ADAGRAD_BODY(double) }
    else return fail(EN_ERR_DTYPE, "adagrad: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}

/* -------------------------------------------------------------- Adadelta */

#define ADADELTA_BODY(T)                                                                      \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* sq = P(square_avgs, t, T);                                                         \
        T* acc = P(acc_deltas, t, T);                                                         \
        int64_t m = numels[t];                                                                \
        STEP(t);                                                                              \
        _Pragma("omp parallel for if (THREADS(m) > 1) num_threads(THREADS(m)) schedule(static)")                           \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) d = d + (T)weight_decay * p[i];                            \
            sq[i] = sq[i] * (T)rho + (T)(1 - rho) * d * d;                                    \
            T std = sqrt(sq[i] + (T)eps);                                                     \
            T delta = sqrt(acc[i] + (T)eps) / std * d;                                        \
            acc[i] = acc[i] * (T)rho + (T)(1 - rho) * delta * delta;                          \
            p[i] = p[i] - (T)lr * delta;                                                      \
        }                                                                                     \
    }

int en_adadelta(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
                const uint64_t* square_avgs, const uint64_t* acc_deltas, const uint64_t* steps, int sdt,
                const int64_t* numels, double lr, double rho, double eps, double weight_decay,
                int maximize) {
    if (dtype == EN_FLOAT32) { ADADELTA_BODY(float) }
    else if (dtype == EN_FLOAT64) { ADADELTA_BODY(double) }
    else return fail(EN_ERR_DTYPE, "adadelta: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}

/* ---------------------------------------------------------------- Adamax */

#define ADAMAX_BODY(T)                                                                        \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* m1 = P(exp_avgs, t, T);                                                            \
        T* u = P(exp_infs, t, T);                                                             \
        int64_t m = numels[t];                                                                \
        double step = STEP(t);                                                                \
        T clr = (T)(lr / (1 - pow(beta1, step)));                                             \
        _Pragma("omp parallel for if (THREADS(m) > 1) num_threads(THREADS(m)) schedule(static)")                           \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) d = d + (T)weight_decay * p[i];                            \
            m1[i] = m1[i] + (T)(1 - beta1) * (d - m1[i]);                                     \
            T a = u[i] * (T)beta2, b = fabs(d) + (T)eps;                                      \
            u[i] = (a > b || a != a) ? a : b;                                                 \
            p[i] = p[i] - clr * (m1[i] / u[i]);                                               \
        }                                                                                     \
    }

int en_adamax(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
              const uint64_t* exp_avgs, const uint64_t* exp_infs, const uint64_t* steps, int sdt,
              const int64_t* numels, double lr, double beta1, double beta2, double eps,
              double weight_decay, int maximize) {
    if (dtype == EN_FLOAT32) { ADAMAX_BODY(float) }
    else if (dtype == EN_FLOAT64) { ADAMAX_BODY(double) }
    else return fail(EN_ERR_DTYPE, "adamax: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}

/* ----------------------------------------------------------------- NAdam */

#define NADAM_BODY(T)                                                                         \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* m1 = P(exp_avgs, t, T);                                                            \
        T* m2 = P(exp_avg_sqs, t, T);                                                         \
        int64_t m = numels[t];                                                                \
        double step = STEP(t);                                                                \
        double bc2 = 1 - pow(beta2, step);                                                    \
        double mu = beta1 * (1.0 - 0.5 * pow(0.96, step * momentum_decay));                   \
        double mu_next = beta1 * (1.0 - 0.5 * pow(0.96, (step + 1) * momentum_decay));        \
        double mp = scale_scalar(mu_products, t, sdt, mu);                                    \
        T c1 = (T)(lr * (1.0 - mu) / (1.0 - mp));                                             \
        T c2 = (T)(lr * mu_next / (1.0 - mp * mu_next));                                      \
        T decay = (T)(1 - lr * weight_decay);                                                 \
        _Pragma("omp parallel for if (THREADS(m) > 1) num_threads(THREADS(m)) schedule(static)")                           \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) {                                                          \
                if (decoupled) p[i] = p[i] * decay;                                           \
                else d = d + (T)weight_decay * p[i];                                          \
            }                                                                                 \
            m1[i] = m1[i] + (T)(1 - beta1) * (d - m1[i]);                                     \
            m2[i] = m2[i] * (T)beta2 + (T)(1 - beta2) * d * d;                                \
            T denom = sqrt(m2[i] / (T)bc2) + (T)eps;                                          \
            p[i] = p[i] - c1 * (d / denom);                                                   \
            p[i] = p[i] - c2 * (m1[i] / denom);                                               \
        }                                                                                     \
    }

int en_nadam(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
             const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs, const uint64_t* mu_products,
             const uint64_t* steps, int sdt, const int64_t* numels, double lr, double beta1, double beta2,
             double eps, double weight_decay, double momentum_decay, int decoupled, int maximize) {
    if (dtype == EN_FLOAT32) { NADAM_BODY(float) }
    else if (dtype == EN_FLOAT64) { NADAM_BODY(double) }
    else return fail(EN_ERR_DTYPE, "nadam: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}

/* ----------------------------------------------------------------- RAdam */

#define RADAM_BODY(T)                                                                         \
    for (int64_t t = 0; t < n; t++) {                                                         \
        T* p = P(params, t, T);                                                               \
        const T* g = P(grads, t, T);                                                          \
        T* m1 = P(exp_avgs, t, T);                                                            \
        T* m2 = P(exp_avg_sqs, t, T);                                                         \
        int64_t m = numels[t];                                                                \
        double step = STEP(t);                                                                \
        double bc1 = 1 - pow(beta1, step), bc2 = 1 - pow(beta2, step);                        \
        double rho_inf = 2 / (1 - beta2) - 1;                                                 \
        double rho_t = rho_inf - 2 * step * pow(beta2, step) / bc2;                           \
        int rectify = rho_t > 5.0;                                                            \
        double rect = rectify ? sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /                     \
                                     ((rho_inf - 4) * (rho_inf - 2) * rho_t)) : 0;            \
        T bc2_sqrt = (T)sqrt(bc2);                                                            \
        T decay = (T)(1 - lr * weight_decay);                                                 \
        _Pragma("omp parallel for if (THREADS(m) > 1) num_threads(THREADS(m)) schedule(static)")                           \
        for (int64_t i = 0; i < m; i++) {                                                     \
            T d = maximize ? -g[i] : g[i];                                                    \
            if (weight_decay != 0) {                                                          \
                if (decoupled) p[i] = p[i] * decay;                                           \
                else d = d + (T)weight_decay * p[i];                                          \
            }                                                                                 \
            m1[i] = m1[i] + (T)(1 - beta1) * (d - m1[i]);                                     \
            m2[i] = m2[i] * (T)beta2 + (T)(1 - beta2) * d * d;                                \
            T corrected = m1[i] / (T)bc1;                                                     \
            if (rectify) {                                                                    \
                T adaptive = bc2_sqrt / (sqrt(m2[i]) + (T)eps);                               \
                p[i] = p[i] - corrected * (T)lr * adaptive * (T)rect;                         \
            } else {                                                                          \
                p[i] = p[i] - corrected * (T)lr;                                              \
            }                                                                                 \
        }                                                                                     \
    }

int en_radam(int dtype, int nthreads, int64_t n, const uint64_t* params, const uint64_t* grads,
             const uint64_t* exp_avgs, const uint64_t* exp_avg_sqs, const uint64_t* steps, int sdt,
             const int64_t* numels, double lr, double beta1, double beta2, double eps,
             double weight_decay, int decoupled, int maximize) {
    if (dtype == EN_FLOAT32) { RADAM_BODY(float) }
    else if (dtype == EN_FLOAT64) { RADAM_BODY(double) }
    else return fail(EN_ERR_DTYPE, "radam: fused kernel supports float32/float64, got dtype %d", dtype);
    return EN_OK;
}
