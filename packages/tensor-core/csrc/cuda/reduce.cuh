/* Reductions and scans on CUDA: the ops of csrc/cpu/reduction/reduce.c as device structs
 * (a state, how one element folds into it, how two states merge, how the
 * result is stored), and the kernel templates that run them over any layout
 * (Note [CUDA reductions], cuda/reduce_launch.c, chooses among them).
 *
 * Needs store.cuh (dtype descriptors and stores) before it.
 *
 * Names the launchers ask for (ember_core/_cuda/kernels.py builds them):
 * ecu_red_inner<R_SUM<ecu_dt_f32> >, ecu_red_outer<...>, ecu_red_final<...>,
 * ecu_scan_seq<S_CUMSUM<ecu_dt_i64> >, ... */
#ifndef EMBER_CUDA_REDUCE_CUH
#define EMBER_CUDA_REDUCE_CUH

/* ------------------------------------------------------- reduced geometry */

/* Note [CUDA reductions]: the reduced dims after dropping size-1 dims and
 * merging contiguous neighbours (the order is kept: arg indices count
 * row-major over the reduced dims), with input byte strides.  Must match
 * struct ecu_rgeo in cuda/reduce_launch.c. */
#define ECU_RED_DIMS 16

struct ecu_rgeo {
    int32_t ndim, i32;
    int64_t numel;
    int64_t size[ECU_RED_DIMS];
    ecu_div div[ECU_RED_DIMS];
    int64_t stride[ECU_RED_DIMS];
};

/* Byte offset of flat reduced index r. */
static __device__ __forceinline__ int64_t ecu_roff(const ecu_rgeo& g, int64_t r) {
    if (g.ndim == 1) return r * g.stride[0];
    int64_t off = 0;
    if (g.i32) {
        uint32_t i = (uint32_t)r;
        for (int d = g.ndim - 1; d >= 0; d--) {
            uint32_t q = ecu_divide(g.div[d], i);
            off += (int64_t)(i - q * g.div[d].d) * g.stride[d];
            i = q;
        }
    } else {
        for (int d = g.ndim - 1; d >= 0; d--) {
            int64_t q = r / g.size[d];
            off += (r - q * g.size[d]) * g.stride[d];
            r = q;
        }
    }
    return off;
}

/* What every reduction kernel receives besides the geometries. */
struct ecu_rprm {
    int64_t count;  /* reduced elements per output */
    int64_t nout;   /* outputs */
    int64_t chunk;  /* reduced elements per split (gridDim.y splits) */
    double p0;      /* correction (var/std) or order (norm) */
    char* out;
    char* idx;      /* int64 arg indices, or null */
    const char* x;
    char* ws;       /* partial states: ECU_RED_SLOT bytes each, split-major */
    int32_t out_dtype, pad;
};

/* Partial states travel between the passes in slots of this many bytes. */
#define ECU_RED_SLOT 32

/* Warp shuffles of any state (a plain struct): down by delta, up by delta,
 * or from a lane (ECU_SHFL_*). */
#define ECU_SHFL_DOWN 0
#define ECU_SHFL_UP 1
#define ECU_SHFL_IDX 2

template <int MODE, class S>
static __device__ __forceinline__ S ecu_shfl(const S& s, int arg) {
    union U {
        S s;
        uint32_t w[(sizeof(S) + 3) / 4];
    };
    U a, b;
    a.s = s;
#pragma unroll
    for (int k = 0; k < (int)((sizeof(S) + 3) / 4); k++) {
        if (MODE == ECU_SHFL_DOWN)
            b.w[k] = __shfl_down_sync(0xffffffffu, a.w[k], arg);
        else if (MODE == ECU_SHFL_UP)
            b.w[k] = __shfl_up_sync(0xffffffffu, a.w[k], arg);
        else
            b.w[k] = __shfl_sync(0xffffffffu, a.w[k], arg);
    }
    return b.s;
}

template <class S>
static __device__ __forceinline__ S ecu_shfl_down(const S& s, int delta) {
    return ecu_shfl<ECU_SHFL_DOWN>(s, delta);
}

/* ------------------------------------------------------------------- ops */

/* Each op: its state; init(p0); fold(state, value, flat reduced index, p0);
 * merge(earlier, later, p0); store(state, params, out, idx), where p0 is the
 * op's parameter (correction, order).  fold and merge must give the CPU's
 * answer whatever split of the range the kernels choose, up to rounding:
 * max/min break ties by the smaller index and prefer the first NaN. */

