/* Helpers shared by the nn kernels (softmax.c, norm.c, loss.c, activation.c,
 * embedding.c, rnn.c).  Not visible to Python.
 *
 * Note [nn kernel dtypes]
 * The nn kernels are written for float32 and float64 only: Python converts
 * float16/bfloat16 operands to float32 first (PyTorch computes them in float32
 * too), which keeps one generic body per kernel.  Bodies live in *.inc
 * templates included once per dtype with T (the element type) and SFX (a name
 * suffix) defined; statistics accumulate in double. */
#ifndef EMBER_NN_H
#define EMBER_NN_H

#include <stdlib.h>

#include "core.h"

/* ember never reads the floating-point exception flags, so the compiler may
 * turn the selects of these kernels (clamps, NaN checks) into branch-free
 * vector code; with trapping math on it keeps them as branches instead. */
#pragma GCC optimize("no-trapping-math")

#ifdef _OPENMP
#include <omp.h>
#define NN_THREAD_ID() omp_get_thread_num()
#define NN_NUM_THREADS(var) ((var) = omp_get_num_threads())
#else
#define NN_THREAD_ID() 0
#define NN_NUM_THREADS(var) ((var) = 1)
#endif

#define NN_CAT_(a, b) a##b
#define NN_CAT(a, b) NN_CAT_(a, b)
/* NN_FN(softmax) -> softmax_f32 / softmax_f64 inside a template. */
#define NN_FN(name) NN_CAT(name, SFX)

/* Wide vector paths are chosen at run time (the shipped build stays portable):
 * hot loops get an AVX2+FMA clone next to the baseline one. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NN_VECTOR __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define NN_VECTOR
#endif

/* exp for float32 that vectorises (no libm call): Cody-Waite range reduction
 * and Cephes' degree-6 polynomial, within 2 ulp of expf on normal results.
 * Results below FLT_MIN flush to 0, overflow gives inf and NaN stays NaN. */
static inline float nn_expf(float x) {
    const float hi = 88.72283935546875f, lo = -87.33654022216797f;
    float xc = x > hi ? hi : (x < lo ? lo : x);
    float fn = xc * 1.44269504088896341f;
    /* round to nearest (valid for |fn| < 2^22) without a libm call */
    fn = (fn + 12582912.0f) - 12582912.0f;
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    /* 2^fn as 2^(fn-1) * 2: fn ranges over [-126, 128] */
    int32_t e = (int32_t)fn + 126;
    uint32_t bits = (uint32_t)e << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    y = y * scale * 2.0f;
    y = x > hi ? INFINITY : y;
    y = x < lo ? 0.0f : y;
    return x != x ? x : y;
}

static inline double nn_exp(double x) { return exp(x); }

static inline float nn_sigmoidf(float x) { return 1.0f / (1.0f + nn_expf(-x)); }
static inline double nn_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* tanh for float32 that vectorises: an odd Taylor polynomial near 0 (where
 * the exponential form cancels) and 1 - 2 / (exp(2x) + 1) elsewhere. */
static inline float nn_tanhf(float x) {
    float ax = fabsf(x);
    float x2 = x * x;
    float p = -1382.0f / 155925.0f;
    p = p * x2 + 62.0f / 2835.0f;
    p = p * x2 - 17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 - 1.0f / 3.0f;
    float small = x + x * x2 * p;
    float big = 1.0f - 2.0f / (nn_expf(2.0f * ax) + 1.0f);
    big = x < 0 ? -big : big;
    return ax < 0.3f ? small : big;
}
static inline double nn_tanh(double x) { return tanh(x); }

/* Index of a kernel dtype in per-dtype tables: float32 0, float64 1, else -1. */
static inline int nn_slot(int dtype) {
    return dtype == EC_FLOAT32 ? 0 : (dtype == EC_FLOAT64 ? 1 : -1);
}

/* One element of any float dtype as double (for small parameter arrays such
 * as running statistics, whose dtype may differ from the input's). */
static inline double nn_load(int dtype, const void* p, int64_t i) {
    switch (dtype) {
        case EC_FLOAT16: return (double)((const ec_f16*)p)[i];
        case EC_BFLOAT16: return (double)ec_bf16_to_f32(((const ec_bf16*)p)[i]);
        case EC_FLOAT32: return (double)((const float*)p)[i];
        default: return ((const double*)p)[i];
    }
}

static inline void nn_store(int dtype, void* p, int64_t i, double v) {
    switch (dtype) {
        case EC_FLOAT16: ((ec_f16*)p)[i] = (ec_f16)v; break;
        case EC_BFLOAT16: ((ec_bf16*)p)[i] = ec_f32_to_bf16((float)v); break;
        case EC_FLOAT32: ((float*)p)[i] = (float)v; break;
        default: ((double*)p)[i] = v; break;
    }
}

/* Per-thread scratch of n elements of `size` bytes for each of `nt` threads. */
static inline void* nn_scratch(int nt, int64_t n, size_t size) {
    return calloc((size_t)nt * (size_t)(n > 0 ? n : 1), size);
}

#endif
