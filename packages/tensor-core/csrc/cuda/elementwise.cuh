/* Elementwise kernels on CUDA: the shared lists of elementwise_ops.h expanded
 * into functors (one struct per op and dtype), and kernel templates that run a
 * functor over a contiguous range (vectorised loads) or a strided geometry
 * (Note [CUDA geometry]).  NVRTC instantiates only the kernels a launch asks
 * for, by name: ecu_unary_c<U_EXP_f32>, ecu_binary_s<B_ADD_f16, true>, ...
 * (the names the Python side builds, ember_core/_cuda/kernels.py). */
#ifndef EMBER_CUDA_ELEMENTWISE_CUH
#define EMBER_CUDA_ELEMENTWISE_CUH

/* ---------------------------------------------------------------- functors */

#define ECU_UNARY_FUNCTOR(OP, DC, sfx, T, C, OT, osfx, EXPR)                         \
    struct U_##OP##_##sfx {                                                          \
        typedef T in_t;                                                              \
        typedef OT out_t;                                                            \
        static __device__ __forceinline__ OT f(T v, ec_params* prm) {                \
            typedef C CT;                                                            \
            C x = EC_LOAD_##sfx(v);                                                  \
            (void)prm;                                                               \
            return EC_STORE_##osfx(EXPR);                                            \
        }                                                                            \
    };

#define ECU_BINARY_FUNCTOR(OP, DC, sfx, T, C, OT, osfx, EXPR)                        \
    struct B_##OP##_##sfx {                                                          \
        typedef T in_t;                                                              \
        typedef OT out_t;                                                            \
        static __device__ __forceinline__ OT f(T va, T vb, ec_params* prm) {         \
            typedef C CT;                                                            \
            C a = EC_LOAD_##sfx(va);                                                 \
            C b = EC_LOAD_##sfx(vb);                                                 \
            (void)prm;                                                               \
            return EC_STORE_##osfx(EXPR);                                            \
        }                                                                            \
    };

#define ECU_TERNARY_FUNCTOR(OP, DC, sfx, T, C, OT, osfx, EXPR)                       \
    struct T_##OP##_##sfx {                                                          \
        typedef T a_t;                                                               \
        typedef OT out_t;                                                            \
        static __device__ __forceinline__ OT f(T va, T vb, T vc, ec_params* prm) {   \
            typedef C CT;                                                            \
            C a = EC_LOAD_##sfx(va);                                                 \
            C b = EC_LOAD_##sfx(vb);                                                 \
            C c = EC_LOAD_##sfx(vc);                                                 \
            (void)prm;                                                               \
            return EC_STORE_##osfx(EXPR);                                            \
        }                                                                            \
    };

/* A compile group expands the list of its own dtype only (its source is made by
 * ember_core/_cuda/kernels.py, e.g. UNARY_FLOAT_LIST(ECU_UNARY_FUNCTOR, EC_FLOAT32,
 * f32, float, float)): NVRTC then parses tens of functors, not a thousand. */

/* where(cond, a, b): a select on storage values. */
#define ECU_WHERE_FUNCTOR(DC, sfx, T, C, K)                                          \
    struct T_WHERE_##sfx {                                                           \
        typedef T out_t;                                                             \
        static __device__ __forceinline__ T f(uint8_t c, T a, T b, ec_params*) {     \
            return c ? a : b;                                                        \
        }                                                                            \
    };

/* Casts: dst <- src, as the CPU's copy.c converts. */
#define ECU_CAST_FUNCTOR(DC, ds, DT, DCT, DK, SC, ss, ST, SCT, SK)                   \
    struct CAST_##ds##_##ss {                                                        \
        typedef ST in_t;                                                             \
        typedef DT out_t;                                                            \
        static __device__ __forceinline__ DT f(ST v, ec_params*) {                   \
            return EC_STORE_##ds(EC_CONV_##DK##_##SK(EC_LOAD_##ss(v)));              \
        }                                                                            \
    };


/* ------------------------------------------------------------ index spaces */

/* The first element a thread handles: each block covers ECU_BLOCK * ECU_VEC
 * elements. */
static __device__ __forceinline__ int64_t ecu_block_base() {
    return (int64_t)blockIdx.x * (ECU_BLOCK * ECU_VEC);
}

template <int NOPS, bool I32>
static __device__ __forceinline__ void ecu_offsets(const ecu_geo& g, int64_t i,
                                                   int64_t (&off)[NOPS]) {
    if (I32)
        ecu_offsets32<NOPS>(g, (uint32_t)i, off);
    else
        ecu_offsets64<NOPS>(g, i, off);
}

/* ------------------------------------------------------------------- unary */

/* Contiguous: every pointer aligned to its vector (the launcher checks), each
 * thread loads ECU_VEC consecutive elements at once; the tail goes one by one. */
template <class F>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_unary_c(int64_t n, typename F::out_t* o, const typename F::in_t* x, ec_params prm) {
    typedef typename F::in_t IT;
    typedef typename F::out_t OT;
    int64_t i = ecu_block_base() + (int64_t)threadIdx.x * ECU_VEC;
    if (i + ECU_VEC <= n) {
        ecu_vec<IT, ECU_VEC> xv = *reinterpret_cast<const ecu_vec<IT, ECU_VEC>*>(x + i);
        ecu_vec<OT, ECU_VEC> ov;
#pragma unroll
        for (int k = 0; k < ECU_VEC; k++) ov.v[k] = F::f(xv.v[k], &prm);
        *reinterpret_cast<ecu_vec<OT, ECU_VEC>*>(o + i) = ov;
    } else {
        for (; i < n; i++) o[i] = F::f(x[i], &prm);
    }
}