template <class D>
struct R_SUM {
    typedef typename D::T T_in;
    enum { unroll = 4 };
    typedef typename ecu_sum_t<D>::type state;
    static __device__ __forceinline__ state init(double) { return 0; }
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t, double) {
        return s + (state)D::load(v);
    }
    static __device__ __forceinline__ state merge(state a, state b, double) { return a + b; }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        if (D::kind == ECU_KIND_F)
            ecu_store_f(p.out_dtype, o, (double)s);
        else
            ecu_store_i(p.out_dtype, o, (int64_t)s);
    }
};

template <class D>
struct R_MEAN : R_SUM<D> {
    typedef typename R_SUM<D>::state state;
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        ecu_store_f(p.out_dtype, o, (double)s / (double)p.count);
    }
};

template <class D>
struct R_NANSUM : R_SUM<D> {
    typedef typename D::T T_in;
    typedef typename R_SUM<D>::state state;
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t, double) {
        state x = (state)D::load(v);
        return x == x ? s + x : s;
    }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        ecu_store_f(p.out_dtype, o, (double)s);
    }
};

/* Products in double (floats) or wrapping int64, as the CPU. */
template <class D>
struct R_PROD {
    typedef typename D::T T_in;
    enum { unroll = 4 };
    typedef typename ecu_if<D::kind == ECU_KIND_F, double, int64_t>::type state;
    static __device__ __forceinline__ state mul(state a, state b) {
        if (D::kind == ECU_KIND_F) return a * b;
        return (state)((uint64_t)a * (uint64_t)b);
    }
    static __device__ __forceinline__ state init(double) { return 1; }
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t, double) {
        return mul(s, (state)D::load(v));
    }
    static __device__ __forceinline__ state merge(state a, state b, double) { return mul(a, b); }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        if (D::kind == ECU_KIND_F)
            ecu_store_f(p.out_dtype, o, (double)s);
        else
            ecu_store_i(p.out_dtype, o, (int64_t)s);
    }
};

/* The starting value of a running max (MAX) or min: -inf/+inf or the int64
 * extremes, as reduce.c's state_init. */
template <class V, bool FLOAT, bool MAX>
struct ecu_extreme {
    static __device__ __forceinline__ V v() { return MAX ? (V)-INFINITY : (V)INFINITY; }
};
template <class V, bool MAX>
struct ecu_extreme<V, false, MAX> {
    static __device__ __forceinline__ V v() { return MAX ? (V)INT64_MIN : (V)INT64_MAX; }
};

/* max/min values with their index. */
template <class D, bool MAX>
struct R_EXTREME {
    typedef typename D::T T_in;
    enum { unroll = 2 };
    typedef typename ecu_if<D::kind == ECU_KIND_F, typename D::C, int64_t>::type V;
    struct state {
        V v;
        int64_t i; /* -1: nothing seen */
    };
    static __device__ __forceinline__ state init(double) {
        state s;
        s.v = ecu_extreme<V, D::kind == ECU_KIND_F, MAX>::v();
        s.i = -1;
        return s;
    }
    /* whether b beats a: a NaN beats numbers, the larger (MAX) value beats the
     * smaller, and among equals (or NaNs) the smaller index wins */
    static __device__ __forceinline__ bool better(const state& a, const state& b) {
        if (b.i < 0) return false;
        if (a.i < 0) return true;
        if (D::kind == ECU_KIND_F) {
            bool an = a.v != a.v, bn = b.v != b.v;
            if (an || bn) return an && bn ? b.i < a.i : bn;
        }
        if (MAX ? b.v > a.v : b.v < a.v) return true;
        return b.v == a.v && b.i < a.i;
    }
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t i, double) {
        state b;
        b.v = (V)D::load(v);
        b.i = i;
        return better(s, b) ? b : s;
    }
    static __device__ __forceinline__ state merge(state a, state b, double) {
        return better(a, b) ? b : a;
    }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char* ix) {
        if (D::kind == ECU_KIND_F)
            ecu_store_f(p.out_dtype, o, (double)s.v);
        else
            ecu_store_i(p.out_dtype, o, (int64_t)s.v);
        if (ix) *(int64_t*)ix = s.i < 0 ? 0 : s.i;
    }
};

template <class D>
struct R_MAX : R_EXTREME<D, true> {};
template <class D>
struct R_MIN : R_EXTREME<D, false> {};

