/* The device-side base of every ember CUDA kernel source (compiled by NVRTC,
 * which has no system headers): fixed-width types, the dtype storage types with
 * their loads and stores (the same EC_LOAD_/EC_STORE_ names the CPU kernels
 * use, so the shared expression lists expand unchanged), ec_params, and the
 * strided-geometry helpers the launchers fill in (cuda/launch.h mirrors them).
 * The op codes, dtype codes and statuses come from ember_codes.h, included
 * after this prelude. */
#ifndef EMBER_CUDA_PRELUDE_CUH
#define EMBER_CUDA_PRELUDE_CUH

/* The shared lists expand every op for every dtype; unused locals and unsigned
 * comparisons with zero are expected there. */
#pragma nv_diag_suppress 177
#pragma nv_diag_suppress 186

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL

/* ------------------------------------------------------------------ dtypes */

typedef uint16_t ec_f16;  /* IEEE half, converted by the hardware */
typedef uint16_t ec_bf16; /* bfloat16, converted by bits exactly as the CPU does */

#ifdef EMBER_CUDA_EMULATION /* the CPU emulator (tensor-core tests/cuda_emu): no PTX */
static __device__ __forceinline__ float ec_h2f(ec_f16 h) { return ember_emu_half_to_float(h); }
static __device__ __forceinline__ ec_f16 ec_f2h(float f) { return ember_emu_float_to_half(f); }
static __device__ __forceinline__ ec_f16 ec_f2h(double d) { return ember_emu_double_to_half(d); }
#else
static __device__ __forceinline__ float ec_h2f(ec_f16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
static __device__ __forceinline__ ec_f16 ec_f2h(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
static __device__ __forceinline__ ec_f16 ec_f2h(double d) {
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    return h;
}
#endif
/* integers round to half directly, as the CPU's conversion does (through
 * double, which holds every integer that does not overflow half anyway) */
template <class I>
static __device__ __forceinline__ ec_f16 ec_f2h(I v) {
    return ec_f2h((double)v);
}
static __device__ __forceinline__ float ec_bf16_to_f32(ec_bf16 h) {
    return __uint_as_float((uint32_t)h << 16);
}
static __device__ __forceinline__ ec_bf16 ec_f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ec_bf16)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (ec_bf16)(u >> 16);
}

/* Float to integer without undefined behaviour, as on the CPU (core.h). */
static __device__ __forceinline__ int64_t ec_f2i64(double v) {
    if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

#define EC_LOAD_b(v) ((int)((v) != 0))
#define EC_STORE_b(x) ((uint8_t)((x) != 0))
#define EC_LOAD_u8(v) (v)
#define EC_STORE_u8(x) ((uint8_t)(x))
#define EC_LOAD_i8(v) (v)
#define EC_STORE_i8(x) ((int8_t)(x))
#define EC_LOAD_i16(v) (v)
#define EC_STORE_i16(x) ((int16_t)(x))
#define EC_LOAD_i32(v) (v)
#define EC_STORE_i32(x) ((int32_t)(x))
#define EC_LOAD_i64(v) (v)
#define EC_STORE_i64(x) ((int64_t)(x))
#define EC_LOAD_f16(v) ec_h2f(v)
#define EC_STORE_f16(x) ec_f2h(x)
#define EC_LOAD_bf16(v) ec_bf16_to_f32(v)
#define EC_STORE_bf16(x) ec_f32_to_bf16((float)(x))
#define EC_LOAD_f32(v) (v)
#define EC_STORE_f32(x) ((float)(x))
#define EC_LOAD_f64(v) (v)
#define EC_STORE_f64(x) ((double)(x))

/* Parameters every elementwise kernel receives (passed by value). */
typedef struct ec_params {
    double p0, p1;
    int64_t i0, i1;
    int status;
} ec_params;

/* --------------------------------------------------------------- geometry */

/* Note [CUDA geometry]: a strided launch passes the iteration space after the
 * launcher dropped size-1 dims and merged contiguous ones: ndim sizes (each with
 * a precomputed divisor for 32-bit index math) and every operand's byte strides,
 * innermost dim last.  The layout must match struct ecu_geo in cuda/launch.h. */
#define ECU_MAX_DIMS 25
#define ECU_MAX_OPERANDS 4

/* n / d for 32-bit n without a division instruction: multiply-high by a magic
 * number and shift (Granlund and Montgomery). */
struct ecu_div {
    uint32_t d, magic, shift, pad;
};

static __device__ __forceinline__ uint32_t ecu_divide(const ecu_div& v, uint32_t n) {
    uint32_t t = __umulhi(n, v.magic);
    return (t + n) >> v.shift;
}

struct ecu_geo {
    int32_t ndim, nops;
    int64_t numel;
    int64_t size[ECU_MAX_DIMS];
    ecu_div div[ECU_MAX_DIMS];
    int64_t stride[ECU_MAX_OPERANDS][ECU_MAX_DIMS]; /* bytes */
};

/* Byte offsets of linear index i (row-major over the geometry) for each operand. */
template <int NOPS>
static __device__ __forceinline__ void ecu_offsets32(const ecu_geo& g, uint32_t i,
                                                     int64_t (&off)[NOPS]) {
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = 0;
    for (int d = g.ndim - 1; d >= 0; d--) {
        uint32_t q = ecu_divide(g.div[d], i);
        uint32_t r = i - q * g.div[d].d;
#pragma unroll
        for (int k = 0; k < NOPS; k++) off[k] += (int64_t)r * g.stride[k][d];
        i = q;
    }
}

template <int NOPS>
static __device__ __forceinline__ void ecu_offsets64(const ecu_geo& g, int64_t i,
                                                     int64_t (&off)[NOPS]) {
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = 0;
    for (int d = g.ndim - 1; d >= 0; d--) {
        int64_t q = i / g.size[d];
        int64_t r = i - q * g.size[d];
#pragma unroll
        for (int k = 0; k < NOPS; k++) off[k] += r * g.stride[k][d];
        i = q;
    }
}

/* Threads per block and elements per thread of the elementwise kernels. */
#define ECU_BLOCK 128
#define ECU_VEC 4

template <typename T, int N>
struct alignas(sizeof(T) * N) ecu_vec {
    T v[N];
};

#endif
