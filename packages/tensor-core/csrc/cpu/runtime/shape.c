/* Kernels that are neither elementwise nor reductions: triangles, sequences. */
#include "core.h"

int ec_triangle(int dtype, int ndim, const int64_t* layout, ec_ptr out_addr, ec_ptr x_addr,
                int64_t diagonal, int upper) {
    void* out = (void*)out_addr;
    const void* x = (const void*)x_addr;
    if (!ec_valid_dtype(dtype) || ndim < 2 || ndim > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "triangle: bad arguments");
    const int64_t* shape = layout;
    const int64_t* ost = layout + ndim;
    const int64_t* ist = layout + 2 * ndim;
    int isz = ec_itemsize[dtype];
    int64_t rows = shape[ndim - 2], cols = shape[ndim - 1];
    int64_t batch = 1;
    for (int k = 0; k < ndim - 2; k++) batch *= shape[k];
    if (batch == 0 || rows == 0 || cols == 0) return EC_OK;
    int nt = ec_threads_for(batch * rows * cols, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t br = 0; br < batch * rows; br++) {
        int64_t b = br / rows, i = br % rows;
        int64_t oo = 0, io = 0, rem = b;
        for (int k = ndim - 3; k >= 0; k--) {
            int64_t v = rem % shape[k];
            rem /= shape[k];
            oo += v * ost[k];
            io += v * ist[k];
        }
        char* orow = (char*)out + (oo + i * ost[ndim - 2]) * isz;
        const char* irow = (const char*)x + (io + i * ist[ndim - 2]) * isz;
        for (int64_t j = 0; j < cols; j++) {
            int keep = upper ? (j - i >= diagonal) : (j - i <= diagonal);
            char* po = orow + j * ost[ndim - 1] * isz;
            if (keep) memmove(po, irow + j * ist[ndim - 1] * isz, (size_t)isz);
            else memset(po, 0, (size_t)isz);
        }
    }
    return EC_OK;
}

static void store_seq(int dtype, char* out, int64_t i, double v, int64_t iv, int use_int) {
    switch (dtype) {
        case EC_BOOL: ((uint8_t*)out)[i] = use_int ? iv != 0 : v != 0; break;
        case EC_UINT8: ((uint8_t*)out)[i] = (uint8_t)(use_int ? iv : ec_f2i64(v)); break;
        case EC_INT8: ((int8_t*)out)[i] = (int8_t)(use_int ? iv : ec_f2i64(v)); break;
        case EC_INT16: ((int16_t*)out)[i] = (int16_t)(use_int ? iv : ec_f2i64(v)); break;
        case EC_INT32: ((int32_t*)out)[i] = (int32_t)(use_int ? iv : ec_f2i64(v)); break;
        case EC_INT64: ((int64_t*)out)[i] = use_int ? iv : ec_f2i64(v); break;
        case EC_FLOAT16: ((ec_f16*)out)[i] = (ec_f16)v; break;
        case EC_BFLOAT16: ((ec_bf16*)out)[i] = ec_f32_to_bf16((float)v); break;
        case EC_FLOAT32: ((float*)out)[i] = (float)v; break;
        default: ((double*)out)[i] = v; break;
    }
}

int ec_arange(int dtype, int64_t n, ec_ptr out_addr, double start, double step, int64_t istart,
              int64_t istep) {
    EC_REQUIRE_BASE_DTYPE("arange", dtype);
    void* out = (void*)out_addr;
    if (!ec_valid_dtype(dtype) || n < 0) return ec_fail(EC_ERR_INVALID, "arange: bad arguments");
    int use_int = !ec_is_float(dtype);
    int nt = ec_threads_for(n, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t i = 0; i < n; i++)
        store_seq(dtype, (char*)out, i, start + (double)i * step,
                  (int64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)istep), use_int);
    return EC_OK;
}

int ec_linspace(int dtype, int64_t n, ec_ptr out_addr, double start, double end) {
    EC_REQUIRE_BASE_DTYPE("linspace", dtype);
    void* out = (void*)out_addr;
    if (!ec_valid_dtype(dtype) || n < 0) return ec_fail(EC_ERR_INVALID, "linspace: bad arguments");
    if (n == 0) return EC_OK;
    if (n == 1) {
        store_seq(dtype, (char*)out, 0, start, ec_f2i64(start), 0);
        return EC_OK;
    }
    double step = (end - start) / (double)(n - 1);
    int64_t half = n / 2;
    int nt = ec_threads_for(n, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t i = 0; i < n; i++) {
        double v = i < half ? start + step * (double)i : end - step * (double)(n - 1 - i);
        store_seq(dtype, (char*)out, i, v, 0, 0);
    }
    return EC_OK;
}
