/* The per-element samplers of random_dist.c (Note [Per-element random
 * streams]): Philox streams, gamma, Poisson, binomial and the gamma sample's
 * derivative.  Compiles as C (included by random_dist.c) and as CUDA C++ (by
 * cuda/random_dist.cuh, after prelude.cuh and special.h), so both devices run
 * the same algorithm on the same Philox words; the math functions (log, exp,
 * lgamma, sin, cos) are each platform's, so CUDA samples may differ from the
 * CPU's in the last bits (and, rarely, where a rejection test lands within
 * that rounding, in the sample). */
#ifndef EMBER_RANDOM_DIST_H
#define EMBER_RANDOM_DIST_H

#define EC_RD_ISINF(x) ((x) == (double)INFINITY || (x) == -(double)INFINITY)

/* Philox4x32-10 on a full 128-bit counter (random.c uses the low 64 bits). */
EC_FN void ecd_philox4(const uint32_t ctr[4], uint64_t seed, uint32_t out[4]) {
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k[0];
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k[1];
        c[0] = n0;
        c[1] = (uint32_t)p1;
        c[2] = n2;
        c[3] = (uint32_t)p0;
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    for (int i = 0; i < 4; i++) out[i] = c[i];
}

typedef struct {
    uint32_t ctr[4];
    uint64_t seed;
    uint32_t buf[4];
    int pos;          /* next unused word of buf (4: refill) */
    int have_normal;  /* a cached second Box-Muller value */
    double normal;
} ecd_stream;

EC_FN void ecd_stream_init(ecd_stream* s, uint64_t seed, uint64_t counter) {
    s->ctr[0] = (uint32_t)counter;
    s->ctr[1] = (uint32_t)(counter >> 32);
    s->ctr[2] = 0;
    s->ctr[3] = 0;
    s->seed = seed;
    s->pos = 4;
    s->have_normal = 0;
}

EC_FN uint32_t ecd_next_u32(ecd_stream* s) {
    if (s->pos == 4) {
        ecd_philox4(s->ctr, s->seed, s->buf);
        if (++s->ctr[2] == 0) s->ctr[3]++;
        s->pos = 0;
    }
    return s->buf[s->pos++];
}

/* Uniform in the open interval (0, 1) from one 32-bit word: (w + 1/2) / 2^32.
 * Never 0 or 1, so log(u) and log(1 - u) are finite; 32 bits are plenty for
 * the rejection tests below and halve the Philox work of 53-bit draws. */
EC_FN double ecd_uniform(ecd_stream* s) {
    return ((double)ecd_next_u32(s) + 0.5) * (1.0 / 4294967296.0);
}

/* Box-Muller pairs; the second value is kept for the next call. */
EC_FN double ecd_normal(ecd_stream* s) {
    if (s->have_normal) {
        s->have_normal = 0;
        return s->normal;
    }
    double rad = sqrt(-2.0 * log(ecd_uniform(s))), th = 6.283185307179586 * ecd_uniform(s);
    s->normal = rad * sin(th);
    s->have_normal = 1;
    return rad * cos(th);
}

/* ---------------------------------------------------------------- gamma */

/* Marsaglia & Tsang (2000); shapes below 1 are boosted: G(a) = G(a + 1) U^(1/a). */
EC_FN double ecd_gamma(double a, ecd_stream* s) {
    if (!(a > 0.0)) return a == 0.0 ? 0.0 : NAN;
    if (EC_RD_ISINF(a)) return INFINITY;
    double log_boost = 0.0;
    if (a < 1.0) {
        log_boost = log(ecd_uniform(s)) / a;
        a += 1.0;
    }
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = ecd_normal(s);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = ecd_uniform(s), x2 = x * x;
        if (u < 1.0 - 0.0331 * x2 * x2 || log(u) < 0.5 * x2 + d * (1.0 - v + log(v)))
            return log_boost == 0.0 ? d * v : exp(log(d * v) + log_boost);
    }
}

/* --------------------------------------------------------------- poisson */

