/* Copy with dtype conversion (every pair of dtypes) and fill. */
#include "core.h"
#include "elementwise_ops.h"

#define DEFINE_CAST(DC, ds, DT, DCT, DK, SC, ss, ST, SCT, SK)                               \
    static void cast_##ds##_##ss(int64_t n, char** p, const int64_t* s, ec_params* prm) {   \
        (void)prm;                                                                          \
        if (s[0] == sizeof(DT) && s[1] == sizeof(ST)) {                                     \
            DT* restrict o = (DT*)p[0];                                                     \
            const ST* restrict a = (const ST*)p[1];                                         \
            for (int64_t i = 0; i < n; i++) o[i] = EC_STORE_##ds(EC_CONV_##DK##_##SK(EC_LOAD_##ss(a[i]))); \
        } else {                                                                            \
            char* o = p[0];                                                                 \
            const char* a = p[1];                                                           \
            for (int64_t i = 0; i < n; i++)                                                 \
                *(DT*)(o + i * s[0]) =                                                      \
                    EC_STORE_##ds(EC_CONV_##DK##_##SK(EC_LOAD_##ss(*(const ST*)(a + i * s[1])))); \
        }                                                                                   \
    }


/* Conversions to and from the complex kind (CPU only, Note [CPU-only dtypes]):
 * a complex value becomes real by dropping its imaginary part (PyTorch's cast),
 * bool by comparing both parts with zero. */
#define EC_CONV_C_C(v) (v)
#define EC_CONV_C_F(v) (v)
#define EC_CONV_C_I(v) (v)
#define EC_CONV_C_B(v) (v)
#define EC_CONV_F_C(v) creal(v)
#define EC_CONV_I_C(v) ec_f2i64(creal(v))
#define EC_CONV_B_C(v) ((v) != 0)

/* Expand every (dst, src) pair over the CPU's dtypes. */
#define DEFINE_CASTS_TO(DC, ds, DT, DCT, DK)                                                \
    EC_CPU_DTYPES_WITH(DEFINE_CAST, DC, ds, DT, DCT, DK)

/* EC_CPU_DTYPES with the destination's arguments prepended */
#define EC_CPU_DTYPES_WITH(M, D1, D2, D3, D4, D5)                                                \
    M(D1, D2, D3, D4, D5, EC_BOOL, b, uint8_t, int, B)                                           \
    M(D1, D2, D3, D4, D5, EC_UINT8, u8, uint8_t, uint8_t, I)                                     \
    M(D1, D2, D3, D4, D5, EC_INT8, i8, int8_t, int8_t, I)                                        \
    M(D1, D2, D3, D4, D5, EC_INT16, i16, int16_t, int16_t, I)                                    \
    M(D1, D2, D3, D4, D5, EC_INT32, i32, int32_t, int32_t, I)                                    \
    M(D1, D2, D3, D4, D5, EC_INT64, i64, int64_t, int64_t, I)                                    \
    M(D1, D2, D3, D4, D5, EC_FLOAT16, f16, ec_f16, float, F)                                     \
    M(D1, D2, D3, D4, D5, EC_BFLOAT16, bf16, ec_bf16, float, F)                                  \
    M(D1, D2, D3, D4, D5, EC_FLOAT32, f32, float, float, F)                                      \
    M(D1, D2, D3, D4, D5, EC_FLOAT64, f64, double, double, F)                                    \
    M(D1, D2, D3, D4, D5, EC_UINT16, u16, uint16_t, uint16_t, I)                                 \
    M(D1, D2, D3, D4, D5, EC_UINT32, u32, uint32_t, uint32_t, I)                                 \
    M(D1, D2, D3, D4, D5, EC_UINT64, u64, uint64_t, uint64_t, I)                                 \
    M(D1, D2, D3, D4, D5, EC_COMPLEX64, c64, ec_c64, ec_c64, C)                                  \
    M(D1, D2, D3, D4, D5, EC_COMPLEX128, c128, ec_c128, ec_c128, C)

EC_CPU_DTYPES(DEFINE_CASTS_TO)

#define CAST_CELL(DC, ds, DT, DCT, DK, SC, ss, ST, SCT, SK) [SC] = cast_##ds##_##ss,
#define CAST_ENTRY(DC, ds, DT, DCT, DK) [DC] = {EC_CPU_DTYPES_WITH(CAST_CELL, DC, ds, DT, DCT, DK)},

