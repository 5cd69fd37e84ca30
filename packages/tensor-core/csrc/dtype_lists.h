/* The dtypes as X-macro lists, shared by the CPU kernels and the CUDA kernel
 * sources (where ec_f16/ec_bf16 are the device's 16-bit storage types). */
#ifndef EMBER_DTYPE_LISTS_H
#define EMBER_DTYPE_LISTS_H

/* X(CODE, sfx, T, C, K): dtype code, suffix, storage type, compute type and
 * kind (B bool, I integer, F floating). */
#define EC_FLOAT_DTYPES(X)                   \
    X(EC_FLOAT16, f16, ec_f16, float, F)     \
    X(EC_BFLOAT16, bf16, ec_bf16, float, F)  \
    X(EC_FLOAT32, f32, float, float, F)      \
    X(EC_FLOAT64, f64, double, double, F)

#define EC_INT_DTYPES(X)                     \
    X(EC_UINT8, u8, uint8_t, uint8_t, I)     \
    X(EC_INT8, i8, int8_t, int8_t, I)        \
    X(EC_INT16, i16, int16_t, int16_t, I)    \
    X(EC_INT32, i32, int32_t, int32_t, I)    \
    X(EC_INT64, i64, int64_t, int64_t, I)

#define EC_BOOL_DTYPE(X) X(EC_BOOL, b, uint8_t, int, B)

#define EC_ALL_DTYPES(X) EC_BOOL_DTYPE(X) EC_INT_DTYPES(X) EC_FLOAT_DTYPES(X)
#define EC_NUMERIC_DTYPES(X) EC_INT_DTYPES(X) EC_FLOAT_DTYPES(X)

#endif
