/* The CUDA emulator's device-side prelude: what NVRTC provides to a kernel
 * source without any #include, written for the host compiler (g++), which the
 * emulation compiler (ember_cuda_emu.py) force-includes before every kernel
 * group.  Like NVRTC it includes no system header (so the kernel sources'
 * own fixed-width typedefs stay what they are under NVRTC, and a source that
 * includes a system header fails here too).
 *
 * Threads are the driver's fibers (Note [CUDA emulation] in driver.c):
 * threadIdx & co read the current fiber's record; __syncthreads and the warp
 * collectives call the driver's scheduler; atomics are plain read-modify-write
 * (one fiber runs at a time and never switches inside one); math functions are
 * the C library's (hardware approximations such as __expf are exact here).
 */
#ifndef EMBER_CUDA_EMU_DEVICE_H
#define EMBER_CUDA_EMU_DEVICE_H

#include "ember_cuda_emu.h"

#ifndef EMBER_CUDA_EMULATION
#define EMBER_CUDA_EMULATION 1
#endif

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;

/* ------------------------------------------------------------- qualifiers */

/* Kernels are the only exported symbols of a module (-fvisibility=hidden):
 * their names are the lowered names the driver looks up. */
#define __global__ __attribute__((visibility("default"), used))
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
#define __managed__
#define __grid_constant__
/* __launch_bounds__ is read from the source by the emulation compiler, which
 * gives the driver each kernel's limit (EMBER_EMU_KERNEL in entry.h). */
#define __launch_bounds__(...)
/* static __shared__ variables: function-scope statics, one per module, as
 * blocks run one at a time; the emulation compiler finds them in the symbol
 * table and the driver fills them with 0xff bytes before each block (shared
 * memory starts undefined).  `extern __shared__` arrays are rewritten by the
 * emulation compiler to point at the module's dynamic shared buffer. */
#define __shared__ static
static char ember_emu_dynamic_shared[EMBER_EMU_MAX_DYNAMIC_SHARED] __attribute__((aligned(256)));

/* ------------------------------------------------------------ vector types */

#define EMBER_EMU_VEC(T, N)                                                       \
    struct __attribute__((aligned(sizeof(T) * 2))) N##2 { T x, y; };              \
    struct N##3 { T x, y, z; };                                                   \
    struct __attribute__((aligned(sizeof(T) * 4 > 16 ? 16 : sizeof(T) * 4))) N##4 { \
        T x, y, z, w;                                                             \
    };                                                                            \
    static inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }               \
    static inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }       \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
EMBER_EMU_VEC(char, char)
EMBER_EMU_VEC(unsigned char, uchar)
EMBER_EMU_VEC(short, short)
EMBER_EMU_VEC(unsigned short, ushort)
EMBER_EMU_VEC(int, int)
EMBER_EMU_VEC(unsigned int, uint)
EMBER_EMU_VEC(long, long)
EMBER_EMU_VEC(unsigned long, ulong)
EMBER_EMU_VEC(long long, longlong)
EMBER_EMU_VEC(unsigned long long, ulonglong)
EMBER_EMU_VEC(float, float)
EMBER_EMU_VEC(double, double)
#undef EMBER_EMU_VEC

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* ---------------------------------------------------- threads and blocks */

/* Set by the driver at load (api) and at every switch between threads
 * (current); read through ember_emu_module_info (entry.h). */
static const ember_emu_thread* ember_emu_current;
static const ember_emu_api* ember_emu_api_;

#define threadIdx (*reinterpret_cast<const uint3*>(&ember_emu_current->thread_idx))
#define blockIdx (*reinterpret_cast<const uint3*>(&ember_emu_current->block_idx))
#define blockDim (*reinterpret_cast<const dim3*>(&ember_emu_current->block_dim))
#define gridDim (*reinterpret_cast<const dim3*>(&ember_emu_current->grid_dim))
#define warpSize 32

static inline void __syncthreads() { ember_emu_api_->syncthreads(); }
static inline int __syncthreads_count(int p) {
    return ember_emu_api_->syncthreads_reduce(EMBER_EMU_BLOCK_COUNT, p);
}
static inline int __syncthreads_and(int p) {
    return ember_emu_api_->syncthreads_reduce(EMBER_EMU_BLOCK_AND, p);
}
static inline int __syncthreads_or(int p) {
    return ember_emu_api_->syncthreads_reduce(EMBER_EMU_BLOCK_OR, p);
}
/* One fiber runs at a time: fences order nothing that is not ordered already
 * (but keep the compiler from caching across them, as volatile code expects). */
static inline void __threadfence() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void __nanosleep(unsigned) { ember_emu_api_->yield(); }
[[noreturn]] static inline void __trap() {
    ember_emu_api_->trap("__trap() called");
    __builtin_unreachable();
}
[[noreturn]] static inline void __brkpt() {
    ember_emu_api_->trap("__brkpt() called");
    __builtin_unreachable();
}
static inline long long clock64() { return ember_emu_api_->clock(); }
static inline long clock() { return (long)ember_emu_api_->clock(); }
extern "C" int printf(const char*, ...);

/* --------------------------------------------------------- bit reinterpret */

static inline constexpr float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
static inline constexpr float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
static inline constexpr int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
static inline constexpr unsigned __float_as_uint(float x) {
    return __builtin_bit_cast(unsigned, x);
}
static inline constexpr long long __double_as_longlong(double x) {
    return __builtin_bit_cast(long long, x);
}
static inline constexpr double __longlong_as_double(long long x) {
    return __builtin_bit_cast(double, x);
}
static inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
static inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) |
                                            (unsigned)lo));
}