template <class D, bool ALL>
struct R_LOGICAL {
    typedef typename D::T T_in;
    enum { unroll = 4 };
    typedef int32_t state;
    static __device__ __forceinline__ state init(double) { return ALL ? 1 : 0; }
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t, double) {
        int nz = D::load(v) != 0;
        return ALL ? (s & nz) : (s | nz);
    }
    static __device__ __forceinline__ state merge(state a, state b, double) {
        return ALL ? (a & b) : (a | b);
    }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        ecu_store_i(p.out_dtype, o, (int64_t)s);
    }
};

template <class D>
struct R_ALL : R_LOGICAL<D, true> {};
template <class D>
struct R_ANY : R_LOGICAL<D, false> {};

template <class D>
struct R_COUNT_NONZERO {
    typedef typename D::T T_in;
    enum { unroll = 4 };
    typedef int64_t state;
    static __device__ __forceinline__ state init(double) { return 0; }
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t, double) {
        return s + (D::load(v) != 0);
    }
    static __device__ __forceinline__ state merge(state a, state b, double) { return a + b; }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        ecu_store_i(p.out_dtype, o, s);
    }
};

/* Variance: Welford's update per element and Chan's merge, in double. */
template <class D, bool STD>
struct R_MOMENTS {
    typedef typename D::T T_in;
    enum { unroll = 1 };
    struct state {
        double mean, m2;
        int64_t n;
    };
    static __device__ __forceinline__ state init(double) {
        state s;
        s.mean = 0;
        s.m2 = 0;
        s.n = 0;
        return s;
    }
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t, double) {
        double x = (double)D::load(v);
        s.n += 1;
        double d = x - s.mean;
        s.mean += d / (double)s.n;
        s.m2 += d * (x - s.mean);
        return s;
    }
    static __device__ __forceinline__ state merge(state a, state b, double) {
        if (b.n == 0) return a;
        if (a.n == 0) return b;
        double na = (double)a.n, nb = (double)b.n, delta = b.mean - a.mean, tot = na + nb;
        a.mean += delta * nb / tot;
        a.m2 += b.m2 + delta * delta * na * nb / tot;
        a.n += b.n;
        return a;
    }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        /* M2 / max(0, n - correction): 0/0 = NaN for a single element */
        double dof = (double)s.n - p.p0;
        double v = s.m2 / (dof > 0 ? dof : 0);
        ecu_store_f(p.out_dtype, o, STD ? sqrt(v) : v);
    }
};

template <class D>
struct R_VAR : R_MOMENTS<D, false> {};
template <class D>
struct R_STD : R_MOMENTS<D, true> {};

/* |x|^p out of line: one copy of pow per kernel, however unrolled the loop. */
static __device__ __noinline__ double ecu_norm_pow(double a, double ord) { return pow(a, ord); }

/* Vector norms of order p0, in double; a NaN anywhere gives NaN (kept in the
 * state, which NaN never leaves). */
template <class D>
struct R_NORM {
    typedef typename D::T T_in;
    enum { unroll = 1 };
    typedef double state;
    static __device__ __forceinline__ state init(double ord) { return ord == -INFINITY ? INFINITY : 0; }
    static __device__ __forceinline__ state fold(state s, T_in v, int64_t, double ord) {
        double a = (double)D::load(v);
        a = a < 0 ? -a : a;
        if (s != s) return s;
        if (a != a) return a;
        if (ord == 2) return s + a * a;
        if (ord == 1) return s + a;
        if (ord == INFINITY) return a > s ? a : s;
        if (ord == -INFINITY) return a < s ? a : s;
        if (ord == 0) return s + (a != 0);
        return s + ecu_norm_pow(a, ord);
    }
    static __device__ __forceinline__ state merge(state a, state b, double ord) {
        if (a != a) return a;
        if (b != b) return b;
        if (ord == INFINITY) return b > a ? b : a;
        if (ord == -INFINITY) return b < a ? b : a;
        return a + b;
    }
    static __device__ __forceinline__ void store(state s, const ecu_rprm& p, char* o, char*) {
        double ord = p.p0, v = s;
        if (v == v) {
            if (ord == 2)
                v = sqrt(v);
            else if (ord != 1 && ord != 0 && ord != INFINITY && ord != -INFINITY)
                v = pow(v, 1.0 / ord);
        }
        ecu_store_f(p.out_dtype, o, v);
    }
};

/* log(sum(exp(x))) with a running maximum: state (m, s) stands for exp(m) *
 * s; a NaN makes m NaN for good. */
