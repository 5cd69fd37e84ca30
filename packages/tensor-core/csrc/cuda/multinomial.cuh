/* multinomial on CUDA: random.c's ec_multinomial with the same Philox draws
 * and the same double arithmetic in the same order (compiled with
 * --fmad=false), one thread per row, so a CUDA draw equals the CPU's for the
 * same seed, bit for bit (Note [Bit-identical random numbers]).  Without
 * replacement the picked categories are found again in the row's earlier
 * samples instead of in a scratch copy of the weights (kernels do not
 * allocate): O(cats * num_samples^2) per row, fine for the few samples such
 * draws take.  Invalid weights are reported through the error word (code
 * EC_ERR_VALUE, detail: the row).  Launcher: cuda/sort_launch.c.  Needs
 * prelude.cuh, ember_codes.h, dtype_lists.h, store.cuh, indexing.cuh and
 * philox.h. */
#ifndef EMBER_CUDA_MULTINOMIAL_CUH
#define EMBER_CUDA_MULTINOMIAL_CUH

static __device__ __forceinline__ void ecu_report_value(int* err, int64_t detail) {
    if (atomicCAS(err, 0, (int)EC_ERR_VALUE) == 0) {
        ((volatile int64_t*)err)[1] = detail;
        ((volatile int64_t*)err)[2] = 0;
        __threadfence_system();
    }
}

template <class D>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_multinomial_k(int64_t rows, int64_t cats, const char* weights, int64_t num_samples,
                      int replacement, int64_t* out, uint64_t seed, uint64_t offset, int* err) {
    typedef typename D::T T;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += step) {
        const T* w = (const T*)weights + r * cats;
        int64_t* o = out + r * num_samples;
        double total = 0;
        bool bad = false;
        for (int64_t c = 0; c < cats; c++) {
            double v = (double)D::load(w[c]);
            if (!(v >= 0) || v == (double)INFINITY) bad = true;
            total += v;
        }
        if (bad || !(total > 0)) {
            ecu_report_value(err, r);
            continue;
        }
        for (int64_t s = 0; s < num_samples; s++) {
            uint32_t q[4];
            ecr_philox(offset + (uint64_t)(r * num_samples + s), seed, q);
            double u = ecr_u01_d(q[0], q[1]) * total;
            int64_t pick = cats - 1;
            double acc = 0;
            /* rem[c]: the weight, or 0 once picked (without replacement) */
            for (int64_t c = 0; c < cats; c++) {
                double rc = (double)D::load(w[c]);
                if (!replacement)
                    for (int64_t t = 0; t < s; t++)
                        if (o[t] == c) rc = 0;
                acc += rc;
                if (u < acc && rc > 0) {
                    pick = c;
                    break;
                }
            }
            double rp;
            for (;;) { /* rounding at the top end: back to a category still weighted */
                rp = (double)D::load(w[pick]);
                if (!replacement)
                    for (int64_t t = 0; t < s; t++)
                        if (o[t] == pick) rp = 0;
                if (!(rp <= 0 && pick > 0)) break;
                pick--;
            }
            o[s] = pick;
            if (!replacement) {
                total -= rp;
                if (!(total > 0) && s + 1 < num_samples) {
                    ecu_report_value(err, r);
                    break;
                }
            }
        }
    }
}

#endif