/* ------------------------------------------------------- float16 (IEEE half)
 * Conversions as the hardware's cvt.rn does them: round to nearest even,
 * directly from the source type (no double rounding from double); NaN becomes
 * the canonical NaN. */
static inline unsigned short ember_emu_double_to_half(double d) {
    unsigned long long u = (unsigned long long)__double_as_longlong(d);
    unsigned short sign = (unsigned short)((u >> 48) & 0x8000u);
    unsigned long long a = u & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) return 0x7fffu; /* NaN */
    if (a >= 0x40effe0000000000ull) return sign | 0x7c00u; /* >= 65520: inf */
    if (a <= 0x3e60000000000000ull) return sign;           /* <= 2^-25: zero */
    int e = (int)(a >> 52) - 1023;
    unsigned long long m = (a & 0xfffffffffffffull) | (1ull << 52);
    int shift = e >= -14 ? 42 : 42 + (-14 - e);
    unsigned long long q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    unsigned long long h = e >= -14 ? ((unsigned long long)(e + 15) << 10) + q - 1024 : q;
    return (unsigned short)(sign | h);
}
static inline unsigned short ember_emu_float_to_half(float f) {
    return ember_emu_double_to_half((double)f); /* float -> double is exact */
}
static inline float ember_emu_half_to_float(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16;
    unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 31) return m ? __uint_as_float(0x7fffffffu) : __uint_as_float(sign | 0x7f800000u);
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-08f; /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

/* -------------------------------------------------------------- math */

extern "C" {
#define EMBER_EMU_MATH1(name)                 \
    double name(double) noexcept;             \
    float name##f(float) noexcept;
#define EMBER_EMU_MATH2(name)                 \
    double name(double, double) noexcept;     \
    float name##f(float, float) noexcept;
EMBER_EMU_MATH1(acos) EMBER_EMU_MATH1(acosh) EMBER_EMU_MATH1(asin) EMBER_EMU_MATH1(asinh)
EMBER_EMU_MATH1(atan) EMBER_EMU_MATH1(atanh) EMBER_EMU_MATH1(cbrt) EMBER_EMU_MATH1(ceil)
EMBER_EMU_MATH1(cos) EMBER_EMU_MATH1(cosh) EMBER_EMU_MATH1(erf) EMBER_EMU_MATH1(erfc)
EMBER_EMU_MATH1(exp) EMBER_EMU_MATH1(exp2) EMBER_EMU_MATH1(exp10) EMBER_EMU_MATH1(expm1)
EMBER_EMU_MATH1(fabs) EMBER_EMU_MATH1(floor) EMBER_EMU_MATH1(lgamma) EMBER_EMU_MATH1(log)
EMBER_EMU_MATH1(log10) EMBER_EMU_MATH1(log1p) EMBER_EMU_MATH1(log2) EMBER_EMU_MATH1(logb)
EMBER_EMU_MATH1(nearbyint) EMBER_EMU_MATH1(rint) EMBER_EMU_MATH1(round) EMBER_EMU_MATH1(sin)
EMBER_EMU_MATH1(sinh) EMBER_EMU_MATH1(sqrt) EMBER_EMU_MATH1(tan) EMBER_EMU_MATH1(tanh)
EMBER_EMU_MATH1(tgamma) EMBER_EMU_MATH1(trunc) EMBER_EMU_MATH1(j0) EMBER_EMU_MATH1(j1)
EMBER_EMU_MATH1(y0) EMBER_EMU_MATH1(y1)
EMBER_EMU_MATH2(atan2) EMBER_EMU_MATH2(copysign) EMBER_EMU_MATH2(fdim) EMBER_EMU_MATH2(fmax)
EMBER_EMU_MATH2(fmin) EMBER_EMU_MATH2(fmod) EMBER_EMU_MATH2(hypot) EMBER_EMU_MATH2(nextafter)
EMBER_EMU_MATH2(pow) EMBER_EMU_MATH2(remainder)
#undef EMBER_EMU_MATH1
#undef EMBER_EMU_MATH2
double fma(double, double, double) noexcept;
float fmaf(float, float, float) noexcept;
double frexp(double, int*) noexcept;
float frexpf(float, int*) noexcept;
double ldexp(double, int) noexcept;
float ldexpf(float, int) noexcept;
double scalbn(double, int) noexcept;
float scalbnf(float, int) noexcept;
int ilogb(double) noexcept;
int ilogbf(float) noexcept;
double modf(double, double*) noexcept;
float modff(float, float*) noexcept;
double remquo(double, double, int*) noexcept;
float remquof(float, float, int*) noexcept;
long long llrint(double) noexcept;
long long llrintf(float) noexcept;
long long llround(double) noexcept;
long long llroundf(float) noexcept;
long lrint(double) noexcept;
long lrintf(float) noexcept;
long lround(double) noexcept;
long lroundf(float) noexcept;
double jn(int, double) noexcept;
float jnf(int, float) noexcept;
double yn(int, double) noexcept;
float ynf(int, float) noexcept;
void sincos(double, double*, double*) noexcept;
void sincosf(float, float*, float*) noexcept;
int abs(int) noexcept;
long labs(long) noexcept;
long long llabs(long long) noexcept;
}