template <class D>
struct R_LOGSUMEXP {
    typedef typename D::T T_in;
    enum { unroll = 1 };
    typedef typename D::C A;
    struct state {
        A m, s;
    };
    static __device__ __forceinline__ state init(double) {
        state r;
        r.m = -INFINITY;
        r.s = 0;
        return r;
    }
    static __device__ __forceinline__ state fold(state r, T_in v, int64_t, double) {
        A x = D::load(v);
        if (r.m != r.m) return r;
        if (x != x) {
            r.m = x;
            return r;
        }
        if (x == -INFINITY) return r;
        if (x > r.m) {
            r.s = (r.m == -INFINITY ? (A)0 : r.s * exp(r.m - x)) + (A)1;
            r.m = x;
        } else if (x == r.m) {
            r.s += (A)1;
        } else {
            r.s += exp(x - r.m);
        }
        return r;
    }
    static __device__ __forceinline__ state merge(state a, state b, double) {
        if (a.m != a.m || b.m == -INFINITY) return a;
        if (b.m != b.m || a.m == -INFINITY) return b;
        if (b.m > a.m) {
            b.s += a.s * exp(a.m - b.m);
            return b;
        }
        if (b.m == a.m) {
            a.s += b.s;
            return a;
        }
        a.s += b.s * exp(b.m - a.m);
        return a;
    }
    static __device__ __forceinline__ void store(state r, const ecu_rprm& p, char* o, char*) {
        double m = (double)r.m;
        ecu_store_f(p.out_dtype, o, m != m || m == -INFINITY ? m : m + log((double)r.s));
    }
};

template <class R>
static __device__ __forceinline__ typename R::state ecu_warp_reduce(typename R::state s, double p0) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) s = R::merge(s, ecu_shfl_down(s, d), p0);
    return s;
}

/* ----------------------------------------------------------- the kernels */

extern __shared__ __align__(16) unsigned char ecu_smem[];

/* Store the finished state of output o, or its partial state for split y. */
template <class R>
static __device__ __forceinline__ void ecu_red_emit(const typename R::state& s, const ecu_geo& og,
                                                    const ecu_rprm& p, int64_t o, int y) {
    static_assert(sizeof(typename R::state) <= ECU_RED_SLOT, "a state must fit its slot");
    if (gridDim.y > 1) {
        *reinterpret_cast<typename R::state*>(p.ws + ((int64_t)y * p.nout + o) * ECU_RED_SLOT) = s;
        return;
    }
    int64_t off[3];
    if (p.nout < (1ll << 31))
        ecu_offsets32<3>(og, (uint32_t)o, off);
    else
        ecu_offsets64<3>(og, o, off);
    R::store(s, p, p.out + off[0], p.idx ? p.idx + off[1] : (char*)0);
}

/* Input byte offset of output o. */
static __device__ __forceinline__ int64_t ecu_red_base(const ecu_geo& og, const ecu_rprm& p,
                                                       int64_t o) {
    int64_t off[3];
    if (p.nout < (1ll << 31))
        ecu_offsets32<3>(og, (uint32_t)o, off);
    else
        ecu_offsets64<3>(og, o, off);
    return off[2];
}

/* Lanes threadIdx.x of a block row threadIdx.y reduce output blockIdx.x *
 * blockDim.y + threadIdx.y over split blockIdx.y of its reduced range.  A
 * reduced range that is one dense run (rg.ndim == 1, unit stride) is read
 * with 16-byte vector loads; any other through its geometry.  blockDim.x is a
 * multiple of 32. */
