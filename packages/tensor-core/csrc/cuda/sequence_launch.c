/* CUDA launchers of arange, linspace and the triangles (ec_arange,
 * ec_linspace, ec_triangle), with the CPU kernels' parameters and values
 * (Note [Kernel interface per device]). */
#include "launch.h"

#define SEQ_BLOCK 256

static int seq_blocks(int64_t n, unsigned* blocks, const char* op) {
    int64_t b = (n + SEQ_BLOCK - 1) / SEQ_BLOCK;
    if (b > 0x7fffffffLL)
        return ec_fail(EC_ERR_INVALID, "%s: too many elements for one CUDA launch", op);
    *blocks = (unsigned)b;
    return EC_OK;
}

int ecu_arange(int dtype, int64_t n, ec_ptr out, double start, double step, int64_t istart,
               int64_t istep) {
    if (!ec_valid_dtype(dtype) || n < 0) return ec_fail(EC_ERR_INVALID, "arange: bad arguments");
    if (n == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    unsigned blocks = 0;
    st = seq_blocks(n, &blocks, "arange");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_SEQUENCE, ECU_SEQ_ARANGE, 0, 0, 0, &f);
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype], use_int = !ec_is_float(dtype);
    void* args[] = {&n, &out, &dtype, &isz, &start, &step, &istart, &istep, &use_int};
    return ecu_launch(f, blocks, 1, 1, SEQ_BLOCK, 1, 1, 0, args);
}

int ecu_linspace(int dtype, int64_t n, ec_ptr out, double start, double end) {
    if (!ec_valid_dtype(dtype) || n < 0)
        return ec_fail(EC_ERR_INVALID, "linspace: bad arguments");
    if (n == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    unsigned blocks = 0;
    st = seq_blocks(n, &blocks, "linspace");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    st = ecu_get_function(ECU_FAM_SEQUENCE, ECU_SEQ_LINSPACE, 0, 0, 0, &f);
    if (st != EC_OK) return st;
    /* n == 1 stores start: the formula below gives end - 0 * step for i = 0 */
    if (n == 1) end = start;
    double step = n > 1 ? (end - start) / (double)(n - 1) : 0.0;
    int isz = ec_itemsize[dtype];
    void* args[] = {&n, &out, &dtype, &isz, &start, &end, &step};
    return ecu_launch(f, blocks, 1, 1, SEQ_BLOCK, 1, 1, 0, args);
}

int ecu_triangle(int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
                 int64_t diagonal, int upper) {
    if (!ec_valid_dtype(dtype) || ndim < 2 || ndim > EC_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID, "triangle: bad arguments");
    const int64_t* shape = layout;
    const int64_t* ost = layout + ndim;
    const int64_t* ist = layout + 2 * ndim;
    int64_t rows = shape[ndim - 2], cols = shape[ndim - 1];
    int64_t batch = 1;
    for (int k = 0; k < ndim - 2; k++) batch *= shape[k];
    if (batch == 0 || rows == 0 || cols == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    int isz = ec_itemsize[dtype];
    /* the batch dims: shape, out strides, x strides */
    int nb = ndim - 2;
    int64_t blay[2 * EC_MAX_DIMS + EC_MAX_DIMS];
    for (int k = 0; k < nb; k++) {
        blay[k] = shape[k];
        blay[nb + k] = ost[k];
        blay[2 * nb + k] = ist[k];
    }
    int sizes[2] = {isz, isz};
    ecu_geo g;
    int i32;
    st = ecu_geometry(2, nb, blay, sizes, &g, &i32);
    if (st != EC_OK) return st;
    int64_t total = batch * rows * cols;
    unsigned blocks = 0;
    st = seq_blocks(total, &blocks, "triangle");
    if (st != EC_OK) return st;
    int var = total < (1ll << 31) ? ECU_VAR_S32 : ECU_VAR_S64;
    ecu_CUfunction f;
    /* values are copied as bits: one kernel per item size */
    static const int by_size[9] = {0, EC_UINT8, EC_INT16, 0, EC_INT32, 0, 0, 0, EC_INT64};
    st = ecu_get_function(ECU_FAM_SEQUENCE, ECU_SEQ_TRIANGLE, by_size[isz], 0, var, &f);
    if (st != EC_OK) return st;
    ecu_div drows, dcols;
    ecu_make_divisor(&drows, rows < (1ll << 31) ? (uint32_t)rows : 1u);
    ecu_make_divisor(&dcols, cols < (1ll << 31) ? (uint32_t)cols : 1u);
    int64_t ors = ost[ndim - 2] * isz, ocs = ost[ndim - 1] * isz;
    int64_t irs = ist[ndim - 2] * isz, ics = ist[ndim - 1] * isz;
    void* args[] = {&g,   &total, &rows, &cols, &drows, &dcols,    &ors,  &ocs,
                    &irs, &ics,   &out,  &x,    &diagonal, &upper};
    return ecu_launch(f, blocks, 1, 1, SEQ_BLOCK, 1, 1, 0, args);
}