template <class F, bool I32>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_unary_s(ecu_geo g, char* o, const char* x, ec_params prm) {
    typedef typename F::in_t IT;
    typedef typename F::out_t OT;
    int64_t i = ecu_block_base() + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ECU_VEC; k++, i += ECU_BLOCK) {
        if (i < g.numel) {
            int64_t off[2];
            ecu_offsets<2, I32>(g, i, off);
            *reinterpret_cast<OT*>(o + off[0]) =
                F::f(*reinterpret_cast<const IT*>(x + off[1]), &prm);
        }
    }
}

/* ------------------------------------------------------------------ binary */

/* A null operand is a scalar: its value comes in sa/sb (Python numbers are
 * kernel arguments, never device memory). */
template <class F>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_binary_c(int64_t n, typename F::out_t* o, const typename F::in_t* a,
                 const typename F::in_t* b, typename F::in_t sa, typename F::in_t sb,
                 ec_params prm) {
    typedef typename F::in_t IT;
    typedef typename F::out_t OT;
    int64_t i = ecu_block_base() + (int64_t)threadIdx.x * ECU_VEC;
    if (i + ECU_VEC <= n) {
        ecu_vec<IT, ECU_VEC> av, bv;
        if (a) {
            av = *reinterpret_cast<const ecu_vec<IT, ECU_VEC>*>(a + i);
        } else {
#pragma unroll
            for (int k = 0; k < ECU_VEC; k++) av.v[k] = sa;
        }
        if (b) {
            bv = *reinterpret_cast<const ecu_vec<IT, ECU_VEC>*>(b + i);
        } else {
#pragma unroll
            for (int k = 0; k < ECU_VEC; k++) bv.v[k] = sb;
        }
        ecu_vec<OT, ECU_VEC> ov;
#pragma unroll
        for (int k = 0; k < ECU_VEC; k++) ov.v[k] = F::f(av.v[k], bv.v[k], &prm);
        *reinterpret_cast<ecu_vec<OT, ECU_VEC>*>(o + i) = ov;
    } else {
        for (; i < n; i++) o[i] = F::f(a ? a[i] : sa, b ? b[i] : sb, &prm);
    }
}

template <class F, bool I32>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_binary_s(ecu_geo g, char* o, const char* a, const char* b, typename F::in_t sa,
                 typename F::in_t sb, ec_params prm) {
    typedef typename F::in_t IT;
    typedef typename F::out_t OT;
    int64_t i = ecu_block_base() + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ECU_VEC; k++, i += ECU_BLOCK) {
        if (i < g.numel) {
            int64_t off[3];
            ecu_offsets<3, I32>(g, i, off);
            IT va = a ? *reinterpret_cast<const IT*>(a + off[1]) : sa;
            IT vb = b ? *reinterpret_cast<const IT*>(b + off[2]) : sb;
            *reinterpret_cast<OT*>(o + off[0]) = F::f(va, vb, &prm);
        }
    }
}

/* ----------------------------------------------------------------- ternary */

/* Ternary ops are strided only: they are rarely on hot paths (where, lerp,
 * addcmul, clamp with tensor bounds), and a 1-d geometry covers the contiguous
 * case at the cost of one division per element.  A's type is uint8 for where. */
template <class F, class AT, class BT, bool I32>
__global__ void __launch_bounds__(ECU_BLOCK)
    ecu_ternary_s(ecu_geo g, char* o, const char* a, const char* b, const char* c,
                  ec_params prm) {
    typedef typename F::out_t OT;
    int64_t i = ecu_block_base() + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ECU_VEC; k++, i += ECU_BLOCK) {
        if (i < g.numel) {
            int64_t off[4];
            ecu_offsets<4, I32>(g, i, off);
            *reinterpret_cast<OT*>(o + off[0]) =
                F::f(*reinterpret_cast<const AT*>(a + off[1]),
                     *reinterpret_cast<const BT*>(b + off[2]),
                     *reinterpret_cast<const BT*>(c + off[3]), &prm);
        }
    }
}

/* -------------------------------------------------------------------- fill */

template <class T>
__global__ void __launch_bounds__(ECU_BLOCK) ecu_fill_c(int64_t n, T* o, T v) {
    int64_t i = ecu_block_base() + (int64_t)threadIdx.x * ECU_VEC;
    if (i + ECU_VEC <= n) {
        ecu_vec<T, ECU_VEC> ov;
#pragma unroll
        for (int k = 0; k < ECU_VEC; k++) ov.v[k] = v;
        *reinterpret_cast<ecu_vec<T, ECU_VEC>*>(o + i) = ov;
    } else {
        for (; i < n; i++) o[i] = v;
    }
}

template <class T, bool I32>
__global__ void __launch_bounds__(ECU_BLOCK) ecu_fill_s(ecu_geo g, char* o, T v) {
    int64_t i = ecu_block_base() + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ECU_VEC; k++, i += ECU_BLOCK) {
        if (i < g.numel) {
            int64_t off[1];
            ecu_offsets<1, I32>(g, i, off);
            *reinterpret_cast<T*>(o + off[0]) = v;
        }
    }
}

#endif
