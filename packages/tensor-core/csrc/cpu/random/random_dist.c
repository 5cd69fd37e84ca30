/* Samplers with per-element parameters: gamma (Marsaglia-Tsang), Poisson
 * (multiplication of uniforms / Hoermann's PTRS), binomial (waiting times /
 * Hoermann's BTRS), and the derivative of a gamma sample w.r.t. its shape
 * (implicit reparameterisation).
 *
 * Note [Per-element random streams]: rejection samplers use a variable number
 * of draws, so element i owns a whole Philox ecd_stream: counter words 0-1 hold
 * offset + i, word 2 counts the blocks that element has used.  A call thus
 * consumes n counters of the generator, and a value depends only on (seed,
 * offset, i), never on the thread count. */
#include <float.h>
#include <math.h>

#include "core.h"
#include "special.h"

#include "random_dist.h"

/* ------------------------------------------------------------- kernels */

static inline double load(int dtype, ec_ptr p, int64_t i) {
    return dtype == EC_FLOAT32 ? (double)((const float*)p)[i] : ((const double*)p)[i];
}

static inline void store(int dtype, ec_ptr p, int64_t i, double v) {
    if (dtype == EC_FLOAT32) {
        float f = (float)v;
        ((float*)p)[i] = f;
    } else {
        ((double*)p)[i] = v;
    }
}

static int check_dtype(int dtype, const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_INVALID, "%s: float32 or float64 expected", op);
    return 0;
}

int ec_standard_gamma(int dtype, int64_t n, ec_ptr alpha, ec_ptr out, uint64_t seed,
                      uint64_t offset) {
    if (check_dtype(dtype, "_standard_gamma")) return EC_ERR_INVALID;
    double tiny = dtype == EC_FLOAT32 ? (double)FLT_MIN : DBL_MIN;
    int nt = ec_threads_for(n, EC_GRAIN / 64);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t i = 0; i < n; i++) {
        ecd_stream s;
        ecd_stream_init(&s, seed, offset + (uint64_t)i);
        double a = load(dtype, alpha, i), g = ecd_gamma(a, &s);
        /* as PyTorch: a positive shape never yields an exact zero (it underflows) */
        if (a > 0.0 && g < tiny) g = tiny;
        store(dtype, out, i, g);
    }
    return 0;
}

int ec_standard_gamma_grad(int dtype, int64_t n, ec_ptr alpha, ec_ptr x, ec_ptr out) {
    if (check_dtype(dtype, "_standard_gamma_grad")) return EC_ERR_INVALID;
    int nt = ec_threads_for(n, EC_GRAIN / 64);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t i = 0; i < n; i++)
        store(dtype, out, i, ecd_gamma_grad(load(dtype, alpha, i), load(dtype, x, i)));
    return 0;
}

int ec_poisson(int dtype, int64_t n, ec_ptr rate, ec_ptr out, uint64_t seed, uint64_t offset) {
    if (check_dtype(dtype, "poisson")) return EC_ERR_INVALID;
    int nt = ec_threads_for(n, EC_GRAIN / 64);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t i = 0; i < n; i++) {
        ecd_stream s;
        ecd_stream_init(&s, seed, offset + (uint64_t)i);
        store(dtype, out, i, ecd_poisson(load(dtype, rate, i), &s));
    }
    return 0;
}

int ec_binomial(int dtype, int64_t n, ec_ptr count, ec_ptr prob, ec_ptr out, uint64_t seed,
                uint64_t offset) {
    if (check_dtype(dtype, "binomial")) return EC_ERR_INVALID;
    int nt = ec_threads_for(n, EC_GRAIN / 64);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t i = 0; i < n; i++) {
        ecd_stream s;
        ecd_stream_init(&s, seed, offset + (uint64_t)i);
        store(dtype, out, i, ecd_binomial(load(dtype, count, i), load(dtype, prob, i), &s));
    }
    return 0;
}
