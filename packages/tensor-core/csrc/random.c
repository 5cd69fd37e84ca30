/* Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11).
 *
 * Element i of a call uses counter (offset + i / per) and lanes of it, where
 * `per` elements come from one counter's four 32-bit words, so a value depends
 * only on (seed, offset, i): results do not depend on the thread count and the
 * same stream can be produced bit for bit on a GPU. */
#include <stdlib.h>

#include "core.h"

static inline void philox_round(uint32_t c[4], const uint32_t k[2]) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k[0];
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k[1];
    c[0] = n0;
    c[1] = (uint32_t)p1;
    c[2] = n2;
    c[3] = (uint32_t)p0;
}

static inline void philox(uint64_t counter, uint64_t seed, uint32_t out[4]) {
    uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int r = 0; r < 10; r++) {
        philox_round(c, k);
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    out[0] = c[0];
    out[1] = c[1];
    out[2] = c[2];
    out[3] = c[3];
}

static inline float u01_f(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }
static inline double u01_d(uint32_t hi, uint32_t lo) {
    uint64_t v = ((uint64_t)hi << 32 | lo) >> 11;
    return (double)v * (1.0 / 9007199254740992.0);
}

/* How many elements one counter yields: 4 for float32-precision draws, 2 for
 * 53-bit or 64-bit draws. */
static int per_counter(int kind, int dtype) {
    switch (kind) {
        case EC_RNG_UNIFORM:
        case EC_RNG_NORMAL:
            return dtype == EC_FLOAT64 ? 2 : 4;
        case EC_RNG_BERNOULLI:
            return 4;
        default:
            return 2;
    }
}

uint64_t ec_random_counters(int kind, int dtype, int64_t n) {
    int per = per_counter(kind, dtype);
    return (uint64_t)((n + per - 1) / per);
}

static void store_d(int dtype, char* out, int64_t i, double v) {
    switch (dtype) {
        case EC_BOOL: ((uint8_t*)out)[i] = v != 0; break;
        case EC_UINT8: ((uint8_t*)out)[i] = (uint8_t)ec_f2i64(v); break;
        case EC_INT8: ((int8_t*)out)[i] = (int8_t)ec_f2i64(v); break;
        case EC_INT16: ((int16_t*)out)[i] = (int16_t)ec_f2i64(v); break;
        case EC_INT32: ((int32_t*)out)[i] = (int32_t)ec_f2i64(v); break;
        case EC_INT64: ((int64_t*)out)[i] = ec_f2i64(v); break;
        case EC_FLOAT16: ((ec_f16*)out)[i] = (ec_f16)v; break;
        case EC_BFLOAT16: ((ec_bf16*)out)[i] = ec_f32_to_bf16((float)v); break;
        case EC_FLOAT32: ((float*)out)[i] = (float)v; break;
        default: ((double*)out)[i] = v; break;
    }
}

static void store_i(int dtype, char* out, int64_t i, int64_t v) {
    switch (dtype) {
        case EC_BOOL: ((uint8_t*)out)[i] = v != 0; break;
        case EC_UINT8: ((uint8_t*)out)[i] = (uint8_t)v; break;
        case EC_INT8: ((int8_t*)out)[i] = (int8_t)v; break;
        case EC_INT16: ((int16_t*)out)[i] = (int16_t)v; break;
        case EC_INT32: ((int32_t*)out)[i] = (int32_t)v; break;
        case EC_INT64: ((int64_t*)out)[i] = v; break;
        default: store_d(dtype, out, i, (double)v); break;
    }
}

#define TWO_PI 6.283185307179586476925286766559

