/* The per-element samplers on CUDA: gamma, its derivative, Poisson and
 * binomial, one thread per element running random_dist.h's code on the
 * element's own Philox stream (Note [Per-element random streams]), so a CUDA
 * draw follows the CPU's algorithm and Philox words for the same seed; values
 * agree up to the platforms' log/exp/lgamma/sin/cos rounding (random_dist.h).
 * Launcher: cuda/sort_launch.c.  Needs prelude.cuh, ember_codes.h, special.h
 * and random_dist.h. */
#ifndef EMBER_CUDA_RANDOM_DIST_CUH
#define EMBER_CUDA_RANDOM_DIST_CUH

/* the samplers (host twin in sort_launch.c) */
enum { ECU_RD_GAMMA, ECU_RD_GAMMA_GRAD, ECU_RD_POISSON, ECU_RD_BINOMIAL };

/* T: float or double.  tiny: the dtype's smallest normal (gamma only). */
template <int KIND, class T>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_rdist_k(int64_t n, const T* a, const T* b, T* out, uint64_t seed, uint64_t offset,
                double tiny) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        double r;
        if (KIND == ECU_RD_GAMMA_GRAD) {
            r = ecd_gamma_grad((double)a[i], (double)b[i]);
        } else {
            ecd_stream s;
            ecd_stream_init(&s, seed, offset + (uint64_t)i);
            if (KIND == ECU_RD_GAMMA) {
                double av = (double)a[i];
                r = ecd_gamma(av, &s);
                /* as PyTorch: a positive shape never yields an exact zero */
                if (av > 0.0 && r < tiny) r = tiny;
            } else if (KIND == ECU_RD_POISSON) {
                r = ecd_poisson((double)a[i], &s);
            } else {
                r = ecd_binomial((double)a[i], (double)b[i], &s);
            }
        }
        out[i] = (T)r;
    }
}

#endif
