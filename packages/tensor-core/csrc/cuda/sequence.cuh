/* arange, linspace and the triangles (tril/triu) on CUDA, with the values of
 * shape.c's CPU kernels: the same double arithmetic, compiled with
 * --fmad=false so that start + i * step rounds twice as on the CPU.  Needs
 * prelude.cuh, dtype_lists.h and store.cuh before it.
 *
 * Names the launchers ask for: ecu_arange_k, ecu_linspace_k,
 * ecu_triangle_k<uint32_t, true>, ... */
#ifndef EMBER_CUDA_SEQUENCE_CUH
#define EMBER_CUDA_SEQUENCE_CUH

#define ECU_SEQ_BLOCK 256

__global__ void __launch_bounds__(ECU_SEQ_BLOCK)
    ecu_arange_k(int64_t n, char* out, int dtype, int isz, double start, double step,
                 int64_t istart, int64_t istep, int use_int) {
    const int64_t i = (int64_t)blockIdx.x * ECU_SEQ_BLOCK + threadIdx.x;
    if (i >= n) return;
    if (use_int)
        ecu_store_i(dtype, out + i * isz,
                    (int64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)istep));
    else
        ecu_store_f(dtype, out + i * isz, start + (double)i * step);
}

/* PyTorch's symmetric formula: the first half counts up from start, the
 * second down from end, so the last element is exactly end. */
__global__ void __launch_bounds__(ECU_SEQ_BLOCK)
    ecu_linspace_k(int64_t n, char* out, int dtype, int isz, double start, double end,
                   double step) {
    const int64_t i = (int64_t)blockIdx.x * ECU_SEQ_BLOCK + threadIdx.x;
    if (i >= n) return;
    const int64_t half = n / 2;
    double v = i < half ? start + step * (double)i : end - step * (double)(n - 1 - i);
    ecu_store_f(dtype, out + i * isz, v);
}

/* Triangles of the last two dims (rows, cols): element (b, r, c) is kept when
 * c - r >= diagonal (upper) or <= diagonal (lower), else 0.  T is an unsigned
 * type of the dtype's size (values are copied as bits); the batch dims have
 * the geometry g (operands out, x); I32: every index fits 32 bits. */
template <class T, bool I32>
__global__ void __launch_bounds__(ECU_SEQ_BLOCK)
    ecu_triangle_k(ecu_geo g, int64_t total, int64_t rows, int64_t cols, ecu_div drows,
                   ecu_div dcols, int64_t ors, int64_t ocs, int64_t irs, int64_t ics, char* out,
                   const char* x, int64_t diagonal, int upper) {
    const int64_t i = (int64_t)blockIdx.x * ECU_SEQ_BLOCK + threadIdx.x;
    if (i >= total) return;
    int64_t r, c, b;
    if (I32) {
        uint32_t t = ecu_divide(dcols, (uint32_t)i);
        c = (int64_t)((uint32_t)i - t * dcols.d);
        uint32_t bb = ecu_divide(drows, t);
        r = (int64_t)(t - bb * drows.d);
        b = bb;
    } else {
        int64_t t = i / cols;
        c = i - t * cols;
        b = t / rows;
        r = t - b * rows;
    }
    int64_t off[2];
    if (I32)
        ecu_offsets32<2>(g, (uint32_t)b, off);
    else
        ecu_offsets64<2>(g, b, off);
    const bool keep = upper ? (c - r >= diagonal) : (c - r <= diagonal);
    T v = keep ? *reinterpret_cast<const T*>(x + off[1] + r * irs + c * ics) : (T)0;
    *reinterpret_cast<T*>(out + off[0] + r * ors + c * ocs) = v;
}

#endif
