/* The activation family on CUDA (ec_activation, ec_activation_backward of
 * activation.c): the same expression lists (activation_ops.h), one kernel per
 * kind, dtype and index width, over any strides (Note [CUDA geometry]).
 * float32/float64. */
#ifndef EMBER_CUDA_NN_ACT_CUH
#define EMBER_CUDA_NN_ACT_CUH

#define P0 ((CT)p0)
#define P1 ((CT)p1)

template <int K, class CT>
static __device__ __forceinline__ CT ecu_act_fwd(CT x, double p0, double p1) {
#define ECU_ACT_F(KIND, EXPR) \
    if (K == EC_ACT_##KIND) return (EXPR);
    ACT_FORWARD_LIST(ECU_ACT_F)
#undef ECU_ACT_F
    return x;
}

template <int K, class CT>
static __device__ __forceinline__ CT ecu_act_bwd(CT g, CT x, double p0, double p1) {
#define ECU_ACT_B(KIND, EXPR) \
    if (K == EC_ACT_##KIND) return (EXPR);
    ACT_BACKWARD_LIST(ECU_ACT_B)
#undef ECU_ACT_B
    return g;
}

#undef P0
#undef P1

/* Forward: out = f(a); backward (BWD): out = a (the gradient) * f'(b). */
template <int K, class T, bool BWD, bool I32>
__global__ void ecu_act_k(ecu_geo g, char* out, const char* a, const char* b, double p0,
                          double p1) {
    enum { NOPS = BWD ? 3 : 2 };
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.numel; i += step) {
        int64_t off[NOPS];
        if (I32)
            ecu_offsets32<NOPS>(g, (uint32_t)i, off);
        else
            ecu_offsets64<NOPS>(g, i, off);
        T x = *(const T*)(a + off[1]);
        if (BWD)
            *(T*)(out + off[0]) = ecu_act_bwd<K, T>(x, *(const T*)(b + off[NOPS - 1]), p0, p1);
        else
            *(T*)(out + off[0]) = ecu_act_fwd<K, T>(x, p0, p1);
    }
}

#endif