EC_FN double ecd_poisson(double lam, ecd_stream* s) {
    if (!(lam >= 0.0)) return NAN;
    if (lam == 0.0) return 0.0;
    if (lam < 10.0) {  /* count uniforms until their product drops below exp(-lam) */
        double limit = exp(-lam), prod = 1.0, k = 0.0;
        for (;;) {
            prod *= ecd_uniform(s);
            if (prod <= limit) return k;
            k += 1.0;
        }
    }
    /* PTRS: transformed rejection with squeeze (Hoermann 1993) */
    double slam = sqrt(lam), loglam = log(lam);
    double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
    for (;;) {
        double u = ecd_uniform(s) - 0.5, v = ecd_uniform(s), us = 0.5 - fabs(u);
        double k = floor((2.0 * a / us + b) * u + lam + 0.43);
        if (us >= 0.07 && v <= vr) return k;
        if (k < 0.0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1.0))
            return k;
    }
}

/* -------------------------------------------------------------- binomial */

EC_FN double ecd_binomial_small(double n, double p, ecd_stream* s) {
    /* waiting times: geometric gaps between successes until they pass n */
    double logq = log1p(-p), total = 0.0, k = 0.0;
    for (;;) {
        total += ceil(log(ecd_uniform(s)) / logq);
        if (total > n) return k;
        k += 1.0;
    }
}

EC_FN double ecd_binomial_btrs(double n, double p, ecd_stream* s) {
    /* BTRS (Hoermann 1993); the acceptance test compares log pmf ratios exactly */
    double q = 1.0 - p, sd = sqrt(n * p * q);
    double b = 1.15 + 2.53 * sd, a = -0.0873 + 0.0248 * b + 0.01 * p, c = n * p + 0.5;
    double vr = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * sd, m = floor((n + 1.0) * p);
    double logr = log(p / q), lf_m = lgamma(m + 1.0) + lgamma(n - m + 1.0);
    for (;;) {
        double u = ecd_uniform(s) - 0.5, v = ecd_uniform(s), us = 0.5 - fabs(u);
        double k = floor((2.0 * a / us + b) * u + c);
        if (k < 0.0 || k > n) continue;
        if (us >= 0.07 && v <= vr) return k;
        double lv = log(v * alpha / (a / (us * us) + b));
        if (lv <= lf_m - lgamma(k + 1.0) - lgamma(n - k + 1.0) + (k - m) * logr) return k;
    }
}

EC_FN double ecd_binomial(double n, double p, ecd_stream* s) {
    if (!(n >= 0.0) || !(p >= 0.0 && p <= 1.0)) return NAN;
    if (n == 0.0 || p == 0.0) return 0.0;
    if (p == 1.0) return n;
    int flip = p > 0.5;
    double pp = flip ? 1.0 - p : p;
    double k = n * pp < 10.0 ? ecd_binomial_small(n, pp, s) : ecd_binomial_btrs(n, pp, s);
    return flip ? n - k : k;
}

/* ------------------------------------------------------- gamma gradient */

/* d x / d a for x ~ Gamma(a, 1), from F(x; a) = const: -(dP/da) / p(x; a), where
 * P(a, x) = sum_k x^(a+k) e^-x / Gamma(a+k+1).  Term k of dP/da over the density
 * is r_k (log x - digamma(a+k+1)) with r_0 = x / a, r_{k+1} = r_k x / (a+k+1),
 * so no exponentials or gamma functions are needed and nothing overflows for
 * the samples a gamma draw produces. */
EC_FN double ecd_gamma_grad(double a, double x) {
    if (!(a > 0.0) || !(x > 0.0)) return x == 0.0 && a > 0.0 ? 0.0 : NAN;
    if (EC_RD_ISINF(x) || EC_RD_ISINF(a)) return NAN;
    double logx = log(x), r = x / a, psi = ec_digamma(a + 1.0), sum = 0.0;
    for (int64_t k = 0; k < 10000000; k++) {
        double term = r * (logx - psi);
        sum += term;
        double ak = a + (double)k + 1.0;
        if ((double)k > x - a && fabs(term) <= 1e-17 * fabs(sum) && r < 1e-17 * (fabs(sum) + 1.0))
            break;
        if ((double)k > x - a && r < 1e-300) break;
        r *= x / ak;
        psi += 1.0 / ak;
    }
    return -sum;
}

#endif