int ec_random(int kind, int dtype, int64_t n, ec_ptr out_addr, uint64_t seed, uint64_t offset,
              double p0, double p1, int64_t i0, int64_t i1) {
    void* out = (void*)out_addr;
    if (!ec_valid_dtype(dtype) || n < 0) return ec_fail(EC_ERR_INVALID, "random: bad arguments");
    int per = per_counter(kind, dtype);
    int64_t n_ctr = (n + per - 1) / per;
    uint64_t range = (uint64_t)i1 - (uint64_t)i0;
    int ubits = dtype == EC_FLOAT16 ? 11 : (dtype == EC_BFLOAT16 ? 8 : 24);
    double uscale = 1.0 / (double)(1u << ubits);
    int nt = ec_threads_for(n, EC_GRAIN / 4);
    char* o = (char*)out;
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t c = 0; c < n_ctr; c++) {
        uint32_t r[4];
        philox(offset + (uint64_t)c, seed, r);
        int64_t base = c * per;
        int64_t m = n - base < per ? n - base : per;
        switch (kind) {
            case EC_RNG_UNIFORM:
                for (int64_t j = 0; j < m; j++) {
                    /* as many random bits as the dtype's mantissa holds, so that a
                     * draw in [0, 1) never rounds up to 1 (PyTorch does the same) */
                    double u = per == 4 ? (double)(r[j] >> (32 - ubits)) * uscale
                                        : u01_d(r[2 * j], r[2 * j + 1]);
                    double v = p0 + u * (p1 - p0);
                    if (per == 4 && (float)v >= (float)p1) v = nextafterf((float)p1, (float)p0);
                    store_d(dtype, o, base + j, v);
                }
                break;
            case EC_RNG_NORMAL:
                if (per == 4) {
                    for (int pair = 0; pair < 2; pair++) {
                        float u1 = u01_f(r[2 * pair]), u2 = u01_f(r[2 * pair + 1]);
                        float rad = sqrtf(-2.0f * logf(1.0f - u1));
                        float z0 = rad * cosf((float)TWO_PI * u2), z1 = rad * sinf((float)TWO_PI * u2);
                        if (2 * pair < m) store_d(dtype, o, base + 2 * pair, p0 + p1 * z0);
                        if (2 * pair + 1 < m) store_d(dtype, o, base + 2 * pair + 1, p0 + p1 * z1);
                    }
                } else {
                    double u1 = u01_d(r[0], r[1]), u2 = u01_d(r[2], r[3]);
                    double rad = sqrt(-2.0 * log(1.0 - u1));
                    store_d(dtype, o, base, p0 + p1 * rad * cos(TWO_PI * u2));
                    if (m > 1) store_d(dtype, o, base + 1, p0 + p1 * rad * sin(TWO_PI * u2));
                }
                break;
            case EC_RNG_BERNOULLI:
                for (int64_t j = 0; j < m; j++) store_d(dtype, o, base + j, (double)u01_f(r[j]) < p0);
                break;
            case EC_RNG_RANDINT:
                for (int64_t j = 0; j < m; j++) {
                    uint64_t bits = (uint64_t)r[2 * j] << 32 | r[2 * j + 1];
                    uint64_t v = (uint64_t)(((unsigned __int128)bits * range) >> 64);
                    store_i(dtype, o, base + j, (int64_t)((uint64_t)i0 + v));
                }
                break;
            case EC_RNG_BITS:
                for (int64_t j = 0; j < m; j++)
                    store_i(dtype, o, base + j, (int64_t)((uint64_t)r[2 * j] << 32 | r[2 * j + 1]));
                break;
            case EC_RNG_EXPONENTIAL:
                for (int64_t j = 0; j < m; j++) {
                    double u = u01_d(r[2 * j], r[2 * j + 1]);
                    store_d(dtype, o, base + j, -log1p(-u) / p0);
                }
                break;
            case EC_RNG_CAUCHY:
                for (int64_t j = 0; j < m; j++) {
                    double u = u01_d(r[2 * j], r[2 * j + 1]);
                    store_d(dtype, o, base + j, p0 + p1 * tan(3.14159265358979323846 * (u - 0.5)));
                }
                break;
            case EC_RNG_LOG_NORMAL: {
                double u1 = u01_d(r[0], r[1]), u2 = u01_d(r[2], r[3]);
                double rad = sqrt(-2.0 * log(1.0 - u1));
                store_d(dtype, o, base, exp(p0 + p1 * rad * cos(TWO_PI * u2)));
                if (m > 1) store_d(dtype, o, base + 1, exp(p0 + p1 * rad * sin(TWO_PI * u2)));
                break;
            }
            case EC_RNG_GEOMETRIC:
                for (int64_t j = 0; j < m; j++) {
                    double u = u01_d(r[2 * j], r[2 * j + 1]);
                    double v = ceil(log1p(-u) / log1p(-p0));
                    store_d(dtype, o, base + j, v < 1 ? 1 : v);
                }
                break;
        }
    }
    return EC_OK;
}

