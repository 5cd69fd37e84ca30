/* Internal helpers of the convolution, pooling and resampling kernels
 * (conv.c, pool.c, resample.c).  Not visible to Python.
 *
 * Note [Spatial geometry]
 * Kernels see 1 to 3 spatial dims as three (D, H, W); a 2-D op has D = 1 and a
 * 1-D op D = H = 1, with kernel 1, stride 1, padding 0 and dilation 1 there.
 * Python packs the geometry into one int64 array (EC_GEOM_LEN values, see
 * ember_core.h).  Tensors are contiguous (N, C, D, H, W) in memory.
 */
#ifndef EMBER_SPATIAL_H
#define EMBER_SPATIAL_H

#include "core.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Hot loops are compiled twice, for AVX2 and for the portable baseline, and
 * the loader picks one at run time (no -march=native in what ships): their
 * strided loads (stride-2 pooling windows, ...) only vectorise with AVX2. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EC_VEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EC_VEC_CLONES
#endif

typedef struct ec_geom {
    int64_t in[3], k[3], out[3], s[3], p[3], d[3];
} ec_geom;

static inline void ec_geom_read(const int64_t* g, ec_geom* o) {
    for (int i = 0; i < 3; i++) {
        o->in[i] = g[i];
        o->k[i] = g[3 + i];
        o->out[i] = g[6 + i];
        o->s[i] = g[9 + i];
        o->p[i] = g[12 + i];
        o->d[i] = g[15 + i];
    }
}

static inline int64_t ec_geom_in_vol(const ec_geom* g) { return g->in[0] * g->in[1] * g->in[2]; }
static inline int64_t ec_geom_out_vol(const ec_geom* g) { return g->out[0] * g->out[1] * g->out[2]; }
static inline int64_t ec_geom_k_vol(const ec_geom* g) { return g->k[0] * g->k[1] * g->k[2]; }

/* Sane geometry: positive sizes, strides and dilations, non-negative padding. */
static inline int ec_geom_valid(const ec_geom* g) {
    for (int i = 0; i < 3; i++) {
        if (g->in[i] < 0 || g->k[i] < 1 || g->out[i] < 0 || g->s[i] < 1 || g->p[i] < 0 || g->d[i] < 1)
            return 0;
    }
    return 1;
}

/* For a kernel tap at offset `off` = tap * dilation - padding along a dim of
 * input size n and stride s, the output positions o with 0 <= o*s + off < n are
 * [*lo, *hi), clamped to [0, out). */
static inline void ec_tap_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t* lo,
                                int64_t* hi) {
    if (s == 1) { /* the common case, without divisions (this runs per row and tap) */
        int64_t a = off >= 0 ? 0 : -off, b = n - off;
        if (a > out) a = out;
        if (b > out) b = out;
        if (b < a) b = a;
        *lo = a;
        *hi = b;
        return;
    }
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = n - off <= 0 ? 0 : (n - off + s - 1) / s;
    if (a > out) a = out;
    if (b > out) b = out;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

static inline int ec_thread_num(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

#endif
