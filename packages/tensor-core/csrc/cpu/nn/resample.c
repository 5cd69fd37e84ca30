/* Resampling kernels: index maps with their gather and scatter-add (the
 * reflect/replicate/circular padding modes and nearest interpolation), and
 * linear/bilinear/trilinear and bicubic interpolation.  Python
 * (ember_core._ops.nn.resample) checks shapes and allocates outputs; the per-type
 * bodies live in resample_tmpl.h. */
#include <stdlib.h>

#include "spatial.h"
/* after spatial.h: the shared map formula needs core.h's types and codes */
#include "index_map.h"

#define T float
#define F(name) name##_f32
#include "resample_tmpl.h"
#undef T
#undef F

#define T double
#define F(name) name##_f64
#include "resample_tmpl.h"
#undef T
#undef F

/* Note [Index maps]
 * Padding modes and nearest interpolation read, for every output position of a
 * dim, one input position: out[p, od, oh, ow] = in[p, md[od], mh[oh], mw[ow]].
 * ec_index_map computes one dim's map; the gather moves elements of any dtype
 * (by size), and the scatter-add is its adjoint (the backward). */
int ec_index_map(int kind, int64_t in, int64_t out, int64_t before, double scale, int in_double,
                 ec_ptr map_addr) {
    int64_t* map = (int64_t*)map_addr;
    if (in < 1 || out < 0) return ec_fail(EC_ERR_INVALID, "index map: bad sizes");
    float sf = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
    double sd = scale > 0 ? 1.0 / scale : (double)in / (double)out;
    for (int64_t o = 0; o < out; o++) {
        int64_t i = ec_index_map_at(kind, in, before, sf, sd, in_double, o);
        if (i == -1) return ec_fail(EC_ERR_INVALID, "reflection padding wider than the input");
        if (i < 0) return ec_fail(EC_ERR_INVALID, "index map: unknown kind %d", kind);
        map[o] = i;
    }
    return EC_OK;
}

static int maps_check(const int64_t* in3, const int64_t* out3, const int64_t* maps) {
    int64_t off = 0;
    for (int d = 0; d < 3; d++) {
        if (in3[d] < 1 || out3[d] < 0) return ec_fail(EC_ERR_INVALID, "index map: bad sizes");
        for (int64_t o = 0; o < out3[d]; o++)
            if (maps[off + o] < 0 || maps[off + o] >= in3[d])
                return ec_fail(EC_ERR_INDEX, "index map: %lld out of range for size %lld",
                               (long long)maps[off + o], (long long)in3[d]);
        off += out3[d];
    }
    return EC_OK;
}

#define GATHER_BODY(U)                                                                     \
    _Pragma("omp parallel for num_threads(nt) schedule(static)")                           \
    for (int64_t r = 0; r < rows; r++) {                                                   \
        int64_t pl = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;                       \
        const U* src = (const U*)x + pl * ivol + (md[od] * IH + mh[oh]) * IW;              \
        U* dst = (U*)y + r * OW;                                                           \
        for (int64_t ow = 0; ow < OW; ow++) dst[ow] = src[mw[ow]];                         \
    }

int ec_map_gather(int itemsize, int64_t planes, const int64_t* in3, const int64_t* out3,
                  ec_ptr maps_addr, ec_ptr x, ec_ptr y) {
    const int64_t* maps = (const int64_t*)maps_addr;
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "index map gather: bad sizes");
    int st = maps_check(in3, out3, maps);
    if (st) return st;
    const int64_t IH = in3[1], IW = in3[2], OD = out3[0], OH = out3[1], OW = out3[2];
    const int64_t ivol = in3[0] * IH * IW, rows = planes * OD * OH;
    const int64_t *md = maps, *mh = maps + OD, *mw = maps + OD + OH;
    int nt = ec_threads_for(rows * OW, EC_GRAIN);
    switch (itemsize) {
        case 1: GATHER_BODY(uint8_t) break;
        case 2: GATHER_BODY(uint16_t) break;
        case 4: GATHER_BODY(uint32_t) break;
        case 8: GATHER_BODY(uint64_t) break;
        default: return ec_fail(EC_ERR_DTYPE, "index map gather: item size %d", itemsize);
    }
    return EC_OK;
}

int ec_map_scatter_add(int dtype, int64_t planes, const int64_t* in3, const int64_t* out3,
                       ec_ptr maps_addr, ec_ptr gy, ec_ptr gx) {
    const int64_t* maps = (const int64_t*)maps_addr;
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "index map scatter: no kernel for dtype %d", dtype);
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "index map scatter: bad sizes");
    int st = maps_check(in3, out3, maps);
    if (st) return st;
    const int64_t *md = maps, *mh = maps + out3[0], *mw = maps + out3[0] + out3[1];
    if (dtype == EC_FLOAT32)
        map_scatter_add_f32(planes, in3, out3, md, mh, mw, (const float*)gy, (float*)gx);
    else
        map_scatter_add_f64(planes, in3, out3, md, mh, mw, (const double*)gy, (double*)gx);
    return EC_OK;
}

static int interp_check(int dtype, int64_t planes, const int64_t* in3, const int64_t* out3,
                        const char* op) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: no kernel for dtype %d (float32/float64 only)", op, dtype);
    if (planes < 0) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    for (int d = 0; d < 3; d++)
        if (in3[d] < 1 || out3[d] < 1) return ec_fail(EC_ERR_INVALID, "%s: bad sizes", op);
    return EC_OK;
}

int ec_upsample_linear(int dtype, int backward, int64_t planes, const int64_t* in3,
                       const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                       ec_ptr dst) {
    int st = interp_check(dtype, planes, in3, out3, "interpolate (linear)");
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return upsample_linear_f32(backward, planes, in3, out3, align_corners, scales,
                                   (const float*)src, (float*)dst);
    return upsample_linear_f64(backward, planes, in3, out3, align_corners, scales,
                               (const double*)src, (double*)dst);
}

int ec_upsample_bicubic(int dtype, int backward, int64_t planes, const int64_t* in3,
                        const int64_t* out3, int align_corners, const double* scales, ec_ptr src,
                        ec_ptr dst) {
    int st = interp_check(dtype, planes, in3, out3, "interpolate (bicubic)");
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return upsample_bicubic_f32(backward, planes, in3[1], in3[2], out3[1], out3[2],
                                    align_corners, scales, (const float*)src, (float*)dst);
    return upsample_bicubic_f64(backward, planes, in3[1], in3[2], out3[1], out3[2], align_corners,
                                scales, (const double*)src, (double*)dst);
}
