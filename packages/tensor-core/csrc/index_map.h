/* One position of an index map (Note [Index maps] in resample.c): the input
 * position output o of a dim reads, for the padding modes and nearest
 * interpolation; -1 when reflection padding is wider than the input, -2 for
 * an unknown kind.  Shared by the CPU (resample.c) and CUDA
 * (cuda/nn_resample.cuh) kernels, so both map alike; sf/sd: the scale in
 * float and in double (in_double picks, as PyTorch computes in the input's
 * precision). */
#ifndef EMBER_INDEX_MAP_H
#define EMBER_INDEX_MAP_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EC_MAP_FN static __device__ __forceinline__
#else
#define EC_MAP_FN static inline
#endif

EC_MAP_FN int64_t ec_index_map_at(int kind, int64_t in, int64_t before, float sf, double sd,
                                  int in_double, int64_t o) {
    int64_t i = o - before;
    switch (kind) {
        case EC_MAP_REFLECT:
            if (i < 0) i = -i;
            if (i >= in) i = 2 * (in - 1) - i;
            return (i < 0 || i >= in) ? -1 : i;
        case EC_MAP_REPLICATE: return i < 0 ? 0 : (i >= in ? in - 1 : i);
        case EC_MAP_CIRCULAR: return ((i % in) + in) % in;
        case EC_MAP_NEAREST:
            i = in_double ? (int64_t)floor(sd * (double)o) : (int64_t)floorf(sf * (float)o);
            return i > in - 1 ? in - 1 : i;
        case EC_MAP_NEAREST_EXACT:
            if (in_double) {
                double r = sd * ((double)o + 0.5) - 0.5;
                i = (int64_t)floor((r < 0 ? 0 : r) + 0.5);
            } else {
                float r = sf * ((float)o + 0.5f) - 0.5f;
                i = (int64_t)floorf((r < 0 ? 0 : r) + 0.5f);
            }
            return i > in - 1 ? in - 1 : i;
        default: return -2;
    }
}

#endif
