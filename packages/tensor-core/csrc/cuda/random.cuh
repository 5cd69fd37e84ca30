/* Random numbers on CUDA: the same Philox stream and transforms as the CPU
 * (philox.h, Note [Bit-identical random numbers]), one thread per counter, so
 * a CUDA tensor drawn with the same seed and offset holds the same numbers as
 * a CPU one, bit for bit.  Compiled with --fmad=false (no fused multiply-adds,
 * as the CPU build's -ffp-contract=off).  Needs prelude.cuh, ember_codes.h,
 * dtype_lists.h, store.cuh and philox.h before it.
 *
 * Names the launchers ask for (ember_core/_cuda/kernels.py):
 * ecu_random_k<1>, ecu_bernoulli_p<ecu_dt_f32>, ecu_dropout_k<float>,
 * ecu_masked_scale_k<float, true>, ecu_iota_k, ecu_randperm_k. */
#ifndef EMBER_CUDA_RANDOM_CUH
#define EMBER_CUDA_RANDOM_CUH

#define ECU_RNG_BLOCK 256

/* Counter c of the call: values base = c * per ... of kind KIND, stored in
 * dtype (itemsize isz) as random.c's store_d/store_i do. */
template <int KIND>
__global__ void __launch_bounds__(ECU_RNG_BLOCK)
    ecu_random_k(int64_t n, char* out, int dtype, int isz, uint64_t seed, uint64_t offset,
                 ecr_args a) {
    const int64_t c = (int64_t)blockIdx.x * ECU_RNG_BLOCK + threadIdx.x;
    const int64_t base = c * a.per;
    if (base >= n) return;
    uint32_t r[4];
    double v[4];
    int64_t iv[4];
    ecr_philox(offset + (uint64_t)c, seed, r);
    const int m = n - base < a.per ? (int)(n - base) : a.per;
    char* o = out + base * isz;
    if (ecr_values(KIND, r, &a, v, iv)) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (j < m) ecu_store_i(dtype, o + j * isz, iv[j]);
        return;
    }
    /* whole counters of float32 (4 values) or float64 (2): one 16-byte store
     * (o is 16-byte aligned when out is: base is a multiple of per) */
    const bool aligned = ((unsigned long long)o & 15ull) == 0;
    if (dtype == EC_FLOAT32 && m == 4 && aligned) {
        ecu_vec<float, 4> w;
#pragma unroll
        for (int j = 0; j < 4; j++) w.v[j] = (float)v[j];
        *reinterpret_cast<ecu_vec<float, 4>*>(o) = w;
    } else if (dtype == EC_FLOAT64 && m == 2 && aligned) {
        ecu_vec<double, 2> w;
        w.v[0] = v[0];
        w.v[1] = v[1];
        *reinterpret_cast<ecu_vec<double, 2>*>(o) = w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (j < m) ecu_store_f(dtype, o + j * isz, v[j]);
    }
}

/* Record a bad input value in the device's error word (Note [Device-side
 * errors]); the host raises at the next synchronisation. */
static __device__ __forceinline__ void ecu_value_error(int32_t* err) {
    if (err) atomicCAS(err, 0, EC_ERR_VALUE);
}

/* bernoulli(p) with a probability per element (p contiguous, dtype P). */
template <class P>
__global__ void __launch_bounds__(ECU_RNG_BLOCK)
    ecu_bernoulli_p(int64_t n, char* out, int dtype, int isz, const typename P::T* p,
                    uint64_t seed, uint64_t offset, int32_t* err) {
    const int64_t c = (int64_t)blockIdx.x * ECU_RNG_BLOCK + threadIdx.x;
    const int64_t base = c * 4;
    if (base >= n) return;
    uint32_t r[4];
    ecr_philox(offset + (uint64_t)c, seed, r);
    bool bad = false;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if (base + j >= n) break;
        double prob = (double)P::load(p[base + j]);
        if (!(prob >= 0 && prob <= 1)) bad = true;
        ecu_store_f(dtype, out + (base + j) * isz, (double)ecr_u01_f(r[j]) < prob ? 1.0 : 0.0);
    }
    if (bad) ecu_value_error(err);
}

/* Dropout: keep = u < keep_prob (the Bernoulli stream of ec_random), out =
 * keep ? x * scale : 0, all contiguous. */
template <class T>
__global__ void __launch_bounds__(ECU_RNG_BLOCK)
    ecu_dropout_k(int64_t n, double keep_prob, T scale, T* out, uint8_t* keep, const T* x,
                  uint64_t seed, uint64_t offset) {
    const int64_t c = (int64_t)blockIdx.x * ECU_RNG_BLOCK + threadIdx.x;
    const int64_t base = c * 4;
    if (base >= n) return;
    uint32_t r[4];
    ecr_philox(offset + (uint64_t)c, seed, r);
    const unsigned long long xo = (unsigned long long)(x + base) | (unsigned long long)(out + base);
    if (base + 4 <= n && (xo & (4 * sizeof(T) - 1)) == 0 &&
        ((unsigned long long)(keep + base) & 3ull) == 0) {
        /* a whole counter, aligned: vector loads and stores */
        ecu_vec<T, 4> xv = *reinterpret_cast<const ecu_vec<T, 4>*>(x + base), ov;
        ecu_vec<uint8_t, 4> kv;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            kv.v[j] = (double)ecr_u01_f(r[j]) < keep_prob;
            ov.v[j] = kv.v[j] ? xv.v[j] * scale : (T)0;
        }
        *reinterpret_cast<ecu_vec<T, 4>*>(out + base) = ov;
        *reinterpret_cast<ecu_vec<uint8_t, 4>*>(keep + base) = kv;
        return;
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int64_t i = base + j;
        if (i >= n) break;
        uint8_t k = (double)ecr_u01_f(r[j]) < keep_prob;
        keep[i] = k;
        out[i] = k ? x[i] * scale : (T)0;
    }
}

/* randperm: the identity in parallel (iota), then one thread runs the CPU's
 * Fisher-Yates shuffle (ec_randperm; each swap depends on the ones before),
 * so the permutation is the CPU's, bit for bit.  Its time grows linearly with
 * n on a single GPU thread (about 0.3 us a swap). */
__global__ void __launch_bounds__(ECU_RNG_BLOCK) ecu_iota_k(int64_t n, int64_t* out) {
    const int64_t i = (int64_t)blockIdx.x * ECU_RNG_BLOCK + threadIdx.x;
    if (i < n) out[i] = i;
}

__global__ void __launch_bounds__(32) ecu_randperm_k(int64_t n, int64_t* out, uint64_t seed,
                                                     uint64_t offset) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int64_t i = n - 1; i > 0; i--) {
        const int64_t j = ecr_randperm_pick(seed, offset, n - 1 - i, i);
        const int64_t t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}

/* out = keep ? x * scale : 0 over a strided geometry (operands out, x, keep). */
template <class T, bool I32>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_masked_scale_k(ecu_geo g, char* out, const char* x, const char* keep, T scale) {
    int64_t i = (int64_t)blockIdx.x * (ECU_BLOCK * ECU_VEC) + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ECU_VEC; k++, i += ECU_BLOCK) {
        if (i < g.numel) {
            int64_t off[3];
            if (I32)
                ecu_offsets32<3>(g, (uint32_t)i, off);
            else
                ecu_offsets64<3>(g, i, off);
            T v = *reinterpret_cast<const T*>(x + off[1]);
            *reinterpret_cast<T*>(out + off[0]) = *(const uint8_t*)(keep + off[2]) ? v * scale : (T)0;
        }
    }
}

#endif