/* The float overloads of the double-named functions (CUDA's C++ math API). */
#define EMBER_EMU_OVL1(name) \
    static inline float name(float x) { return name##f(x); }
#define EMBER_EMU_OVL2(name) \
    static inline float name(float x, float y) { return name##f(x, y); }
EMBER_EMU_OVL1(acos) EMBER_EMU_OVL1(acosh) EMBER_EMU_OVL1(asin) EMBER_EMU_OVL1(asinh)
EMBER_EMU_OVL1(atan) EMBER_EMU_OVL1(atanh) EMBER_EMU_OVL1(cbrt) EMBER_EMU_OVL1(ceil)
EMBER_EMU_OVL1(cos) EMBER_EMU_OVL1(cosh) EMBER_EMU_OVL1(erf) EMBER_EMU_OVL1(erfc)
EMBER_EMU_OVL1(exp) EMBER_EMU_OVL1(exp2) EMBER_EMU_OVL1(exp10) EMBER_EMU_OVL1(expm1)
EMBER_EMU_OVL1(fabs) EMBER_EMU_OVL1(floor) EMBER_EMU_OVL1(lgamma) EMBER_EMU_OVL1(log)
EMBER_EMU_OVL1(log10) EMBER_EMU_OVL1(log1p) EMBER_EMU_OVL1(log2) EMBER_EMU_OVL1(logb)
EMBER_EMU_OVL1(nearbyint) EMBER_EMU_OVL1(rint) EMBER_EMU_OVL1(round) EMBER_EMU_OVL1(sin)
EMBER_EMU_OVL1(sinh) EMBER_EMU_OVL1(sqrt) EMBER_EMU_OVL1(tan) EMBER_EMU_OVL1(tanh)
EMBER_EMU_OVL1(tgamma) EMBER_EMU_OVL1(trunc)
EMBER_EMU_OVL2(atan2) EMBER_EMU_OVL2(copysign) EMBER_EMU_OVL2(fdim) EMBER_EMU_OVL2(fmax)
EMBER_EMU_OVL2(fmin) EMBER_EMU_OVL2(fmod) EMBER_EMU_OVL2(hypot) EMBER_EMU_OVL2(nextafter)
EMBER_EMU_OVL2(pow) EMBER_EMU_OVL2(remainder)
#undef EMBER_EMU_OVL1
#undef EMBER_EMU_OVL2
/* Integer and mixed arguments promote to double, as with <cmath>. */
template <bool B, class T = void> struct ember_emu_enable_if {};
template <class T> struct ember_emu_enable_if<true, T> { typedef T type; };
template <class T> struct ember_emu_is_int { static constexpr bool value = false; };
#define EMBER_EMU_INT(T) \
    template <> struct ember_emu_is_int<T> { static constexpr bool value = true; };
EMBER_EMU_INT(bool) EMBER_EMU_INT(char) EMBER_EMU_INT(signed char) EMBER_EMU_INT(unsigned char)
EMBER_EMU_INT(short) EMBER_EMU_INT(unsigned short) EMBER_EMU_INT(int) EMBER_EMU_INT(unsigned int)
EMBER_EMU_INT(long) EMBER_EMU_INT(unsigned long) EMBER_EMU_INT(long long)
EMBER_EMU_INT(unsigned long long)
#undef EMBER_EMU_INT
template <class T> struct ember_emu_is_arith {
    static constexpr bool value = ember_emu_is_int<T>::value;
};
template <> struct ember_emu_is_arith<float> { static constexpr bool value = true; };
template <> struct ember_emu_is_arith<double> { static constexpr bool value = true; };
template <class A, class B> struct ember_emu_promote { typedef double type; };
template <> struct ember_emu_promote<float, float> { typedef float type; };
#define EMBER_EMU_TPL1(name)                                                              \
    template <class I>                                                                    \
    static inline typename ember_emu_enable_if<ember_emu_is_int<I>::value, double>::type \
    name(I x) {                                                                           \
        return name((double)x);                                                           \
    }
#define EMBER_EMU_TPL2(name)                                                            \
    template <class A, class B>                                                         \
    static inline typename ember_emu_enable_if<                                         \
        ember_emu_is_arith<A>::value && ember_emu_is_arith<B>::value,                   \
        typename ember_emu_promote<A, B>::type>::type                                   \
    name(A a, B b) {                                                                    \
        typedef typename ember_emu_promote<A, B>::type T;                               \
        return name((T)a, (T)b);                                                        \
    }
EMBER_EMU_TPL1(acos) EMBER_EMU_TPL1(acosh) EMBER_EMU_TPL1(asin) EMBER_EMU_TPL1(asinh)
EMBER_EMU_TPL1(atan) EMBER_EMU_TPL1(atanh) EMBER_EMU_TPL1(cbrt) EMBER_EMU_TPL1(ceil)
EMBER_EMU_TPL1(cos) EMBER_EMU_TPL1(cosh) EMBER_EMU_TPL1(erf) EMBER_EMU_TPL1(erfc)
EMBER_EMU_TPL1(exp) EMBER_EMU_TPL1(exp2) EMBER_EMU_TPL1(expm1) EMBER_EMU_TPL1(floor)
EMBER_EMU_TPL1(lgamma) EMBER_EMU_TPL1(log) EMBER_EMU_TPL1(log10) EMBER_EMU_TPL1(log1p)
EMBER_EMU_TPL1(log2) EMBER_EMU_TPL1(sin) EMBER_EMU_TPL1(sinh) EMBER_EMU_TPL1(sqrt)
EMBER_EMU_TPL1(tan) EMBER_EMU_TPL1(tanh) EMBER_EMU_TPL1(tgamma) EMBER_EMU_TPL1(trunc)
EMBER_EMU_TPL1(fabs) EMBER_EMU_TPL1(round) EMBER_EMU_TPL1(rint) EMBER_EMU_TPL1(nearbyint)
EMBER_EMU_TPL2(atan2) EMBER_EMU_TPL2(copysign) EMBER_EMU_TPL2(fdim) EMBER_EMU_TPL2(fmax)
EMBER_EMU_TPL2(fmin) EMBER_EMU_TPL2(fmod) EMBER_EMU_TPL2(hypot) EMBER_EMU_TPL2(nextafter)
EMBER_EMU_TPL2(pow) EMBER_EMU_TPL2(remainder)
#undef EMBER_EMU_TPL1
#undef EMBER_EMU_TPL2
static inline float fma(float x, float y, float z) { return fmaf(x, y, z); }
static inline float frexp(float x, int* e) { return frexpf(x, e); }
static inline float ldexp(float x, int e) { return ldexpf(x, e); }
static inline float scalbn(float x, int e) { return scalbnf(x, e); }
static inline int ilogb(float x) { return ilogbf(x); }
static inline float modf(float x, float* i) { return modff(x, i); }
static inline float pow(float x, int e) { return powf(x, (float)e); }
static inline double pow(double x, int e) { return pow(x, (double)e); }
static inline long abs(long x) { return labs(x); }
static inline long long abs(long long x) { return llabs(x); }
static inline float abs(float x) { return fabsf(x); }
static inline double abs(double x) { return fabs(x); }

static inline bool isnan(float x) { return __builtin_isnan(x); }
static inline bool isnan(double x) { return __builtin_isnan(x); }
static inline bool isinf(float x) { return __builtin_isinf(x); }
static inline bool isinf(double x) { return __builtin_isinf(x); }
static inline bool isfinite(float x) { return __builtin_isfinite(x); }
static inline bool isfinite(double x) { return __builtin_isfinite(x); }
static inline bool signbit(float x) { return __builtin_signbit(x); }
static inline bool signbit(double x) { return __builtin_signbit(x); }
static inline int __isnanf(float x) { return __builtin_isnan(x); }
static inline int __isnan(double x) { return __builtin_isnan(x); }
static inline int __isinff(float x) { return __builtin_isinf(x); }
static inline int __isinf(double x) { return __builtin_isinf(x); }
static inline int __finitef(float x) { return __builtin_isfinite(x); }
static inline int __signbitf(float x) { return __builtin_signbit(x); }

/* CUDA-only functions */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rsqrt(float x) { return rsqrtf(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline double rcbrt(double x) { return 1.0 / cbrt(x); }
static inline double sinpi(double x) { return sin(3.141592653589793238 * x); }
static inline float sinpif(float x) { return (float)sinpi((double)x); }
static inline double cospi(double x) { return cos(3.141592653589793238 * x); }
static inline float cospif(float x) { return (float)cospi((double)x); }
static inline void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
static inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
static inline void sincos(float x, float* s, float* c) { sincosf(x, s, c); }
static inline float fdividef(float x, float y) { return x / y; }
static inline double rhypot(double x, double y) { return 1.0 / hypot(x, y); }
static inline float rhypotf(float x, float y) { return 1.0f / hypotf(x, y); }
static inline double norm3d(double a, double b, double c) { return sqrt(a * a + b * b + c * c); }
static inline float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
static inline double rgamma(double x) { return 1.0 / tgamma(x); }
static inline float rgammaf(float x) { return 1.0f / tgammaf(x); }
static inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752440); }
static inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752440f); }
/* erfinv: a starting point refined by Newton's method on erf (to the last bit
 * of double) */
