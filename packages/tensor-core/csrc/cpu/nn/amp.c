/* Mixed precision's gradient check (ec_amp_unscale; its CUDA twin is a
 * multi-tensor kernel of cuda/nn_optim.cuh): each of n gradients of a float
 * dtype is multiplied by inv_scale[0] in its compute type (float32 for the
 * 16-bit dtypes), and a non-finite element anywhere sets found_inf[0] to 1.
 * Both scalars are float32 (PyTorch's _amp_foreach_non_finite_check_and_unscale_). */
#include "nn.h"

int ec_amp_unscale(int dtype, int64_t n, const uint64_t* grads, const int64_t* numels,
                   ec_ptr found_inf, ec_ptr inv_scale) {
    if (!ec_valid_dtype(dtype) || !ec_is_float(dtype))
        return ec_fail(EC_ERR_DTYPE, "GradScaler.unscale_: gradients of dtype %d", dtype);
    const float s = *(const float*)inv_scale;
    int bad = 0;
    for (int64_t t = 0; t < n; t++) {
        void* g = (void*)(uintptr_t)grads[t];
        int64_t m = numels[t];
        if (dtype == EC_FLOAT64) {
            double* p = (double*)g;
            for (int64_t i = 0; i < m; i++) {
                bad |= !isfinite(p[i]);
                p[i] *= (double)s;
            }
        } else if (dtype == EC_FLOAT32) {
            float* p = (float*)g;
            for (int64_t i = 0; i < m; i++) {
                bad |= !isfinite(p[i]);
                p[i] *= s;
            }
        } else {
            for (int64_t i = 0; i < m; i++) {
                float v = (float)nn_load(dtype, g, i);
                bad |= !isfinite(v);
                nn_store(dtype, g, i, (double)(v * s));
            }
        }
    }
    if (bad) *(float*)found_inf = 1.0f;
    return EC_OK;
}
