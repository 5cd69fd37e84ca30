/* Fused scaled-dot-product attention on CUDA (Note [Fused attention]),
 * launched by attention_launch.c; ember_core._ops.nn.attention_fused decides when it
 * applies (scaled_dot_product_attention takes the math path otherwise).
 *
 * Note [Fused attention]
 * Flash-style: no (L, S) matrix is stored.  A block holds ECU_ATTN_WARPS
 * query rows of one (batch, head), a warp per row; key/value tiles of
 * ECU_ATTN_TILE rows are staged in shared memory as float and shared by the
 * block's warps; lane j scores key j of the tile and the row keeps an online
 * softmax (running max m, running sum l, rescaled accumulator; each lane owns
 * the output dims lane, lane + 32, ...).  The forward also writes the row's
 * logsumexp m + log l (-inf for a row with no key taking part, whose output is
 * zeros, as the math path's safe softmax gives).  The backward recomputes the
 * probabilities from the logsumexp (FlashAttention-2): one kernel over query
 * rows writes dQ and delta_i = dO_i . O_i, a second over key rows (lanes over
 * a tile of queries) writes dK and dV -- no atomics, so the gradients do not
 * depend on timing.  Storage float16/bfloat16/float32, arithmetic in float.
 * Causal masking is top-left aligned (key j takes part in row i when j <= i,
 * as the math path's tril), and a block skips the key tiles its rows never
 * reach.  Masks: bool (take part where true) or additive float32, read
 * through four strides (0 where broadcast).  Head dims up to ECU_ATTN_MAXD. */
#ifndef EMBER_CUDA_ATTENTION_CUH
#define EMBER_CUDA_ATTENTION_CUH

#define ECU_ATTN_WARPS 8
#define ECU_ATTN_TILE 32
#define ECU_ATTN_MAXD 128
#define ECU_ATTN_VPL (ECU_ATTN_MAXD / 32) /* output dims per lane */

/* sizes, then element strides (batch n, head h, row) of q, k, v and the
 * mask's (n, h, row, column); out, grad_out and the gradients are dense */
struct ecu_attn_geo {
    int64_t N, H, L, S, E, Ev;
    int64_t q[3], k[3], v[3], m[4];
};

template <int DT>
struct ecu_attn_io;
template <>
struct ecu_attn_io<EC_FLOAT32> {
    typedef float T;
    static __device__ __forceinline__ float ld(float v) { return v; }
    static __device__ __forceinline__ float st(float f) { return f; }
};
template <>
struct ecu_attn_io<EC_FLOAT16> {
    typedef ec_f16 T;
    static __device__ __forceinline__ float ld(ec_f16 v) { return ec_h2f(v); }
    static __device__ __forceinline__ ec_f16 st(float f) { return ec_f2h(f); }
};
template <>
struct ecu_attn_io<EC_BFLOAT16> {
    typedef ec_bf16 T;
    static __device__ __forceinline__ float ld(ec_bf16 v) { return ec_bf16_to_f32(v); }
    static __device__ __forceinline__ ec_bf16 st(float f) { return ec_f32_to_bf16(f); }
};

/* The additive term of key j in row i: -inf where it takes no part. */
static __device__ __forceinline__ float ecu_attn_bias(const ecu_attn_geo& g, int causal,
                                                      int mask_kind, const void* mask, int64_t n,
                                                      int64_t h, int64_t i, int64_t j) {
    if (causal && j > i) return -INFINITY;
    if (mask_kind == 0) return 0.f;
    int64_t off = n * g.m[0] + h * g.m[1] + i * g.m[2] + j * g.m[3];
    if (mask_kind == 1) return ((const uint8_t*)mask)[off] ? 0.f : -INFINITY;
    return ((const float*)mask)[off];
}

static __device__ __forceinline__ float ecu_attn_warp_max(float v) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

static __device__ __forceinline__ float ecu_attn_warp_sum(float v) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

/* rows [r0, r0 + ECU_ATTN_TILE) of a (rows, D) operand with row stride rs into
 * shared s, rows D + 1 apart (zeros past `rows`): lane j reading row j of a
 * tile then hits bank (j (D + 1) + e) % 32, a different bank per lane even when
 * D is a multiple of 32.  Every thread of the block takes part. */
template <class IO>
static __device__ __forceinline__ void ecu_attn_stage(float* s, const typename IO::T* src,
                                                      int64_t rs, int64_t r0, int64_t rows,
                                                      int64_t D) {
    for (int64_t x = threadIdx.x; x < ECU_ATTN_TILE * D; x += blockDim.x) {
        int64_t r = x / D, e = x - r * D;
        s[r * (D + 1) + e] = r0 + r < rows ? IO::ld(src[(r0 + r) * rs + e]) : 0.f;
    }
}