static inline double erfinv(double y) {
    if (!(y > -1.0 && y < 1.0)) {
        if (y == 1.0) return __longlong_as_double(0x7ff0000000000000ll);
        if (y == -1.0) return -__longlong_as_double(0x7ff0000000000000ll);
        return __longlong_as_double(0x7ff8000000000000ll);
    }
    if (y == 0) return y;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 6.25) {
        w -= 3.125;
        x = -3.6444120640178196996e-21;
        x = -1.685059138182016589e-19 + x * w; x = 1.2858480715256400167e-18 + x * w;
        x = 1.115787767802518096e-17 + x * w; x = -1.333171662854620906e-16 + x * w;
        x = 2.0972767875968561637e-17 + x * w; x = 6.6376381343583238325e-15 + x * w;
        x = -4.0545662729752068639e-14 + x * w; x = -8.1519341976054721522e-14 + x * w;
        x = 2.6335093153082322977e-12 + x * w; x = -1.2975133253453532498e-11 + x * w;
        x = -5.4154120542946279317e-11 + x * w; x = 1.051212273321532285e-09 + x * w;
        x = -4.1126339803469836976e-09 + x * w; x = -2.9070369957882005086e-08 + x * w;
        x = 4.2347877827932403518e-07 + x * w; x = -1.3654692000834678645e-06 + x * w;
        x = -1.3882523362786468719e-05 + x * w; x = 0.0001867342080340571352 + x * w;
        x = -0.00074070253416626697512 + x * w; x = -0.0060336708714301490533 + x * w;
        x = 0.24015818242558961693 + x * w; x = 1.6536545626831027356 + x * w;
    } else if (w < 16.0) {
        w = sqrt(w) - 3.25;
        x = 2.2137376921775787049e-09;
        x = 9.0756561938885390979e-08 + x * w; x = -2.7517406297064545428e-07 + x * w;
        x = 1.8239629214389227755e-08 + x * w; x = 1.5027403968909827627e-06 + x * w;
        x = -4.013867526981545969e-06 + x * w; x = 2.9234449089955446044e-06 + x * w;
        x = 1.2475304481671778723e-05 + x * w; x = -4.7318229009055733981e-05 + x * w;
        x = 6.8284851459573175448e-05 + x * w; x = 2.4031110387097893999e-05 + x * w;
        x = -0.0003550375203628474796 + x * w; x = 0.00095328937973738049703 + x * w;
        x = -0.0016882755560235047313 + x * w; x = 0.0024914420961078508066 + x * w;
        x = -0.0037512085075692412107 + x * w; x = 0.005370914553590063617 + x * w;
        x = 1.0052589676941592334 + x * w; x = 3.0838856104922207635 + x * w;
    } else {
        w = sqrt(w) - 5.0;
        x = -2.7109920616438573243e-11;
        x = -2.5556418169965252055e-10 + x * w; x = 1.5076572693500548083e-09 + x * w;
        x = -3.7894654401267369937e-09 + x * w; x = 7.6157012080783393804e-09 + x * w;
        x = -1.4960026627149240478e-08 + x * w; x = 2.9147953450901080826e-08 + x * w;
        x = -6.7711997758452339498e-08 + x * w; x = 2.2900482228026654717e-07 + x * w;
        x = -9.9298272942317002539e-07 + x * w; x = 4.5260625972231537039e-06 + x * w;
        x = -1.9681778105531670567e-05 + x * w; x = 7.5995277030017761139e-05 + x * w;
        x = -0.00021503011930044477347 + x * w; x = -0.00013871931833623122026 + x * w;
        x = 1.0103004648645343977 + x * w; x = 4.8499064014085844221 + x * w;
    }
    x *= y;
    for (int i = 0; i < 2; i++) /* Newton: erf'(x) = 2/sqrt(pi) exp(-x^2) */
        x -= (erf(x) - y) / (1.1283791670955125739 * exp(-x * x));
    return x;
}
static inline float erfinvf(float y) { return (float)erfinv((double)y); }
static inline double erfcinv(double y) { return erfinv(1.0 - y); }
static inline float erfcinvf(float y) { return (float)erfcinv((double)y); }
static inline double normcdfinv(double p) { return -1.41421356237309504880 * erfcinv(2.0 * p); }
static inline float normcdfinvf(float p) { return (float)normcdfinv((double)p); }
static inline double cyl_bessel_i0(double x) {
    double s = 1.0, t = 1.0, q = x * x / 4.0; /* the power series */
    for (int k = 1; k < 500 && t > s * 1e-17; k++) { t *= q / ((double)k * k); s += t; }
    return s;
}
static inline float cyl_bessel_i0f(float x) { return (float)cyl_bessel_i0(x); }
static inline double cyl_bessel_i1(double x) {
    double t = x / 2.0, s = t, q = x * x / 4.0;
    for (int k = 1; k < 500 && fabs(t) > fabs(s) * 1e-17; k++) {
        t *= q / ((double)k * (k + 1));
        s += t;
    }
    return s;
}
static inline float cyl_bessel_i1f(float x) { return (float)cyl_bessel_i1(x); }
static inline float j0(float x) { return (float)j0((double)x); }

