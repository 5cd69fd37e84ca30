/* What the reduction, scan, random and sequence kernels share: dtype
 * descriptors (storage type, compute type, kind) and stores of a double or an
 * int64 result into any dtype, exactly as the CPU kernels convert
 * (reduce.c's store_value, random.c's store_d/store_i, shape.c's store_seq).
 * Needs prelude.cuh, ember_codes.h (the dtype codes) and dtype_lists.h. */
#ifndef EMBER_CUDA_STORE_CUH
#define EMBER_CUDA_STORE_CUH

#define ECU_KIND_B 0
#define ECU_KIND_I 1
#define ECU_KIND_F 2

/* ecu_dt_<sfx>: a dtype's storage type T, compute type C and kind. */
#define ECU_DT_DESC(DC, sfx, T_, C_, K)                                               \
    struct ecu_dt_##sfx {                                                             \
        typedef T_ T;                                                                 \
        typedef C_ C;                                                                 \
        enum { kind = ECU_KIND_##K };                                                 \
        static __device__ __forceinline__ C_ load(T_ v) { return EC_LOAD_##sfx(v); }  \
    };
EC_ALL_DTYPES(ECU_DT_DESC)

template <bool B, class X, class Y>
struct ecu_if {
    typedef X type;
};
template <class X, class Y>
struct ecu_if<false, X, Y> {
    typedef Y type;
};

/* The type sums accumulate in: float for 16- and 32-bit floats, double for
 * float64, int64 for integers and bool (as the CPU does). */
template <class D>
struct ecu_sum_t {
    typedef typename ecu_if<D::kind == ECU_KIND_F, typename D::C, int64_t>::type type;
};

/* A result stored in the output's dtype exactly as reduce.c's store_value:
 * from a double (ecu_store_f) or an int64 (ecu_store_i). */
static __device__ __forceinline__ void ecu_store_f(int dt, char* p, double f) {
    switch (dt) {
        case EC_BOOL: *(uint8_t*)p = f != 0; break;
        case EC_UINT8: *(uint8_t*)p = (uint8_t)ec_f2i64(f); break;
        case EC_INT8: *(int8_t*)p = (int8_t)ec_f2i64(f); break;
        case EC_INT16: *(int16_t*)p = (int16_t)ec_f2i64(f); break;
        case EC_INT32: *(int32_t*)p = (int32_t)ec_f2i64(f); break;
        case EC_INT64: *(int64_t*)p = ec_f2i64(f); break;
        case EC_FLOAT16: *(ec_f16*)p = ec_f2h(f); break;
        case EC_BFLOAT16: *(ec_bf16*)p = ec_f32_to_bf16((float)f); break;
        case EC_FLOAT32: *(float*)p = (float)f; break;
        default: *(double*)p = f; break;
    }
}

static __device__ __forceinline__ void ecu_store_i(int dt, char* p, int64_t i) {
    switch (dt) {
        case EC_BOOL: *(uint8_t*)p = i != 0; break;
        case EC_UINT8: *(uint8_t*)p = (uint8_t)i; break;
        case EC_INT8: *(int8_t*)p = (int8_t)i; break;
        case EC_INT16: *(int16_t*)p = (int16_t)i; break;
        case EC_INT32: *(int32_t*)p = (int32_t)i; break;
        case EC_INT64: *(int64_t*)p = i; break;
        default: ecu_store_f(dt, p, (double)i); break;
    }
}

#endif
