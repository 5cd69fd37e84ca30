/* Counter-based random numbers shared by the CPU (random.c, dropout) and the
 * CUDA kernels (cuda/random.cuh): Philox4x32-10 and every transform from its
 * bits to a distribution's values.
 *
 * Note [Bit-identical random numbers]
 * A draw depends only on (seed, counter, lane), and this header is the one
 * definition of what a counter's bits become, compiled as C for the CPU and as
 * CUDA C++ by NVRTC, so the CPU and the GPU produce the same numbers bit for
 * bit.  That holds because everything here is integer arithmetic or IEEE basic
 * operations (+ - * / sqrt and conversions), each rounded once in the order
 * written: the CPU kernels are compiled with -ffp-contract=off and the random
 * kernels with NVRTC's --fmad=false, so neither side fuses a multiply-add.  No
 * libm or CUDA math-library call is made: libm and CUDA's math library differ
 * by ulps, so the transcendental functions the transforms need (log, log1p,
 * exp, sin and cos) are ember's own below, in double precision (errors about
 * one ulp or less; the float32 Box-Muller transform evaluates them in double
 * and rounds, which gives the correctly rounded float in all but a vanishing
 * fraction of cases).  Accuracy is not what makes the results identical --
 * using the same operations is -- but it keeps the distributions' quality.
 *
 * Philox4x32-10 is Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3" (SC'11).  Element i of a call uses counter offset + i / per, lanes of it,
 * where `per` values come from one counter's four 32-bit words (Python asks
 * ec_random_counters how many counters a call consumes). */