/* the intrinsics: the hardware's approximations are exact here */
static inline float __expf(float x) { return expf(x); }
static inline float __exp10f(float x) { return exp10f(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __log2f(float x) { return log2f(x); }
static inline float __log10f(float x) { return log10f(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __tanf(float x) { return tanf(x); }
static inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
static inline float __powf(float x, float y) { return powf(x, y); }
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline double __drcp_rn(double x) { return 1.0 / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline double __dsqrt_rn(double x) { return sqrt(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float __fadd_rn(float x, float y) { return x + y; }
static inline float __fsub_rn(float x, float y) { return x - y; }
static inline float __fmul_rn(float x, float y) { return x * y; }
static inline float __fdiv_rn(float x, float y) { return x / y; }
static inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
static inline double __dadd_rn(double x, double y) { return x + y; }
static inline double __dsub_rn(double x, double y) { return x - y; }
static inline double __dmul_rn(double x, double y) { return x * y; }
static inline double __ddiv_rn(double x, double y) { return x / y; }
static inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }
static inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }

/* float -> integer as the hardware converts: saturating, NaN -> 0 */
#define EMBER_EMU_F2I(name, F, I, lo, hi, ROUND)                              \
    static inline I name(F x) {                                               \
        if (x != x) return 0;                                                 \
        F r = ROUND(x);                                                       \
        if (r <= (F)(lo)) return (I)(lo);                                     \
        if (r >= (F)(hi)) return (I)(hi);                                     \
        return (I)r;                                                          \
    }
#define EMBER_EMU_LL_LO -9223372036854775808.0
#define EMBER_EMU_LL_HI 9223372036854775807.0
#define EMBER_EMU_F2I_ALL(F, sfx, RN, RZ, RU, RD)                                              \
    EMBER_EMU_F2I(__##sfx##2int_rn, F, int, -2147483648.0, 2147483647.0, RN)                   \
    EMBER_EMU_F2I(__##sfx##2int_rz, F, int, -2147483648.0, 2147483647.0, RZ)                   \
    EMBER_EMU_F2I(__##sfx##2int_ru, F, int, -2147483648.0, 2147483647.0, RU)                   \
    EMBER_EMU_F2I(__##sfx##2int_rd, F, int, -2147483648.0, 2147483647.0, RD)                   \
    EMBER_EMU_F2I(__##sfx##2uint_rn, F, unsigned, 0.0, 4294967295.0, RN)                        \
    EMBER_EMU_F2I(__##sfx##2uint_rz, F, unsigned, 0.0, 4294967295.0, RZ)                        \
    EMBER_EMU_F2I(__##sfx##2uint_ru, F, unsigned, 0.0, 4294967295.0, RU)                        \
    EMBER_EMU_F2I(__##sfx##2uint_rd, F, unsigned, 0.0, 4294967295.0, RD)                        \
    EMBER_EMU_F2I(__##sfx##2ll_rn, F, long long, EMBER_EMU_LL_LO, EMBER_EMU_LL_HI, RN)    \
    EMBER_EMU_F2I(__##sfx##2ll_rz, F, long long, EMBER_EMU_LL_LO, EMBER_EMU_LL_HI, RZ)    \
    EMBER_EMU_F2I(__##sfx##2ll_ru, F, long long, EMBER_EMU_LL_LO, EMBER_EMU_LL_HI, RU)    \
    EMBER_EMU_F2I(__##sfx##2ll_rd, F, long long, EMBER_EMU_LL_LO, EMBER_EMU_LL_HI, RD)    \
    EMBER_EMU_F2I(__##sfx##2ull_rn, F, unsigned long long, 0.0, 18446744073709551615.0, RN)   \
    EMBER_EMU_F2I(__##sfx##2ull_rz, F, unsigned long long, 0.0, 18446744073709551615.0, RZ)   \
    EMBER_EMU_F2I(__##sfx##2ull_ru, F, unsigned long long, 0.0, 18446744073709551615.0, RU)   \
    EMBER_EMU_F2I(__##sfx##2ull_rd, F, unsigned long long, 0.0, 18446744073709551615.0, RD)
EMBER_EMU_F2I_ALL(float, float, nearbyintf, truncf, ceilf, floorf)
EMBER_EMU_F2I_ALL(double, double, nearbyint, trunc, ceil, floor)
#undef EMBER_EMU_F2I_ALL
#undef EMBER_EMU_F2I
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline float __ull2float_rn(unsigned long long x) { return (float)x; }
static inline double __int2double_rn(int x) { return (double)x; }
static inline double __ll2double_rn(long long x) { return (double)x; }
static inline float __double2float_rn(double x) { return (float)x; }

/* min and max: CUDA's overload set (so calls resolve, or fail, as under NVRTC) */
#define EMBER_EMU_MINMAX(A, B, R)                                         \
    static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \
    static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
EMBER_EMU_MINMAX(int, int, int)
EMBER_EMU_MINMAX(unsigned int, unsigned int, unsigned int)
EMBER_EMU_MINMAX(int, unsigned int, unsigned int)
EMBER_EMU_MINMAX(unsigned int, int, unsigned int)
EMBER_EMU_MINMAX(long, long, long)
EMBER_EMU_MINMAX(unsigned long, unsigned long, unsigned long)
EMBER_EMU_MINMAX(long, unsigned long, unsigned long)
EMBER_EMU_MINMAX(unsigned long, long, unsigned long)
EMBER_EMU_MINMAX(long long, long long, long long)
EMBER_EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
EMBER_EMU_MINMAX(long long, unsigned long long, unsigned long long)
EMBER_EMU_MINMAX(unsigned long long, long long, unsigned long long)
#undef EMBER_EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline double min(float a, double b) { return fmin((double)a, b); }
static inline double max(float a, double b) { return fmax((double)a, b); }
static inline double min(double a, float b) { return fmin(a, (double)b); }
static inline double max(double a, float b) { return fmax(a, (double)b); }
static inline int umin(unsigned a, unsigned b) { return (int)min(a, b); }
static inline long long llmin(long long a, long long b) { return min(a, b); }
static inline long long llmax(long long a, long long b) { return max(a, b); }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) {
    return min(a, b);
}
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) {
    return max(a, b);
}

/* ---------------------------------------------------------- integer intrinsics */

static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b) {
    return (long long)(((__int128)a * b) >> 64);
}
static inline int __mul24(int a, int b) {
    return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8));
}
static inline unsigned __umul24(unsigned a, unsigned b) {
    return (a & 0xffffffu) * (b & 0xffffffu);
}
static inline unsigned __sad(int x, int y, unsigned z) {
    return (x > y ? (unsigned)x - (unsigned)y : (unsigned)y - (unsigned)x) + z;
}
static inline unsigned __usad(unsigned x, unsigned y, unsigned z) {
    return (x > y ? x - y : y - x) + z;
}
static inline int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
static inline int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
static inline unsigned __uhadd(unsigned x, unsigned y) {
    return (unsigned)(((unsigned long long)x + y) >> 1);
}
static inline unsigned __urhadd(unsigned x, unsigned y) {
    return (unsigned)(((unsigned long long)x + y + 1) >> 1);
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++)
        r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << (s & 31)) >> 32);
}
static inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
    s = s > 32 ? 32 : s;
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << s) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> (s & 31));
}
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
    s = s > 32 ? 32 : s;
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> s);
}

/* ------------------------------------------------------------ loads, stores */

template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T __ldcg(const T* p) { return *p; }
template <class T> static inline T __ldca(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline T __ldlu(const T* p) { return *p; }
template <class T> static inline T __ldcv(const T* p) { return *p; }
template <class T> static inline void __stwb(T* p, T v) { *p = v; }
template <class T> static inline void __stcg(T* p, T v) { *p = v; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
template <class T> static inline void __stwt(T* p, T v) { *p = v; }

/* ---------------------------------------------------------------- atomics
 * Plain read-modify-write: one emulated thread runs at a time and never
 * switches inside an atomic.  CAS and exchange (the bricks of spin locks) let
 * the other threads run afterwards, so a lock held by another thread of the
 * block is eventually released.  CUDA's overload set. */
#define EMBER_EMU_ATOMIC(name, T, EXPR)                        \
    static inline T name(T* p, T v) {                          \
        T old = *p;                                            \
        *p = (EXPR);                                           \
        return old;                                            \
    }                                                          \
    static inline T name##_block(T* p, T v) { return name(p, v); } \
    static inline T name##_system(T* p, T v) { return name(p, v); }
EMBER_EMU_ATOMIC(atomicAdd, int, old + v)
EMBER_EMU_ATOMIC(atomicAdd, unsigned int, old + v)
EMBER_EMU_ATOMIC(atomicAdd, unsigned long long, old + v)
EMBER_EMU_ATOMIC(atomicAdd, float, old + v)
EMBER_EMU_ATOMIC(atomicAdd, double, old + v)
EMBER_EMU_ATOMIC(atomicSub, int, old - v)
EMBER_EMU_ATOMIC(atomicSub, unsigned int, old - v)
EMBER_EMU_ATOMIC(atomicMin, int, v < old ? v : old)
EMBER_EMU_ATOMIC(atomicMin, unsigned int, v < old ? v : old)
EMBER_EMU_ATOMIC(atomicMin, long long, v < old ? v : old)
EMBER_EMU_ATOMIC(atomicMin, unsigned long long, v < old ? v : old)
EMBER_EMU_ATOMIC(atomicMax, int, v > old ? v : old)
EMBER_EMU_ATOMIC(atomicMax, unsigned int, v > old ? v : old)
EMBER_EMU_ATOMIC(atomicMax, long long, v > old ? v : old)
EMBER_EMU_ATOMIC(atomicMax, unsigned long long, v > old ? v : old)
EMBER_EMU_ATOMIC(atomicAnd, int, old & v)
EMBER_EMU_ATOMIC(atomicAnd, unsigned int, old & v)
EMBER_EMU_ATOMIC(atomicAnd, unsigned long long, old & v)
EMBER_EMU_ATOMIC(atomicOr, int, old | v)
EMBER_EMU_ATOMIC(atomicOr, unsigned int, old | v)
EMBER_EMU_ATOMIC(atomicOr, unsigned long long, old | v)
EMBER_EMU_ATOMIC(atomicXor, int, old ^ v)
EMBER_EMU_ATOMIC(atomicXor, unsigned int, old ^ v)
EMBER_EMU_ATOMIC(atomicXor, unsigned long long, old ^ v)
EMBER_EMU_ATOMIC(atomicInc, unsigned int, old >= v ? 0u : old + 1u)
EMBER_EMU_ATOMIC(atomicDec, unsigned int, (old == 0u || old > v) ? v : old - 1u)
#undef EMBER_EMU_ATOMIC
#define EMBER_EMU_ATOMIC_YIELD(name, T, ...)                   \
    static inline T name(T* p, __VA_ARGS__) {                  \
        T old = *p;                                            \
        *p = EMBER_EMU_NEW;                                    \
        ember_emu_api_->yield();                               \
        return old;                                            \
    }
#define EMBER_EMU_NEW v
EMBER_EMU_ATOMIC_YIELD(atomicExch, int, int v)
EMBER_EMU_ATOMIC_YIELD(atomicExch, unsigned int, unsigned int v)
EMBER_EMU_ATOMIC_YIELD(atomicExch, unsigned long long, unsigned long long v)
EMBER_EMU_ATOMIC_YIELD(atomicExch, float, float v)
#undef EMBER_EMU_NEW
#define EMBER_EMU_NEW (old == c ? v : old)
EMBER_EMU_ATOMIC_YIELD(atomicCAS, int, int c, int v)
EMBER_EMU_ATOMIC_YIELD(atomicCAS, unsigned int, unsigned int c, unsigned int v)
EMBER_EMU_ATOMIC_YIELD(atomicCAS, unsigned long long, unsigned long long c, unsigned long long v)
EMBER_EMU_ATOMIC_YIELD(atomicCAS, unsigned short, unsigned short c, unsigned short v)
#undef EMBER_EMU_NEW
#undef EMBER_EMU_ATOMIC_YIELD
#define EMBER_EMU_ATOMIC_ALIAS(name, T, ...)                                      \
    static inline T name##_block(T* p, __VA_ARGS__) { return name(p, ARGS); }   \
    static inline T name##_system(T* p, __VA_ARGS__) { return name(p, ARGS); }
#define ARGS v
EMBER_EMU_ATOMIC_ALIAS(atomicExch, int, int v)
EMBER_EMU_ATOMIC_ALIAS(atomicExch, unsigned int, unsigned int v)
EMBER_EMU_ATOMIC_ALIAS(atomicExch, unsigned long long, unsigned long long v)
EMBER_EMU_ATOMIC_ALIAS(atomicExch, float, float v)
#undef ARGS
#define ARGS c, v
EMBER_EMU_ATOMIC_ALIAS(atomicCAS, int, int c, int v)
EMBER_EMU_ATOMIC_ALIAS(atomicCAS, unsigned int, unsigned int c, unsigned int v)
EMBER_EMU_ATOMIC_ALIAS(atomicCAS, unsigned long long, unsigned long long c, unsigned long long v)
#undef ARGS
#undef EMBER_EMU_ATOMIC_ALIAS

/* ------------------------------------------------------- warp collectives */

static inline unsigned __activemask() { return ember_emu_api_->activemask(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    unsigned long long out[32];
    ember_emu_api_->warp_collective(mask, EMBER_EMU_WARP_SYNC, 0, out);
}
static inline unsigned __ballot_sync(unsigned mask, int pred) {
    unsigned long long out[32];
    ember_emu_api_->warp_collective(mask, EMBER_EMU_WARP_VOTE, pred != 0, out);
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= (out[i] ? 1u : 0u) << i;
    return r & mask;
}
static inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
static inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }
static inline int __uni_sync(unsigned mask, int pred) {
    unsigned b = __ballot_sync(mask, pred);
    return b == 0 || b == mask;
}

template <class T>
static inline unsigned long long ember_emu_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp collectives move at most 8 bytes");
    unsigned long long u = 0;
    __builtin_memcpy(&u, &v, sizeof(T));
    return u;
}
template <class T>
static inline T ember_emu_from_bits(unsigned long long u) {
    T v;
    __builtin_memcpy(&v, &u, sizeof(T));
    return v;
}

/* shfl.sync as PTX defines it: lanes are split into segments of `width`;
 * a source lane past the segment's end (or before its start, for up) reads
 * the caller's own value. */
enum { EMBER_EMU_SHFL_IDX, EMBER_EMU_SHFL_UP, EMBER_EMU_SHFL_DOWN, EMBER_EMU_SHFL_BFLY };
template <class T>
static inline T ember_emu_shfl(unsigned mask, T var, int b, int width, int mode) {
    unsigned long long out[32];
    ember_emu_api_->warp_collective(mask, EMBER_EMU_WARP_SHFL, ember_emu_bits(var), out);
    int lane = (int)ember_emu_current->lane;
    if (width <= 0 || width > 32 || (width & (width - 1)))
        ember_emu_api_->trap("__shfl*_sync: width must be a power of 2 in [1, 32]");
    int seg = lane & ~(width - 1), last = seg + width - 1, j;
    bool ok;
    switch (mode) {
        case EMBER_EMU_SHFL_UP: j = lane - b; ok = j >= seg; break;
        case EMBER_EMU_SHFL_DOWN: j = lane + b; ok = j <= last; break;
        case EMBER_EMU_SHFL_BFLY: j = lane ^ (b & 31); ok = j <= last; break;
        default: j = seg + (b & (width - 1)); ok = true; break;
    }
    if (!ok) j = lane;
    if (!((mask >> j) & 1u))
        ember_emu_api_->trap("__shfl*_sync: the source lane is not in the mask (undefined value)");
    return ember_emu_from_bits<T>(out[j]);
}
template <class T> static inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
    return ember_emu_shfl(mask, var, src, width, EMBER_EMU_SHFL_IDX);
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T var, unsigned d, int width = 32) {
    return ember_emu_shfl(mask, var, (int)d, width, EMBER_EMU_SHFL_UP);
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T var, unsigned d, int width = 32) {
    return ember_emu_shfl(mask, var, (int)d, width, EMBER_EMU_SHFL_DOWN);
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T var, int m, int width = 32) {
    return ember_emu_shfl(mask, var, m, width, EMBER_EMU_SHFL_BFLY);
}

template <class T> static inline unsigned __match_any_sync(unsigned mask, T value) {
    unsigned long long out[32], v = ember_emu_bits(value);
    ember_emu_api_->warp_collective(mask, EMBER_EMU_WARP_MATCH, v, out);
    unsigned r = 0;
    for (int i = 0; i < 32; i++)
        if (((mask >> i) & 1u) && out[i] == v) r |= 1u << i;
    return r;
}
template <class T> static inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {
    unsigned long long out[32], v = ember_emu_bits(value);
    ember_emu_api_->warp_collective(mask, EMBER_EMU_WARP_MATCH, v, out);
    for (int i = 0; i < 32; i++)
        if (((mask >> i) & 1u) && out[i] != v) {
            *pred = 0;
            return 0;
        }
    *pred = 1;
    return mask;
}

#define EMBER_EMU_REDUCE(name, T, INIT, OP)                                    \
    static inline T name(unsigned mask, T value) {                             \
        unsigned long long out[32];                                            \
        ember_emu_api_->warp_collective(mask, EMBER_EMU_WARP_REDUCE,           \
                                        ember_emu_bits(value), out);           \
        T r = INIT;                                                            \
        for (int i = 0; i < 32; i++)                                           \
            if ((mask >> i) & 1u) {                                            \
                T x = ember_emu_from_bits<T>(out[i]);                          \
                r = OP;                                                        \
            }                                                                  \
        return r;                                                              \
    }
EMBER_EMU_REDUCE(__reduce_add_sync, unsigned, 0u, r + x)
EMBER_EMU_REDUCE(__reduce_add_sync, int, 0, (int)((unsigned)r + (unsigned)x))
EMBER_EMU_REDUCE(__reduce_min_sync, unsigned, 0xffffffffu, x < r ? x : r)
EMBER_EMU_REDUCE(__reduce_min_sync, int, 0x7fffffff, x < r ? x : r)
EMBER_EMU_REDUCE(__reduce_max_sync, unsigned, 0u, x > r ? x : r)
EMBER_EMU_REDUCE(__reduce_max_sync, int, (int)0x80000000, x > r ? x : r)
EMBER_EMU_REDUCE(__reduce_and_sync, unsigned, 0xffffffffu, r & x)
EMBER_EMU_REDUCE(__reduce_or_sync, unsigned, 0u, r | x)
EMBER_EMU_REDUCE(__reduce_xor_sync, unsigned, 0u, r ^ x)
#undef EMBER_EMU_REDUCE

#endif