template <class Op>
__global__ void __launch_bounds__(512) ecu_red_inner(ecu_geo og, ecu_rgeo rg, ecu_rprm p) {
    typedef Op R;
    typedef typename R::state S;
    typedef typename Op::T_in T;
    const int bx = blockDim.x, tx = threadIdx.x;
    const int64_t o = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const int y = blockIdx.y;
    const double p0 = p.p0;
    S s = R::init(p0);
    if (o < p.nout) {
        int64_t lo = (int64_t)y * p.chunk;
        int64_t hi = lo + p.chunk < p.count ? lo + p.chunk : p.count;
        const char* base = p.x + ecu_red_base(og, p, o);
        if (rg.ndim == 1 && rg.stride[0] == (int64_t)sizeof(T)) {
            const T* row = reinterpret_cast<const T*>(base);
            /* up to 16 bytes and 4 elements per load, U loads in flight */
            enum { VEC = sizeof(T) >= 4 ? 16 / sizeof(T) : 4, U = Op::unroll };
            typedef ecu_vec<T, VEC> V;
            uint64_t addr = (uint64_t)reinterpret_cast<unsigned long long>(row + lo);
            const uint64_t align = sizeof(V);
            int64_t head = (int64_t)(((align - (addr % align)) % align) / sizeof(T));
            if (head > hi - lo) head = hi - lo;
            if (tx < head) s = R::fold(s, row[lo + tx], lo + tx, p0);
            int64_t start = lo + head;
            int64_t nvec = (hi - start) / VEC;
            const V* vp = reinterpret_cast<const V*>(row + start);
            int64_t v = tx;
            for (; v + (U - 1) * bx < nvec; v += U * bx) {
                V a[U];
#pragma unroll
                for (int u = 0; u < U; u++) a[u] = vp[v + u * bx];
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int k = 0; k < VEC; k++)
                        s = R::fold(s, a[u].v[k], start + (v + u * bx) * VEC + k, p0);
            }
            for (; v < nvec; v += bx) {
                V a0 = vp[v];
#pragma unroll
                for (int k = 0; k < VEC; k++) s = R::fold(s, a0.v[k], start + v * VEC + k, p0);
            }
            for (int64_t i = start + nvec * VEC + tx; i < hi; i += bx) s = R::fold(s, row[i], i, p0);
        } else if (rg.ndim <= 1) {
            enum { U = Op::unroll };
            const int64_t st = rg.ndim ? rg.stride[0] : 0;
            int64_t r = lo + tx;
            for (; r + (U - 1) * bx < hi; r += U * bx) {
                T a[U];
#pragma unroll
                for (int u = 0; u < U; u++) a[u] = *reinterpret_cast<const T*>(base + (r + u * bx) * st);
#pragma unroll
                for (int u = 0; u < U; u++) s = R::fold(s, a[u], r + u * bx, p0);
            }
            for (; r < hi; r += bx) s = R::fold(s, *reinterpret_cast<const T*>(base + r * st), r, p0);
        } else {
            for (int64_t r = lo + tx; r < hi; r += bx)
                s = R::fold(s, *reinterpret_cast<const T*>(base + ecu_roff(rg, r)), r, p0);
        }
    }
    s = ecu_warp_reduce<R>(s, p0);
    if (bx > 32) {
        /* one slot per warp: warps of row ty are slots ty * (bx / 32) + w */
        S* part = reinterpret_cast<S*>(ecu_smem);
        const int wpr = bx >> 5, w = tx >> 5;
        if ((tx & 31) == 0) part[threadIdx.y * wpr + w] = s;
        __syncthreads();
        if (tx == 0)
            for (int k = 1; k < wpr; k++) s = R::merge(s, part[threadIdx.y * wpr + k], p0);
    }
    if (tx == 0 && o < p.nout) ecu_red_emit<R>(s, og, p, o, y);
}

/* Thread threadIdx.x of a block reduces output blockIdx.x * blockDim.x +
 * threadIdx.x, together with the blockDim.y threads of its column, over split
 * blockIdx.y: neighbouring outputs are neighbours in memory, so a warp's loads
 * are coalesced.  Also the kernel for short reduced ranges (one thread per
 * output). */
template <class Op>
__global__ void __launch_bounds__(512) ecu_red_outer(ecu_geo og, ecu_rgeo rg, ecu_rprm p) {
    typedef Op R;
    typedef typename R::state S;
    typedef typename Op::T_in T;
    const int tx = threadIdx.x, ty = threadIdx.y, by = blockDim.y;
    const int64_t o = (int64_t)blockIdx.x * blockDim.x + tx;
    const int y = blockIdx.y;
    const double p0 = p.p0;
    S s = R::init(p0);
    if (o < p.nout) {
        int64_t lo = (int64_t)y * p.chunk;
        int64_t hi = lo + p.chunk < p.count ? lo + p.chunk : p.count;
        const char* base = p.x + ecu_red_base(og, p, o);
        int64_t r = lo + ty;
        if (rg.ndim <= 1) {
            const int64_t st = rg.ndim ? rg.stride[0] : 0;
            enum { U = Op::unroll };
            for (; r + (U - 1) * by < hi; r += U * by) {
                T a[U];
#pragma unroll
                for (int u = 0; u < U; u++) a[u] = *reinterpret_cast<const T*>(base + (r + u * by) * st);
#pragma unroll
                for (int u = 0; u < U; u++) s = R::fold(s, a[u], r + u * by, p0);
            }
            for (; r < hi; r += by) s = R::fold(s, *reinterpret_cast<const T*>(base + r * st), r, p0);
        } else {
            for (; r < hi; r += by)
                s = R::fold(s, *reinterpret_cast<const T*>(base + ecu_roff(rg, r)), r, p0);
        }
    }
    if (by > 1) {
        S* part = reinterpret_cast<S*>(ecu_smem);
        part[ty * blockDim.x + tx] = s;
        __syncthreads();
        for (int h = by >> 1; h > 0; h >>= 1) {
            if (ty < h) {
                s = R::merge(s, part[(ty + h) * blockDim.x + tx], p0);
                part[ty * blockDim.x + tx] = s;
            }
            __syncthreads();
        }
    }
    if (ty == 0 && o < p.nout) ecu_red_emit<R>(s, og, p, o, y);
}