#ifndef EMBER_PHILOX_H
#define EMBER_PHILOX_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ECR_FN static __device__ __forceinline__
static __device__ __forceinline__ double ecr_from_bits(uint64_t u) {
    return __longlong_as_double((long long)u);
}
static __device__ __forceinline__ uint64_t ecr_to_bits(double x) {
    return (uint64_t)__double_as_longlong(x);
}
static __device__ __forceinline__ float ecr_float_from_bits(uint32_t u) {
    return __uint_as_float(u);
}
static __device__ __forceinline__ uint32_t ecr_float_to_bits(float x) { return __float_as_uint(x); }
/* the high 64 bits of a 64 x 64-bit product */
static __device__ __forceinline__ uint64_t ecr_mulhi64(uint64_t a, uint64_t b) {
    return __umul64hi(a, b);
}
#else
#include <math.h> /* sqrt, sqrtf and ceil only: exact or correctly rounded everywhere */
#include <stdint.h>
#include <string.h>
#define ECR_FN static inline
static inline double ecr_from_bits(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline uint64_t ecr_to_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float ecr_float_from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline uint32_t ecr_float_to_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline uint64_t ecr_mulhi64(uint64_t a, uint64_t b) {
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}
#endif

/* ------------------------------------------------------------------ Philox */

ECR_FN void ecr_philox(uint64_t counter, uint64_t seed, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Uniform [0, 1) from 24 bits (float) or 53 bits (double); both exact. */
ECR_FN float ecr_u01_f(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }
ECR_FN double ecr_u01_d(uint32_t hi, uint32_t lo) {
    uint64_t v = ((uint64_t)hi << 32 | lo) >> 11;
    return (double)v * (1.0 / 9007199254740992.0);
}

/* nextafterf(x, toward), by bits. */
ECR_FN float ecr_nextafterf(float x, float toward) {
    if (x != x || toward != toward) return x + toward;
    if (x == toward) return toward;
    if (x == 0) return toward > 0 ? ecr_float_from_bits(1u) : ecr_float_from_bits(0x80000001u);
    uint32_t u = ecr_float_to_bits(x);
    int up = (toward > x) == (x > 0);
    return ecr_float_from_bits(up ? u + 1 : u - 1);
}

/* ------------------------------------------------------- ember's own libm */

#define ECR_INF ecr_from_bits(0x7ff0000000000000ull)
#define ECR_NAN ecr_from_bits(0x7ff8000000000000ull)
/* ln 2 split so that k * hi is exact for |k| < 2^11 */
#define ECR_LN2_HI 0x1.62e42fee00000p-1
#define ECR_LN2_LO 0x1.a39ef35793c76p-33
#define ECR_INV_LN2 0x1.71547652b82fep+0
/* pi/2 in three 33-bit parts and a tail (Cody and Waite's reduction) */
#define ECR_PIO2_1 0x1.921fb544p+0
#define ECR_PIO2_2 0x1.0b4611a6p-34
#define ECR_PIO2_2T 0x1.3198a2e037073p-69
#define ECR_INV_PIO2 0x1.45f306dc9c883p-1
#define ECR_SQRT2 0x1.6a09e667f3bcdp+0
/* round to the nearest integer (ties to even) for |x| < 2^51: add and subtract */
#define ECR_SHIFTER 0x1.8p52

/* 2^k for -1022 <= k <= 1023 */
ECR_FN double ecr_pow2i(int k) { return ecr_from_bits((uint64_t)(k + 1023) << 52); }

/* Natural logarithm.  x = 2^k (1 + f) with 1 + f in [sqrt(1/2), sqrt(2));
 * log(1 + f) = 2 atanh(s), s = f / (2 + f), written as f - (f^2/2 - s (f^2/2 +
 * R)) with R = sum 2 s^(2n) / (2n + 1) (the Taylor series, ten terms for
 * |s| < 0.1716), and k ln 2 added in two parts. */
ECR_FN double ecr_log(double x) {
    if (!(x > 0)) return x == 0 ? -ECR_INF : ECR_NAN;
    if (x == ECR_INF) return x;
    int k = 0;
    uint64_t b = ecr_to_bits(x);
    if (b < (1ull << 52)) { /* subnormal: scale into the normal range */
        x *= 0x1p54;
        b = ecr_to_bits(x);
        k = -54;
    }
    k += (int)(b >> 52) - 1023;
    double m = ecr_from_bits((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    if (m > ECR_SQRT2) {
        m *= 0.5;
        k += 1;
    }
    double f = m - 1.0; /* exact (Sterbenz) */
    double s = f / (2.0 + f);
    double z = s * s;
    double R =
        z * (2.0 / 3.0 +
             z * (2.0 / 5.0 +
                  z * (2.0 / 7.0 +
                       z * (2.0 / 9.0 +
                            z * (2.0 / 11.0 +
                                 z * (2.0 / 13.0 +
                                      z * (2.0 / 15.0 +
                                           z * (2.0 / 17.0 + z * (2.0 / 19.0 + z * (2.0 / 21.0))))))))));
    double hfsq = 0.5 * f * f;
    double dk = (double)k;
    return dk * ECR_LN2_HI - ((hfsq - (s * (hfsq + R) + dk * ECR_LN2_LO)) - f);
}

/* log(1 + x): the logarithm of u = 1 + x (rounded) plus the first-order
 * correction for the rounding, (x - (u - 1)) / u, where u - 1 is exact. */
ECR_FN double ecr_log1p(double x) {
    if (x == 0 || x != x) return x; /* keeps -0 */
    if (x == -1.0) return -ECR_INF;
    if (x < -1.0) return ECR_NAN;
    if (x == ECR_INF) return x;
    double u = 1.0 + x;
    double c = (x - (u - 1.0)) / u;
    return ecr_log(u) + c;
}

/* Exponential.  x = k ln 2 + r, |r| <= ln 2 / 2; exp(r) = 1 + r + r c / (2 - c)
 * with c = r - r^2 P(r^2), where r^2 P(r^2) + 2 = r coth(r / 2), whose Taylor
 * coefficients are 2 B_2n / (2n)! (Bernoulli numbers), seven terms. */
ECR_FN double ecr_exp(double x) {
    if (x != x) return x;
    if (x > 709.782712893384) return ECR_INF;
    if (x < -745.1332191019412) return 0.0;
    double kd = (x * ECR_INV_LN2 + ECR_SHIFTER) - ECR_SHIFTER;
    int k = (int)kd;
    double hi = x - kd * ECR_LN2_HI; /* exact */
    double lo = kd * ECR_LN2_LO;
    double r = hi - lo;
    double w = r * r;
    double P = 1.0 / 6.0 +
               w * (-1.0 / 360.0 +
                    w * (1.0 / 15120.0 +
                         w * (-1.0 / 604800.0 +
                              w * (1.0 / 23950080.0 +
                                   w * (-691.0 / 653837184000.0 + w * (1.0 / 37362124800.0))))));
    double c = r - w * P;
    double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    if (k >= -1021) return k > 1023 ? y * 2.0 * ecr_pow2i(k - 1) : y * ecr_pow2i(k);
    return y * ecr_pow2i(k + 1000) * 0x1p-1000; /* subnormal result */
}

/* sin and cos of r + t (|r| <= pi/4, t a tiny tail) by their Taylor series. */
ECR_FN double ecr_sin_kernel(double r, double t) {
    double z = r * r;
    double v = z * r;
    double S = -1.0 / 6.0 +
               z * (1.0 / 120.0 +
                    z * (-1.0 / 5040.0 +
                         z * (1.0 / 362880.0 +
                              z * (-1.0 / 39916800.0 +
                                   z * (1.0 / 6227020800.0 +
                                        z * (-1.0 / 1307674368000.0 +
                                             z * (1.0 / 355687428096000.0)))))));
    return r + (v * S + t * (1.0 - 0.5 * z));
}

ECR_FN double ecr_cos_kernel(double r, double t) {
    double z = r * r;
    double C = 1.0 / 24.0 +
               z * (-1.0 / 720.0 +
                    z * (1.0 / 40320.0 +
                         z * (-1.0 / 3628800.0 +
                              z * (1.0 / 479001600.0 +
                                   z * (-1.0 / 87178291200.0 +
                                        z * (1.0 / 20922789888000.0 +
                                             z * (-1.0 / 6402373705728000.0)))))));
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + (z * z * C - r * t));
}

/* sin(x) and cos(x), accurate for |x| < 2^20 pi/2 (ember passes angles in
 * [-2 pi, 2 pi]); reduced by n pi/2 with pi/2 in three parts. */
ECR_FN void ecr_sincos(double x, double* s, double* c) {
    if (x != x || x == ECR_INF || x == -ECR_INF) {
        *s = *c = ECR_NAN;
        return;
    }
    double nd = (x * ECR_INV_PIO2 + ECR_SHIFTER) - ECR_SHIFTER;
    double r0 = x - nd * ECR_PIO2_1; /* exact */
    double r1 = r0 - nd * ECR_PIO2_2;
    double wt = nd * ECR_PIO2_2T;
    double r = r1 - wt;
    double t = (r1 - r) - wt;
    double sn = ecr_sin_kernel(r, t), cs = ecr_cos_kernel(r, t);
    switch ((int)((int64_t)nd & 3)) {
        case 0: *s = sn; *c = cs; break;
        case 1: *s = cs; *c = -sn; break;
        case 2: *s = -sn; *c = -cs; break;
        default: *s = -cs; *c = sn; break;
    }
}

/* ------------------------------------------------------ the distributions */

/* Random kinds (ember_core.h's EC_RNG_*; repeated for the CUDA side, which
 * does not see that header). */
#define ECR_UNIFORM 0
#define ECR_NORMAL 1
#define ECR_BERNOULLI 2
#define ECR_RANDINT 3
#define ECR_BITS 4
#define ECR_EXPONENTIAL 5
#define ECR_CAUCHY 6
#define ECR_LOG_NORMAL 7
#define ECR_GEOMETRIC 8

#define ECR_TWO_PI 6.283185307179586476925286766559
#define ECR_PI 3.14159265358979323846

/* A call's parameters: p0, p1 (doubles), i0 and i1 - i0 (randint), `per`
 * values per counter (4 for float32-precision draws, 2 for 53- or 64-bit
 * ones) and, for uniform draws of 4 per counter, the dtype's mantissa bits. */
typedef struct ecr_args {
    double p0, p1;
    uint64_t i0, range;
    int per, ubits;
} ecr_args;

/* How many values one counter yields. */
ECR_FN int ecr_per_counter(int kind, int is_f64) {
    switch (kind) {
        case ECR_UNIFORM:
        case ECR_NORMAL: return is_f64 ? 2 : 4;
        case ECR_BERNOULLI: return 4;
        default: return 2;
    }
}

/* The `per` values of one counter's bits r: doubles in v, or int64 in iv for
 * RANDINT and BITS (the return value says which: 1 for integers). */
ECR_FN int ecr_values(int kind, const uint32_t r[4], const ecr_args* a, double v[4],
                      int64_t iv[4]) {
    double p0 = a->p0, p1 = a->p1;
    switch (kind) {
        case ECR_UNIFORM:
            if (a->per == 4) {
                /* as many random bits as the dtype's mantissa holds, so that a
                 * draw in [0, 1) never rounds up to 1 (PyTorch does the same) */
                double uscale = 1.0 / (double)(1u << a->ubits);
                for (int j = 0; j < 4; j++) {
                    double u = (double)(r[j] >> (32 - a->ubits)) * uscale;
                    double x = p0 + u * (p1 - p0);
                    if ((float)x >= (float)p1) x = (double)ecr_nextafterf((float)p1, (float)p0);
                    v[j] = x;
                }
            } else {
                for (int j = 0; j < 2; j++) v[j] = p0 + ecr_u01_d(r[2 * j], r[2 * j + 1]) * (p1 - p0);
            }
            return 0;
        case ECR_NORMAL:
            if (a->per == 4) {
                for (int pair = 0; pair < 2; pair++) {
                    float u1 = ecr_u01_f(r[2 * pair]), u2 = ecr_u01_f(r[2 * pair + 1]);
                    float lg = (float)ecr_log((double)(1.0f - u1));
                    float rad = sqrtf(-2.0f * lg);
                    double s, c;
                    ecr_sincos((double)((float)ECR_TWO_PI * u2), &s, &c);
                    float z0 = rad * (float)c, z1 = rad * (float)s;
                    v[2 * pair] = p0 + p1 * (double)z0;
                    v[2 * pair + 1] = p0 + p1 * (double)z1;
                }
            } else {
                double u1 = ecr_u01_d(r[0], r[1]), u2 = ecr_u01_d(r[2], r[3]);
                double rad = sqrt(-2.0 * ecr_log(1.0 - u1));
                double s, c;
                ecr_sincos(ECR_TWO_PI * u2, &s, &c);
                v[0] = p0 + p1 * rad * c;
                v[1] = p0 + p1 * rad * s;
            }
            return 0;
        case ECR_BERNOULLI:
            for (int j = 0; j < 4; j++) v[j] = (double)ecr_u01_f(r[j]) < p0 ? 1.0 : 0.0;
            return 0;
        case ECR_RANDINT:
            for (int j = 0; j < 2; j++) {
                uint64_t bits = (uint64_t)r[2 * j] << 32 | r[2 * j + 1];
                iv[j] = (int64_t)(a->i0 + ecr_mulhi64(bits, a->range));
            }
            return 1;
        case ECR_BITS:
            for (int j = 0; j < 2; j++) iv[j] = (int64_t)((uint64_t)r[2 * j] << 32 | r[2 * j + 1]);
            return 1;
        case ECR_EXPONENTIAL:
            for (int j = 0; j < 2; j++) v[j] = -ecr_log1p(-ecr_u01_d(r[2 * j], r[2 * j + 1])) / p0;
            return 0;
        case ECR_CAUCHY:
            for (int j = 0; j < 2; j++) {
                double s, c;
                ecr_sincos(ECR_PI * (ecr_u01_d(r[2 * j], r[2 * j + 1]) - 0.5), &s, &c);
                v[j] = p0 + p1 * (s / c);
            }
            return 0;
        case ECR_LOG_NORMAL: {
            double u1 = ecr_u01_d(r[0], r[1]), u2 = ecr_u01_d(r[2], r[3]);
            double rad = sqrt(-2.0 * ecr_log(1.0 - u1));
            double s, c;
            ecr_sincos(ECR_TWO_PI * u2, &s, &c);
            v[0] = ecr_exp(p0 + p1 * rad * c);
            v[1] = ecr_exp(p0 + p1 * rad * s);
            return 0;
        }
        default: /* ECR_GEOMETRIC */
            for (int j = 0; j < 2; j++) {
                double u = ecr_u01_d(r[2 * j], r[2 * j + 1]);
                double x = ceil(ecr_log1p(-u) / ecr_log1p(-p0));
                v[j] = x < 1 ? 1 : x;
            }
            return 0;
    }
}

/* The randperm swap partner of draw `draw` (Fisher-Yates from the top: element
 * i = n - 1 - draw swaps with the returned j in [0, i]): two draws per counter. */
ECR_FN int64_t ecr_randperm_pick(uint64_t seed, uint64_t offset, int64_t draw, int64_t i) {
    uint32_t r[4];
    ecr_philox(offset + (uint64_t)(draw / 2), seed, r);
    int lane = (int)(draw % 2) * 2;
    uint64_t bits = (uint64_t)r[lane] << 32 | r[lane + 1];
    return (int64_t)ecr_mulhi64(bits, (uint64_t)(i + 1));
}

#endif