int ec_bernoulli_tensor(int dtype, int p_dtype, int64_t n, ec_ptr out_addr, ec_ptr p_addr,
                        uint64_t seed, uint64_t offset) {
    void* out = (void*)out_addr;
    const void* p = (const void*)p_addr;
    if (!ec_valid_dtype(dtype) || !ec_valid_dtype(p_dtype) || !ec_is_float(p_dtype))
        return ec_fail(EC_ERR_INVALID, "bernoulli: bad dtypes");
    int psz = ec_itemsize[p_dtype];
    int bad = 0;
    int64_t n_ctr = (n + 3) / 4;
    int nt = ec_threads_for(n, EC_GRAIN / 4);
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : bad) if(nt > 1)
    for (int64_t c = 0; c < n_ctr; c++) {
        uint32_t r[4];
        philox(offset + (uint64_t)c, seed, r);
        for (int64_t j = 0; j < 4 && c * 4 + j < n; j++) {
            int64_t i = c * 4 + j;
            const char* pp = (const char*)p + i * psz;
            double prob;
            switch (p_dtype) {
                case EC_FLOAT16: prob = (double)*(const ec_f16*)pp; break;
                case EC_BFLOAT16: prob = (double)ec_bf16_to_f32(*(const ec_bf16*)pp); break;
                case EC_FLOAT32: prob = (double)*(const float*)pp; break;
                default: prob = *(const double*)pp; break;
            }
            if (!(prob >= 0 && prob <= 1)) bad = 1;
            store_d(dtype, (char*)out, i, (double)u01_f(r[j]) < prob);
        }
    }
    if (bad) return ec_fail(EC_ERR_VALUE, "bernoulli: probabilities must be in [0, 1]");
    return EC_OK;
}

int ec_randperm(int64_t n, ec_ptr out_addr, uint64_t seed, uint64_t offset) {
    int64_t* out = (int64_t*)out_addr;
    if (n < 0) return ec_fail(EC_ERR_INVALID, "randperm: n must be non-negative");
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        uint32_t r[4];
        int64_t draw = n - 1 - i; /* the draw's index decides its counter and lanes */
        philox(offset + (uint64_t)(draw / 2), seed, r);
        int lane = (int)(draw % 2) * 2;
        uint64_t bits = (uint64_t)r[lane] << 32 | r[lane + 1];
        int64_t j = (int64_t)(((unsigned __int128)bits * (uint64_t)(i + 1)) >> 64);
        int64_t tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
    }
    return EC_OK;
}

static double load_weight(int dtype, const char* p, int64_t i) {
    switch (dtype) {
        case EC_FLOAT16: return (double)((const ec_f16*)p)[i];
        case EC_BFLOAT16: return (double)ec_bf16_to_f32(((const ec_bf16*)p)[i]);
        case EC_FLOAT32: return (double)((const float*)p)[i];
        default: return ((const double*)p)[i];
    }
}

int ec_multinomial(int dtype, int64_t rows, int64_t cats, ec_ptr weights_addr, int64_t num_samples,
                   int replacement, ec_ptr out_addr, uint64_t seed, uint64_t offset) {
    const void* weights = (const void*)weights_addr;
    int64_t* out = (int64_t*)out_addr;
    if (!ec_is_float(dtype) || rows < 0 || cats <= 0 || num_samples < 0)
        return ec_fail(EC_ERR_INVALID, "multinomial: bad arguments");
    int status = EC_OK;
    int nt = ec_threads_for(rows * cats * (num_samples > 0 ? num_samples : 1), EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t r = 0; r < rows; r++) {
        const char* w = (const char*)weights + r * cats * ec_itemsize[dtype];
        double* rem = malloc(sizeof(double) * (size_t)cats);
        if (!rem) { status = EC_ERR_NOMEM; continue; }
        double total = 0;
        int bad = 0;
        for (int64_t c = 0; c < cats; c++) {
            double v = load_weight(dtype, w, c);
            if (!(v >= 0) || isinf(v)) bad = 1;
            rem[c] = v;
            total += v;
        }
        if (bad || !(total > 0)) {
            status = EC_ERR_VALUE;
            free(rem);
            continue;
        }
        for (int64_t s = 0; s < num_samples; s++) {
            uint32_t q[4];
            philox(offset + (uint64_t)(r * num_samples + s), seed, q);
            double u = u01_d(q[0], q[1]) * total;
            int64_t pick = cats - 1;
            double acc = 0;
            for (int64_t c = 0; c < cats; c++) {
                acc += rem[c];
                if (u < acc && rem[c] > 0) { pick = c; break; }
            }
            while (rem[pick] <= 0 && pick > 0) pick--; /* rounding at the top end */
            out[r * num_samples + s] = pick;
            if (!replacement) {
                total -= rem[pick];
                rem[pick] = 0;
                if (!(total > 0) && s + 1 < num_samples) { status = EC_ERR_VALUE; break; }
            }
        }
        free(rem);
    }
    if (status == EC_ERR_VALUE)
        return ec_fail(EC_ERR_VALUE, "multinomial: weights must be finite, non-negative and have a positive sum (and enough non-zero categories without replacement)");
    if (status != EC_OK) return ec_fail(status, "multinomial: no scratch memory");
    return EC_OK;
}