/* Keys a block of query rows [i0, i0 + WARPS) can reach. */
static __device__ __forceinline__ int64_t ecu_attn_key_end(const ecu_attn_geo& g, int causal,
                                                           int64_t i0) {
    if (!causal) return g.S;
    int64_t last = i0 + ECU_ATTN_WARPS - 1;
    if (last > g.L - 1) last = g.L - 1;
    return last + 1 < g.S ? last + 1 : g.S;
}

/* out (N, H, L, Ev) and lse (N, H, L) float. */
template <int DT>
__global__ void __launch_bounds__(ECU_ATTN_WARPS * 32)
    ecu_attn_fwd_k(ecu_attn_geo g, float scale, int causal, int mask_kind,
                   const typename ecu_attn_io<DT>::T* q, const typename ecu_attn_io<DT>::T* k,
                   const typename ecu_attn_io<DT>::T* v, const void* mask,
                   typename ecu_attn_io<DT>::T* out, float* lse) {
    typedef ecu_attn_io<DT> IO;
    const int64_t E = g.E, Ev = g.Ev;
    const int64_t KS = E + 1, VS = Ev + 1; /* the tiles' row strides */
    float* ks = (float*)ecu_nn_smem;     /* TILE x KS */
    float* vs = ks + ECU_ATTN_TILE * KS; /* TILE x VS */
    float* qs = vs + ECU_ATTN_TILE * VS; /* WARPS x E */
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int64_t bh = blockIdx.x, n = bh / g.H, h = bh - n * g.H;
    const int64_t i0 = (int64_t)blockIdx.y * ECU_ATTN_WARPS, i = i0 + w;
    const bool active = i < g.L; /* the same in every lane of a warp */
    const typename IO::T* kb = k + n * g.k[0] + h * g.k[1];
    const typename IO::T* vb = v + n * g.v[0] + h * g.v[1];
    if (active)
        for (int64_t e = lane; e < E; e += 32)
            qs[w * E + e] = IO::ld(q[n * g.q[0] + h * g.q[1] + i * g.q[2] + e]);
    float m = -INFINITY, l = 0.f, acc[ECU_ATTN_VPL];
#pragma unroll
    for (int c = 0; c < ECU_ATTN_VPL; c++) acc[c] = 0.f;
    const int64_t s_end = ecu_attn_key_end(g, causal, i0);
    for (int64_t j0 = 0; j0 < s_end; j0 += ECU_ATTN_TILE) {
        __syncthreads(); /* the previous tile is consumed */
        ecu_attn_stage<IO>(ks, kb, g.k[2], j0, g.S, E);
        ecu_attn_stage<IO>(vs, vb, g.v[2], j0, g.S, Ev);
        __syncthreads();
        if (!active) continue;
        const int64_t j = j0 + lane;
        float s = -INFINITY;
        if (j < g.S) {
            float bias = ecu_attn_bias(g, causal, mask_kind, mask, n, h, i, j);
            if (bias != -INFINITY) {
                float d = 0.f;
                for (int64_t e = 0; e < E; e++) d += qs[w * E + e] * ks[lane * KS + e];
                s = d * scale + bias;
            }
        }
        const float mn = fmaxf(m, ecu_attn_warp_max(s));
        if (mn == -INFINITY) continue; /* no key of the row so far */
        const float p = s == -INFINITY ? 0.f : expf(s - mn);
        const float alpha = expf(m - mn); /* 0 while m is -inf */
        l = l * alpha + ecu_attn_warp_sum(p);
#pragma unroll
        for (int c = 0; c < ECU_ATTN_VPL; c++) acc[c] *= alpha;
        for (int r = 0; r < ECU_ATTN_TILE; r++) {
            const float pr = __shfl_sync(0xffffffffu, p, r);
#pragma unroll
            for (int c = 0; c < ECU_ATTN_VPL; c++) {
                const int64_t d = lane + 32 * c;
                if (d < Ev) acc[c] += pr * vs[r * VS + d];
            }
        }
        m = mn;
    }
    if (!active) return;
    const int64_t row = bh * g.L + i;
#pragma unroll
    for (int c = 0; c < ECU_ATTN_VPL; c++) {
        const int64_t d = lane + 32 * c;
        if (d < Ev) out[row * Ev + d] = IO::st(l > 0.f ? acc[c] / l : 0.f);
    }
    if (lane == 0) lse[row] = l > 0.f ? m + logf(l) : -INFINITY;
}