/* Second pass of a split reduction: warp threadIdx.y of the block merges the
 * gy partial states of output blockIdx.x * blockDim.y + threadIdx.y in a
 * fixed order and stores the result. */
template <class Op>
__global__ void __launch_bounds__(256) ecu_red_final(ecu_geo og, ecu_rprm p, int gy) {
    typedef Op R;
    typedef typename R::state S;
    const int tx = threadIdx.x;
    const int64_t o = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const double p0 = p.p0;
    S s = R::init(p0);
    if (o < p.nout)
        for (int k = tx; k < gy; k += 32)
            s = R::merge(s, *reinterpret_cast<const S*>(p.ws + ((int64_t)k * p.nout + o) * ECU_RED_SLOT), p0);
    s = ecu_warp_reduce<R>(s, p0);
    if (tx == 0 && o < p.nout) {
        int64_t off[3];
        if (p.nout < (1ll << 31))
            ecu_offsets32<3>(og, (uint32_t)o, off);
        else
            ecu_offsets64<3>(og, o, off);
        R::store(s, p, p.out + off[0], p.idx ? p.idx + off[1] : (char*)0);
    }
}

/* ------------------------------------------------------------------- scans */

/* Scan ops: a state for a segment of the line (ident() for the empty one),
 * make(value, index) for one element, combine(earlier, later) -- associative,
 * not always commutative (cummax's ties go to the later index) -- and
 * store(state, ...) for an output.  Accumulation as in reduce.c's ec_scan:
 * double for floats, int64 (wrapping) for integers, or double when an
 * integer input scans into a floating-point output (`fl`). */

struct ecu_sprm {
    int64_t len;      /* elements per line */
    int64_t nlines;
    int64_t chunk;    /* elements per split of a line (gridDim.y splits) */
    int64_t ost, ist, xst; /* byte strides along the scanned dim: out, in, idx */
    char* out;
    const char* x;
    char* idx;
    char* ws;         /* chunk totals, ECU_RED_SLOT bytes each, line-major */
    int32_t out_dtype, fl;
};

template <class D, bool PROD>
struct S_ACC {
    typedef typename D::T T_in;
    enum { is_float = D::kind == ECU_KIND_F };
    struct state {
        int64_t i;
        double f;
    };
    static __device__ __forceinline__ state ident() {
        state s;
        s.i = PROD ? 1 : 0;
        s.f = PROD ? 1.0 : 0.0;
        return s;
    }
    static __device__ __forceinline__ state make(T_in v, int64_t) {
        state s;
        if (is_float) {
            s.f = (double)D::load(v);
            s.i = 0;
        } else {
            s.i = (int64_t)D::load(v);
            s.f = (double)s.i;
        }
        return s;
    }
    static __device__ __forceinline__ state combine(state a, state b) {
        if (PROD) {
            a.i = (int64_t)((uint64_t)a.i * (uint64_t)b.i);
            a.f *= b.f;
        } else {
            a.i = (int64_t)((uint64_t)a.i + (uint64_t)b.i);
            a.f += b.f;
        }
        return a;
    }
    static __device__ __forceinline__ void store(state s, const ecu_sprm& p, char* o, char*) {
        if (is_float || p.fl)
            ecu_store_f(p.out_dtype, o, s.f);
        else
            ecu_store_i(p.out_dtype, o, s.i);
    }
};

template <class D>
struct S_CUMSUM : S_ACC<D, false> {};
template <class D>
struct S_CUMPROD : S_ACC<D, true> {};