static const ec_loop cast_table[EC_NUM_DTYPES][EC_NUM_DTYPES] = {EC_CPU_DTYPES(CAST_ENTRY)};

int ec_copy(int ndim, const int64_t* layout, ec_ptr dst_addr, int dst_dtype, ec_ptr src_addr,
            int src_dtype) {
    void* dst = (void*)dst_addr;
    const void* src = (const void*)src_addr;
    if (!ec_valid_dtype(dst_dtype) || !ec_valid_dtype(src_dtype))
        return ec_fail(EC_ERR_DTYPE, "copy: bad dtype code %d/%d", dst_dtype, src_dtype);
    int sizes[2] = {ec_itemsize[dst_dtype], ec_itemsize[src_dtype]};
    char* base[2] = {(char*)dst, (char*)src};
    ec_params p = {0};
    return ec_iterate(2, ndim, layout, sizes, base, cast_table[dst_dtype][src_dtype], &p);
}

int ec_copy_contig(int64_t n, ec_ptr dst_addr, int dst_dtype, ec_ptr src_addr, int src_dtype) {
    void* dst = (void*)dst_addr;
    const void* src = (const void*)src_addr;
    if (dst_dtype == src_dtype && ec_valid_dtype(dst_dtype)) {
        size_t bytes = (size_t)n * (size_t)ec_itemsize[dst_dtype];
        if (bytes < (1u << 20)) {
            memmove(dst, src, bytes);
            return EC_OK;
        }
    }
    int64_t layout[3] = {n, 1, 1};
    return ec_copy(1, layout, (ec_ptr)dst, dst_dtype, (ec_ptr)src, src_dtype);
}

/* ------------------------------------------------------------------- fill */

#define DEFINE_FILL(DC, sfx, T, C, K)                                                \
    static void fill_##sfx(int64_t n, char** p, const int64_t* s, ec_params* prm) {   \
        T v = EC_FILL_VALUE_##K(sfx, prm);                                             \
        if (s[0] == sizeof(T)) {                                                       \
            T* restrict o = (T*)p[0];                                                  \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                  \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++) *(T*)(p[0] + i * s[0]) = v;               \
        }                                                                              \
    }
#define EC_FILL_VALUE_B(sfx, prm) EC_STORE_##sfx((prm)->i0)
#define EC_FILL_VALUE_I(sfx, prm) EC_STORE_##sfx((prm)->i0)
#define EC_FILL_VALUE_F(sfx, prm) EC_STORE_##sfx((prm)->p0)
#define EC_FILL_VALUE_C(sfx, prm) EC_STORE_##sfx(CMPLX((prm)->p0, (prm)->p1))

EC_CPU_DTYPES(DEFINE_FILL)

#define FILL_ENTRY(DC, sfx, T, C, K) [DC] = fill_##sfx,
static const ec_loop fill_table[EC_NUM_DTYPES] = {EC_CPU_DTYPES(FILL_ENTRY)};

int ec_fill(int ndim, const int64_t* layout, ec_ptr dst_addr, int dtype, double value, int64_t ivalue) {
    void* dst = (void*)dst_addr;
    if (!ec_valid_dtype(dtype)) return ec_fail(EC_ERR_DTYPE, "fill: bad dtype code %d", dtype);
    int sizes[1] = {ec_itemsize[dtype]};
    char* base[1] = {(char*)dst};
    ec_params p = {0};
    p.p0 = value;
    p.i0 = ivalue;
    return ec_iterate(1, ndim, layout, sizes, base, fill_table[dtype], &p);
}

int ec_fill_complex(int ndim, const int64_t* layout, ec_ptr dst_addr, int dtype, double re, double im) {
    if (!ec_is_complex(dtype)) return ec_fail(EC_ERR_DTYPE, "fill_complex: dtype code %d is not complex", dtype);
    int sizes[1] = {ec_itemsize[dtype]};
    char* base[1] = {(char*)dst_addr};
    ec_params p = {0};
    p.p0 = re;
    p.p1 = im;
    return ec_iterate(1, ndim, layout, sizes, base, fill_table[dtype], &p);
}