/* dq (N, H, L, E) and delta (N, H, L) float, from grad_out go and out (dense). */
template <int DT>
__global__ void __launch_bounds__(ECU_ATTN_WARPS * 32)
    ecu_attn_bwd_dq_k(ecu_attn_geo g, float scale, int causal, int mask_kind,
                      const typename ecu_attn_io<DT>::T* q, const typename ecu_attn_io<DT>::T* k,
                      const typename ecu_attn_io<DT>::T* v, const void* mask,
                      const typename ecu_attn_io<DT>::T* out, const float* lse,
                      const typename ecu_attn_io<DT>::T* go, float* delta,
                      typename ecu_attn_io<DT>::T* dq) {
    typedef ecu_attn_io<DT> IO;
    const int64_t E = g.E, Ev = g.Ev;
    const int64_t KS = E + 1, VS = Ev + 1;
    float* ks = (float*)ecu_nn_smem;      /* TILE x KS */
    float* vs = ks + ECU_ATTN_TILE * KS;  /* TILE x VS */
    float* qs = vs + ECU_ATTN_TILE * VS;  /* WARPS x E */
    float* dos = qs + ECU_ATTN_WARPS * E; /* WARPS x Ev */
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int64_t bh = blockIdx.x, n = bh / g.H, h = bh - n * g.H;
    const int64_t i0 = (int64_t)blockIdx.y * ECU_ATTN_WARPS, i = i0 + w;
    const bool active = i < g.L;
    const int64_t row = bh * g.L + i;
    const typename IO::T* kb = k + n * g.k[0] + h * g.k[1];
    const typename IO::T* vb = v + n * g.v[0] + h * g.v[1];
    float D = 0.f, li = -INFINITY;
    if (active) {
        for (int64_t e = lane; e < E; e += 32)
            qs[w * E + e] = IO::ld(q[n * g.q[0] + h * g.q[1] + i * g.q[2] + e]);
        float part = 0.f;
        for (int64_t d = lane; d < Ev; d += 32) {
            float o = IO::ld(go[row * Ev + d]);
            dos[w * Ev + d] = o;
            part += o * IO::ld(out[row * Ev + d]);
        }
        D = ecu_attn_warp_sum(part);
        if (lane == 0) delta[row] = D;
        li = lse[row];
    }
    float acc[ECU_ATTN_VPL];
#pragma unroll
    for (int c = 0; c < ECU_ATTN_VPL; c++) acc[c] = 0.f;
    const int64_t s_end = ecu_attn_key_end(g, causal, i0);
    for (int64_t j0 = 0; j0 < s_end; j0 += ECU_ATTN_TILE) {
        __syncthreads();
        ecu_attn_stage<IO>(ks, kb, g.k[2], j0, g.S, E);
        ecu_attn_stage<IO>(vs, vb, g.v[2], j0, g.S, Ev);
        __syncthreads();
        if (!active || li == -INFINITY) continue;
        const int64_t j = j0 + lane;
        float ds = 0.f;
        if (j < g.S) {
            float bias = ecu_attn_bias(g, causal, mask_kind, mask, n, h, i, j);
            if (bias != -INFINITY) {
                float s = 0.f, dp = 0.f;
                for (int64_t e = 0; e < E; e++) s += qs[w * E + e] * ks[lane * KS + e];
                for (int64_t d = 0; d < Ev; d++) dp += dos[w * Ev + d] * vs[lane * VS + d];
                float p = expf(s * scale + bias - li);
                ds = p * (dp - D);
            }
        }
        for (int r = 0; r < ECU_ATTN_TILE; r++) {
            const float dsr = __shfl_sync(0xffffffffu, ds, r);
#pragma unroll
            for (int c = 0; c < ECU_ATTN_VPL; c++) {
                const int64_t e = lane + 32 * c;
                if (e < E) acc[c] += dsr * ks[r * KS + e];
            }
        }
    }
    if (!active) return;
#pragma unroll
    for (int c = 0; c < ECU_ATTN_VPL; c++) {
        const int64_t e = lane + 32 * c;
        if (e < E) dq[row * E + e] = IO::st(acc[c] * scale);
    }
}

/* dk (N, H, S, E) and dv (N, H, S, Ev): a warp per key row, lanes over a
 * tile of query rows; delta from ecu_attn_bwd_dq_k (queued before). */