template <class D, bool MAX>
struct S_CUMEXT {
    typedef typename D::T T_in;
    typedef typename ecu_if<D::kind == ECU_KIND_F, typename D::C, int64_t>::type V;
    struct state {
        V v;
        int64_t i; /* -1: empty */
    };
    static __device__ __forceinline__ state ident() {
        state s;
        s.v = 0;
        s.i = -1;
        return s;
    }
    static __device__ __forceinline__ state make(T_in v, int64_t j) {
        state s;
        s.v = (V)D::load(v);
        s.i = j;
        return s;
    }
    /* the running best: a NaN, once seen, stays; ties move to the later index */
    static __device__ __forceinline__ state combine(state a, state b) {
        if (b.i < 0) return a;
        if (a.i < 0) return b;
        if (D::kind == ECU_KIND_F) {
            if (a.v != a.v) return a;
            if (b.v != b.v) return b;
        }
        return (MAX ? b.v >= a.v : b.v <= a.v) ? b : a;
    }
    static __device__ __forceinline__ void store(state s, const ecu_sprm& p, char* o, char* ix) {
        if (D::kind == ECU_KIND_F)
            ecu_store_f(p.out_dtype, o, (double)s.v);
        else
            ecu_store_i(p.out_dtype, o, (int64_t)s.v);
        if (ix) *(int64_t*)ix = s.i;
    }
};

template <class D>
struct S_CUMMAX : S_CUMEXT<D, true> {};
template <class D>
struct S_CUMMIN : S_CUMEXT<D, false> {};

/* log(cumsum(exp(x))) in double: state (m, s) is exp(m) * s. */
template <class D>
struct S_LOGCUMSUMEXP {
    typedef typename D::T T_in;
    struct state {
        double m, s;
    };
    static __device__ __forceinline__ state ident() {
        state r;
        r.m = -INFINITY;
        r.s = 0;
        return r;
    }
    static __device__ __forceinline__ state make(T_in v, int64_t) {
        state r;
        r.m = (double)D::load(v);
        r.s = r.m == -INFINITY ? 0.0 : 1.0;
        return r;
    }
    static __device__ __forceinline__ state combine(state a, state b) {
        if (a.m != a.m || b.m == -INFINITY) return a;
        if (b.m != b.m || a.m == -INFINITY) return b;
        double m = a.m > b.m ? a.m : b.m;
        state r;
        r.m = m;
        r.s = a.s * exp(a.m - m) + b.s * exp(b.m - m);
        return r;
    }
    static __device__ __forceinline__ void store(state r, const ecu_sprm& p, char* o, char*) {
        double m = r.m;
        ecu_store_f(p.out_dtype, o, m != m || m == INFINITY || m == -INFINITY ? m : m + log(r.s));
    }
};

/* Byte offsets of line l in out, in and idx (the line geometry's operands). */
static __device__ __forceinline__ void ecu_line_offsets(const ecu_geo& lg, int64_t l,
                                                        int64_t (&off)[3]) {
    if (lg.numel < (1ll << 31))
        ecu_offsets32<3>(lg, (uint32_t)l, off);
    else
        ecu_offsets64<3>(lg, l, off);
}

/* One thread per line, sequentially along it (the CPU's loop): for many
 * lines, which are neighbours in memory when the scanned dim is not the
 * innermost one. */
template <class Op>
__global__ void __launch_bounds__(256) ecu_scan_seq(ecu_geo lg, ecu_sprm p) {
    typedef typename Op::state S;
    typedef typename Op::T_in T;
    const int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= p.nlines) return;
    int64_t off[3];
    ecu_line_offsets(lg, l, off);
    char* o = p.out + off[0];
    const char* x = p.x + off[1];
    char* ix = p.idx ? p.idx + off[2] : (char*)0;
    S acc = Op::ident();
    for (int64_t j = 0; j < p.len; j++) {
        acc = Op::combine(acc, Op::make(*reinterpret_cast<const T*>(x + j * p.ist), j));
        Op::store(acc, p, o + j * p.ost, ix ? ix + j * p.xst : (char*)0);
    }
}

/* The in-order combination of every thread's state in the block (the result
 * in every thread).  Lane i merges lane i + d for d = 1, 2, 4, ... so that
 * segments combine left to right. */
