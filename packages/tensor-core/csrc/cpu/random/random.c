/* Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11).
 *
 * Element i of a call uses counter (offset + i / per) and lanes of it, where
 * `per` elements come from one counter's four 32-bit words, so a value depends
 * only on (seed, offset, i): results do not depend on the thread count and the
 * same stream can be produced bit for bit on a GPU. */
#include <stdlib.h>

#include "core.h"
#include "philox.h"

/* Philox, u01_f/u01_d and the transforms: philox.h (Note [Bit-identical random
 * numbers]), shared with the CUDA kernels. */
#define philox ecr_philox
#define u01_f ecr_u01_f
#define u01_d ecr_u01_d

_Static_assert(ECR_UNIFORM == EC_RNG_UNIFORM && ECR_NORMAL == EC_RNG_NORMAL &&
                   ECR_BERNOULLI == EC_RNG_BERNOULLI && ECR_RANDINT == EC_RNG_RANDINT &&
                   ECR_BITS == EC_RNG_BITS && ECR_EXPONENTIAL == EC_RNG_EXPONENTIAL &&
                   ECR_CAUCHY == EC_RNG_CAUCHY && ECR_LOG_NORMAL == EC_RNG_LOG_NORMAL &&
                   ECR_GEOMETRIC == EC_RNG_GEOMETRIC,
               "philox.h's kinds are ember_core.h's");

static int per_counter(int kind, int dtype) { return ecr_per_counter(kind, dtype == EC_FLOAT64); }

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

int ec_random(int kind, int dtype, int64_t n, ec_ptr out_addr, uint64_t seed, uint64_t offset,
              double p0, double p1, int64_t i0, int64_t i1) {
    EC_REQUIRE_BASE_DTYPE("random", dtype);
    if (!ec_valid_dtype(dtype) || n < 0 || kind < 0 || kind > EC_RNG_GEOMETRIC)
        return ec_fail(EC_ERR_INVALID, "random: bad arguments");
    ecr_args a = {p0, p1, (uint64_t)i0, (uint64_t)i1 - (uint64_t)i0, per_counter(kind, dtype),
                  dtype == EC_FLOAT16 ? 11 : (dtype == EC_BFLOAT16 ? 8 : 24)};
    int per = a.per;
    int64_t n_ctr = (n + per - 1) / per;
    int nt = ec_threads_for(n, EC_GRAIN / 4);
    char* o = (char*)out_addr;
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t c = 0; c < n_ctr; c++) {
        uint32_t r[4];
        double v[4];
        int64_t iv[4];
        philox(offset + (uint64_t)c, seed, r);
        int64_t base = c * per;
        int64_t m = n - base < per ? n - base : per;
        if (ecr_values(kind, r, &a, v, iv))
            for (int64_t j = 0; j < m; j++) store_i(dtype, o, base + j, iv[j]);
        else
            for (int64_t j = 0; j < m; j++) store_d(dtype, o, base + j, v[j]);
    }
    return EC_OK;
}

int ec_bernoulli_tensor(int dtype, int p_dtype, int64_t n, ec_ptr out_addr, ec_ptr p_addr,
                        uint64_t seed, uint64_t offset) {
    EC_REQUIRE_BASE_DTYPE("bernoulli_tensor", dtype);
    EC_REQUIRE_BASE_DTYPE("bernoulli_tensor", p_dtype);
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
        int64_t j = ecr_randperm_pick(seed, offset, n - 1 - i, i);
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
    EC_REQUIRE_BASE_DTYPE("multinomial", dtype);
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
