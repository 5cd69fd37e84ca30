/* CUDA launchers of the random kernels (ec_random, ec_bernoulli_tensor,
 * ec_dropout, ec_masked_scale) with the CPU kernels' parameters (Note [Kernel
 * interface per device]); the draws are those of the CPU, bit for bit (Note
 * [Bit-identical random numbers] in philox.h); ec_randperm's shuffle is
 * sequential and runs on one GPU thread. */
#include "../philox.h"
#include "launch.h"

#define RNG_BLOCK 256

static int blocks_for(int64_t threads, unsigned* blocks, const char* op) {
    int64_t b = (threads + RNG_BLOCK - 1) / RNG_BLOCK;
    if (b > 0x7fffffffLL)
        return ec_fail(EC_ERR_INVALID, "%s: too many elements for one CUDA launch", op);
    *blocks = (unsigned)b;
    return EC_OK;
}

int ecu_random(int kind, int dtype, int64_t n, ec_ptr out, uint64_t seed, uint64_t offset,
               double p0, double p1, int64_t i0, int64_t i1) {
    if (!ec_valid_dtype(dtype) || n < 0 || kind < 0 || kind > EC_RNG_GEOMETRIC)
        return ec_fail(EC_ERR_INVALID, "random: bad arguments");
    if (n == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecr_args a = {p0, p1, (uint64_t)i0, (uint64_t)i1 - (uint64_t)i0,
                  ecr_per_counter(kind, dtype == EC_FLOAT64),
                  dtype == EC_FLOAT16 ? 11 : (dtype == EC_BFLOAT16 ? 8 : 24)};
    unsigned blocks = 0;
    st = blocks_for((n + a.per - 1) / a.per, &blocks, "random");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_RANDOM, kind, 0, 0, 0, &f);
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype];
    void* args[] = {&n, &out, &dtype, &isz, &seed, &offset, &a};
    return ecu_launch(f, blocks, 1, 1, RNG_BLOCK, 1, 1, 0, args);
}

int ecu_bernoulli_tensor(int dtype, int p_dtype, int64_t n, ec_ptr out, ec_ptr p, uint64_t seed,
                         uint64_t offset) {
    if (!ec_valid_dtype(dtype) || !ec_valid_dtype(p_dtype) || !ec_is_float(p_dtype) || n < 0)
        return ec_fail(EC_ERR_INVALID, "bernoulli: bad dtypes");
    if (n == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    unsigned blocks = 0;
    st = blocks_for((n + 3) / 4, &blocks, "bernoulli");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_RANDOM, ECU_RNG_BERNOULLI_P, p_dtype, 0, 0, &f);
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype];
    ecu_CUdeviceptr err = ecu_error_word();
    void* args[] = {&n, &out, &dtype, &isz, &p, &seed, &offset, &err};
    return ecu_launch(f, blocks, 1, 1, RNG_BLOCK, 1, 1, 0, args);
}

int ecu_dropout(int dtype, int64_t n, double p, ec_ptr out, ec_ptr keep, ec_ptr x, uint64_t seed,
                uint64_t offset) {
    if (n < 0) return ec_fail(EC_ERR_INVALID, "dropout: negative size");
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "dropout: no kernel for dtype %d", dtype);
    if (n == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    unsigned blocks = 0;
    st = blocks_for((n + 3) / 4, &blocks, "dropout");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_RANDOM, ECU_RNG_DROPOUT, dtype, 0, 0, &f);
    if (st != EC_OK) return st;
    /* as ec_dropout: keep with probability 1 - p (ec_random's Bernoulli), then
     * ec_masked_scale's scale in the dtype */
    double keep_prob = 1.0 - p, scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
    float scale_f = (float)scale;
    void* sc = dtype == EC_FLOAT32 ? (void*)&scale_f : (void*)&scale;
    void* args[] = {&n, &keep_prob, sc, &out, &keep, &x, &seed, &offset};
    return ecu_launch(f, blocks, 1, 1, RNG_BLOCK, 1, 1, 0, args);
}

int ecu_masked_scale(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x, ec_ptr keep,
                     double scale) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "masked_scale: no kernel for dtype %d", dtype);
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype];
    int sizes[3] = {isz, isz, 1};
    ecu_geo g;
    int i32;
    st = ecu_geometry(3, ndim, layout, sizes, &g, &i32);
    if (st != EC_OK || g.numel == 0) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_RANDOM, ECU_RNG_MASKED_SCALE, dtype, 0,
                          i32 ? ECU_VAR_S32 : ECU_VAR_S64, &f);
    if (st != EC_OK) return st;
    float scale_f = (float)scale;
    void* sc = dtype == EC_FLOAT32 ? (void*)&scale_f : (void*)&scale;
    void* args[] = {&g, &out, &x, &keep, sc};
    return ecu_launch_elements(f, g.numel, args);
}

int ecu_randperm(int64_t n, ec_ptr out, uint64_t seed, uint64_t offset) {
    if (n < 0) return ec_fail(EC_ERR_INVALID, "randperm: n must be non-negative");
    if (n == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    unsigned blocks = 0;
    st = blocks_for(n, &blocks, "randperm");
    if (st != EC_OK) return st;
    ecu_CUfunction iota, shuffle;
    st = ecu_get_function(ECU_FAM_RANDOM, ECU_RNG_RANDPERM, EC_INT64, 0, ECU_RNG_IOTA, &iota);
    if (st == EC_OK)
        st = ecu_get_function(ECU_FAM_RANDOM, ECU_RNG_RANDPERM, EC_INT64, 0, ECU_RNG_SHUFFLE,
                              &shuffle);
    if (st != EC_OK) return st;
    void* args[] = {&n, &out};
    st = ecu_launch(iota, blocks, 1, 1, RNG_BLOCK, 1, 1, 0, args);
    if (st != EC_OK || n == 1) return st;
    void* sargs[] = {&n, &out, &seed, &offset};
    return ecu_launch(shuffle, 1, 1, 1, 32, 1, 1, 0, sargs);
}
