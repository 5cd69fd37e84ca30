/* Mixed precision's gradient check on CUDA (ec_amp_unscale of amp.c):
 * multi-tensor launches of nn_optim.cuh's struct ecu_mt over the gradients.
 * Needs store.cuh (the stores by dtype) and nn_optim.cuh. */
#ifndef EMBER_CUDA_NN_AMP_CUH
#define EMBER_CUDA_NN_AMP_CUH

/* GradScaler's unscale of gradients of dtype D (code DT): g *= inv_scale[0]
 * (float32, on the device) in D's compute type; a non-finite element sets
 * found_inf[0] = 1 (float32). */
template <class D, int DT>
__global__ void ecu_mt_unscale(ecu_mt L, const float* inv_scale, float* found_inf) {
    typedef typename D::C C;
    const C s = (C)inv_scale[0];
    bool bad = false;
    ECU_MT_LOOP(L) {
        typename D::T* g = (typename D::T*)L.ptr[0][t];
        C v = D::load(g[i]);
        if (!(v - v == (C)0)) bad = true; /* inf or NaN */
        ecu_store_f(DT, (char*)(g + i), (double)(v * s));
    }
    if (bad) found_inf[0] = 1.0f; /* every writer stores the same value */
}

#endif