template <class Op>
static __device__ __forceinline__ typename Op::state ecu_block_ordered(typename Op::state s) {
    typedef typename Op::state S;
    S* part = reinterpret_cast<S*>(ecu_smem);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        S o = ecu_shfl<ECU_SHFL_DOWN>(s, d);
        if ((lane & (2 * d - 1)) == 0 && lane + d < 32) s = Op::combine(s, o);
    }
    __syncthreads();
    if (lane == 0) part[w] = s;
    __syncthreads();
    S r = Op::ident();
    for (int k = 0; k < nw; k++) r = Op::combine(r, part[k]);
    __syncthreads();
    return r;
}

/* Blocks (line blockIdx.x, split blockIdx.y) scan a split of a line in tiles
 * of blockDim.x * ECU_SCAN_ITEMS elements: each thread scans its items, the
 * block scans the threads' totals in order, and a carry runs from tile to
 * tile.  mode 0 only computes the split's total (first pass of a split line,
 * into ws); mode 1 scans, starting from the in-order total of the earlier
 * splits when the line is split. */
#define ECU_SCAN_ITEMS 4

template <class Op>
__global__ void __launch_bounds__(256) ecu_scan_line(ecu_geo lg, ecu_sprm p, int mode) {
    typedef typename Op::state S;
    typedef typename Op::T_in T;
    S* part = reinterpret_cast<S*>(ecu_smem);
    const int tx = threadIdx.x, lane = tx & 31, w = tx >> 5, nw = blockDim.x >> 5;
    const int64_t l = blockIdx.x;
    const int c = blockIdx.y, gy = gridDim.y;
    int64_t off[3];
    ecu_line_offsets(lg, l, off);
    char* o = p.out + off[0];
    const char* x = p.x + off[1];
    char* ix = p.idx ? p.idx + off[2] : (char*)0;
    S carry = Op::ident();
    if (mode == 1 && c > 0) {
        /* the earlier splits' totals, combined in order */
        const int per = (c + blockDim.x - 1) / blockDim.x;
        S s = Op::ident();
        for (int k = tx * per; k < c && k < (tx + 1) * per; k++)
            s = Op::combine(s, *reinterpret_cast<const S*>(p.ws + (l * gy + k) * ECU_RED_SLOT));
        carry = ecu_block_ordered<Op>(s);
    }
    const int64_t lo = (int64_t)c * p.chunk;
    const int64_t hi = lo + p.chunk < p.len ? lo + p.chunk : p.len;
    const int64_t tile = (int64_t)blockDim.x * ECU_SCAN_ITEMS;
    for (int64_t t0 = lo; t0 < hi; t0 += tile) {
        const int64_t j0 = t0 + (int64_t)tx * ECU_SCAN_ITEMS;
        S item[ECU_SCAN_ITEMS];
        S s = Op::ident();
#pragma unroll
        for (int k = 0; k < ECU_SCAN_ITEMS; k++) {
            int64_t j = j0 + k;
            item[k] = j < hi ? Op::make(*reinterpret_cast<const T*>(x + j * p.ist), j) : Op::ident();
            s = Op::combine(s, item[k]);
        }
        /* inclusive scan of the threads' totals within the warp, in order */
        S inc = s;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            S u = ecu_shfl<ECU_SHFL_UP>(inc, d);
            if (lane >= d) inc = Op::combine(u, inc);
        }
        if (lane == 31) part[w] = inc;
        __syncthreads();
        if (w == 0) {
            S wt = lane < nw ? part[lane] : Op::ident();
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                S u = ecu_shfl<ECU_SHFL_UP>(wt, d);
                if (lane >= d) wt = Op::combine(u, wt);
            }
            if (lane < nw) part[lane] = wt;
        }
        __syncthreads();
        S before = ecu_shfl<ECU_SHFL_UP>(inc, 1); /* lane - 1's inclusive */
        S pre = w > 0 ? Op::combine(carry, part[w - 1]) : carry;
        if (lane > 0) pre = Op::combine(pre, before);
        if (mode == 1) {
#pragma unroll
            for (int k = 0; k < ECU_SCAN_ITEMS; k++) {
                int64_t j = j0 + k;
                pre = Op::combine(pre, item[k]);
                if (j < hi) Op::store(pre, p, o + j * p.ost, ix ? ix + j * p.xst : (char*)0);
            }
        }
        carry = Op::combine(carry, part[nw - 1]);
        __syncthreads(); /* part is rewritten by the next tile */
    }
    if (mode == 0 && tx == 0)
        *reinterpret_cast<S*>(p.ws + (l * gy + c) * ECU_RED_SLOT) = carry;
}

#endif