template <int DT>
__global__ void __launch_bounds__(ECU_ATTN_WARPS * 32)
    ecu_attn_bwd_dkv_k(ecu_attn_geo g, float scale, int causal, int mask_kind,
                       const typename ecu_attn_io<DT>::T* q, const typename ecu_attn_io<DT>::T* k,
                       const typename ecu_attn_io<DT>::T* v, const void* mask, const float* lse,
                       const typename ecu_attn_io<DT>::T* go, const float* delta,
                       typename ecu_attn_io<DT>::T* dk, typename ecu_attn_io<DT>::T* dv) {
    typedef ecu_attn_io<DT> IO;
    const int64_t E = g.E, Ev = g.Ev;
    const int64_t QS = E + 1, DS = Ev + 1;
    float* qs = (float*)ecu_nn_smem;       /* TILE x QS */
    float* dos = qs + ECU_ATTN_TILE * QS;  /* TILE x DS */
    float* kr = dos + ECU_ATTN_TILE * DS;  /* WARPS x E */
    float* vr = kr + ECU_ATTN_WARPS * E;     /* WARPS x Ev */
    float* ls = vr + ECU_ATTN_WARPS * Ev;    /* TILE */
    float* dl = ls + ECU_ATTN_TILE;          /* TILE */
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int64_t bh = blockIdx.x, n = bh / g.H, h = bh - n * g.H;
    const int64_t j0 = (int64_t)blockIdx.y * ECU_ATTN_WARPS, j = j0 + w;
    const bool active = j < g.S;
    if (active) {
        for (int64_t e = lane; e < E; e += 32)
            kr[w * E + e] = IO::ld(k[n * g.k[0] + h * g.k[1] + j * g.k[2] + e]);
        for (int64_t d = lane; d < Ev; d += 32)
            vr[w * Ev + d] = IO::ld(v[n * g.v[0] + h * g.v[1] + j * g.v[2] + d]);
    }
    const typename IO::T* qb = q + n * g.q[0] + h * g.q[1];
    const typename IO::T* gob = go + bh * g.L * Ev;
    float ak[ECU_ATTN_VPL], av[ECU_ATTN_VPL];
#pragma unroll
    for (int c = 0; c < ECU_ATTN_VPL; c++) ak[c] = av[c] = 0.f;
    /* causal: rows before the block's first key take no part */
    const int64_t q_begin = causal ? (j0 / ECU_ATTN_TILE) * ECU_ATTN_TILE : 0;
    for (int64_t r0 = q_begin; r0 < g.L; r0 += ECU_ATTN_TILE) {
        __syncthreads();
        ecu_attn_stage<IO>(qs, qb, g.q[2], r0, g.L, E);
        ecu_attn_stage<IO>(dos, gob, Ev, r0, g.L, Ev);
        if (threadIdx.x < ECU_ATTN_TILE) {
            const int64_t r = r0 + threadIdx.x;
            ls[threadIdx.x] = r < g.L ? lse[bh * g.L + r] : -INFINITY;
            dl[threadIdx.x] = r < g.L ? delta[bh * g.L + r] : 0.f;
        }
        __syncthreads();
        if (!active) continue;
        const int64_t i = r0 + lane;
        float p = 0.f, ds = 0.f;
        if (i < g.L && ls[lane] != -INFINITY) {
            float bias = ecu_attn_bias(g, causal, mask_kind, mask, n, h, i, j);
            if (bias != -INFINITY) {
                float s = 0.f, dp = 0.f;
                for (int64_t e = 0; e < E; e++) s += qs[lane * QS + e] * kr[w * E + e];
                for (int64_t d = 0; d < Ev; d++) dp += dos[lane * DS + d] * vr[w * Ev + d];
                p = expf(s * scale + bias - ls[lane]);
                ds = p * (dp - dl[lane]);
            }
        }
        for (int r = 0; r < ECU_ATTN_TILE; r++) {
            const float pr = __shfl_sync(0xffffffffu, p, r);
            const float dsr = __shfl_sync(0xffffffffu, ds, r);
#pragma unroll
            for (int c = 0; c < ECU_ATTN_VPL; c++) {
                const int64_t x = lane + 32 * c;
                if (x < Ev) av[c] += pr * dos[r * DS + x];
                if (x < E) ak[c] += dsr * qs[r * QS + x];
            }
        }
    }
    if (!active) return;
    const int64_t row = bh * g.S + j;
#pragma unroll
    for (int c = 0; c < ECU_ATTN_VPL; c++) {
        const int64_t x = lane + 32 * c;
        if (x < E) dk[row * E + x] = IO::st(ak[c] * scale);
        if (x < Ev) dv[row * Ev + x] = IO::st(av[c]);
    }
}

#endif
