/* The CUDA launcher of ec_matmul: matrix products on cuBLAS.
 *
 * Note [cuBLAS]
 * libcublas is opened with dlopen at first use, from the path Python found
 * with cuda-pathfinder (the nvidia-cublas wheel) or by soname (a system
 * toolkit); see ember_core/_cuda/blas.py.  Every thread gets one handle per
 * device (from a pool, returned when the thread exits), bound to the thread's
 * current stream before each product (cublasSetStream only when it changed).
 * Binding a stream resets cuBLAS to its own default workspace, so each
 * (device, stream) pair gets a workspace from ember_allocator, allocated on that
 * stream by the Python callback ecu_py_blas_workspace and kept for the life of
 * the process, as PyTorch does: work on one stream runs in order, so handles of
 * several threads can share a stream's workspace, while two streams never do.
 *
 * ec_matmul's operands are row-major-or-not matrices with a row and a column
 * stride each; cuBLAS wants column-major matrices with a leading dimension and
 * an optional transpose.  Note [GEMM plan] (ecu_gemm_plan_make) maps one onto
 * the other: a matrix with a unit column stride is the transpose of a
 * column-major one, a matrix with a unit row stride is column-major; C decides
 * whether cuBLAS computes C (C column-major) or C^T = B^T A^T (C row-major).
 * An operand that fits neither form needs a dense copy, which the Python side
 * makes before calling (kernels never allocate): it asks ecu_gemm_copies.
 *
 * Types: float32 (TF32 when ember.backends.cuda.matmul.allow_tf32), float64,
 * float16 and bfloat16 with float32 accumulation (reduced-precision reductions
 * unless the allow_*_reduced_precision_reduction switch is off).  Integer and
 * bool products raise NotImplementedError, as PyTorch's CUDA does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublas.h"
#include "launch.h"

#define BLAS_MAX_DEVICES 64
#define INT32_LIMIT 2147483647LL

/* ------------------------------------------------------------ Note [GEMM plan] */

static int64_t max1(int64_t x) { return x > 1 ? x : 1; }

/* X (rows x cols, strides rs and cs in elements) as op(S), S column-major with
 * leading dimension ld: S = X^T (trans 1) when X's columns are adjacent, S = X
 * (trans 0) when its rows are.  A size-1 dim's stride is never used for
 * addressing, so it does not matter.  0 when neither fits (a copy is needed). */
static int colmajor(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int* trans, int64_t* ld) {
    if (cs == 1 || cols == 1) { /* row-major: S = X^T is cols x rows */
        int64_t l = rows > 1 ? rs : max1(cols);
        if (l >= max1(cols) && l <= INT32_LIMIT) {
            *trans = 1;
            *ld = l;
            return 1;
        }
    }
    if (rs == 1 || rows == 1) { /* column-major: S = X is rows x cols */
        int64_t l = cols > 1 ? cs : max1(rows);
        if (l >= max1(rows) && l <= INT32_LIMIT) {
            *trans = 0;
            *ld = l;
            return 1;
        }
    }
    return 0;
}

int ecu_gemm_plan_make(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_bs,
                       int64_t a_rs, int64_t a_cs, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                       int64_t c_bs, int64_t c_rs, int64_t c_cs, ecu_gemm_plan* p) {
    memset(p, 0, sizeof *p);
    if (batch < 0 || m < 0 || n < 0 || k < 0)
        return ec_fail(EC_ERR_INVALID, "matmul: negative size");
    p->m = m;
    p->n = n;
    p->k = k;
    if (batch == 0 || m == 0 || n == 0 || k == 0) return EC_OK; /* no GEMM runs */
    if (m > INT32_LIMIT || n > INT32_LIMIT || k > INT32_LIMIT)
        return ec_fail(EC_ERR_INVALID,
                       "matmul on CUDA: sizes %lld x %lld x %lld exceed cuBLAS's limit of "
                       "2^31 - 1 per dimension", (long long)m, (long long)n, (long long)k);
    if (batch == 1) a_bs = b_bs = c_bs = 0;
    int ta = 0, tb = 0, tc = 0;
    int64_t la = 0, lb = 0, lc = 0;
    /* a copy is dense row-major: strides (rows * cols or 0 when broadcast, cols, 1) */
    if (!colmajor(m, k, a_rs, a_cs, &ta, &la) || a_bs < 0) {
        p->copy |= ECU_GEMM_COPY_A;
        ta = 1, la = max1(k), a_bs = a_bs == 0 ? 0 : m * k;
    }
    if (!colmajor(k, n, b_rs, b_cs, &tb, &lb) || b_bs < 0) {
        p->copy |= ECU_GEMM_COPY_B;
        tb = 1, lb = max1(n), b_bs = b_bs == 0 ? 0 : k * n;
    }
    if (!colmajor(m, n, c_rs, c_cs, &tc, &lc) || c_bs < 0) {
        p->copy |= ECU_GEMM_COPY_C;
        tc = 1, lc = max1(n), c_bs = c_bs == 0 ? 0 : m * n;
    }
    /* every product writes the same C: run them one after another, as the CPU does */
    p->loop = batch > 1 && c_bs == 0;
    if (tc) { /* C row-major: cuBLAS computes C^T (n x m) = B^T A^T */
        p->swap = 1;
        p->m = n;
        p->n = m;
        p->transa = !tb;
        p->lda = lb;
        p->stride_a = b_bs;
        p->transb = !ta;
        p->ldb = la;
        p->stride_b = a_bs;
    } else { /* C column-major: cuBLAS computes C (m x n) = A B */
        p->transa = ta;
        p->lda = la;
        p->stride_a = a_bs;
        p->transb = tb;
        p->ldb = lb;
        p->stride_b = b_bs;
    }
    p->ldc = lc;
    p->stride_c = c_bs;
    return EC_OK;
}

int ecu_gemm_copies(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_bs, int64_t a_rs,
                    int64_t a_cs, int64_t b_bs, int64_t b_rs, int64_t b_cs, int64_t c_bs,
                    int64_t c_rs, int64_t c_cs) {
    ecu_gemm_plan p;
    if (ecu_gemm_plan_make(batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs,
                           &p) != EC_OK)
        return 0; /* the launcher reports it */
    return p.copy;
}

/* ------------------------------------------------------------------ switches */

static volatile int blas_flags = ECU_BLAS_ALLOW_FP16_REDUCED | ECU_BLAS_ALLOW_BF16_REDUCED;

void ecu_blas_set_flags(int flags) { __atomic_store_n(&blas_flags, flags, __ATOMIC_RELAXED); }
int ecu_blas_get_flags(void) { return __atomic_load_n(&blas_flags, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------------- loading */

static ecu_cublas cublas;
static struct {
    pthread_mutex_t lock;
    int loaded;
    char path[512];
} blas_lib = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define BLAS_SYM(field, name)                                                          \
    do {                                                                               \
        *(void**)(&c.field) = dlsym(h, name);                                          \
        if (!c.field) {                                                                \
            st = ec_fail(EC_ERR_CUDA_UNAVAILABLE, "%s lacks %s: cuBLAS 12 or newer is " \
                         "needed", where, name);                                       \
            goto out;                                                                  \
        }                                                                              \
    } while (0)

int ecu_blas_load(const char* path) {
    int st = EC_OK;
    pthread_mutex_lock(&blas_lib.lock);
    if (blas_lib.loaded) goto out_unlocked;
    static const char* sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    void* h = NULL;
    const char* where = path && path[0] ? path : NULL;
    if (where) {
        h = dlopen(where, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; i < sizeof sonames / sizeof sonames[0] && !h; i++) {
            h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
            if (h) where = sonames[i];
        }
    }
    if (!h) {
        const char* why = dlerror();
        st = ec_fail(EC_ERR_CUDA_UNAVAILABLE,
                     "cuBLAS (libcublas) could not be loaded%s%s: %s; install the nvidia-cublas "
                     "wheel (pip install 'ember-tensor-core[cuda]') or put a CUDA toolkit's "
                     "lib64 on the library path",
                     path && path[0] ? " from " : "", path && path[0] ? path : "",
                     why ? why : "not found");
        goto out_unlocked;
    }
    ecu_cublas c;
    memset(&c, 0, sizeof c);
    BLAS_SYM(Create, "cublasCreate_v2");
    BLAS_SYM(SetStream, "cublasSetStream_v2");
    BLAS_SYM(SetWorkspace, "cublasSetWorkspace_v2");
    BLAS_SYM(SetMathMode, "cublasSetMathMode");
    BLAS_SYM(GetVersion, "cublasGetVersion_v2");
    BLAS_SYM(GemmEx, "cublasGemmEx");
    BLAS_SYM(GemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    *(void**)(&c.GetStatusString) = dlsym(h, "cublasGetStatusString");
    cublas = c;
    snprintf(blas_lib.path, sizeof blas_lib.path, "%s", where);
    __atomic_store_n(&blas_lib.loaded, 1, __ATOMIC_RELEASE);
out:
    if (st != EC_OK) dlclose(h);
out_unlocked:
    pthread_mutex_unlock(&blas_lib.lock);
    return st;
}

int ecu_blas_loaded(void) { return __atomic_load_n(&blas_lib.loaded, __ATOMIC_ACQUIRE); }

static int blas_check(ecu_cublasStatus_t s, const char* what) {
    if (s == ECU_CUBLAS_STATUS_SUCCESS) return EC_OK;
    const char* text = cublas.GetStatusString ? cublas.GetStatusString(s) : NULL;
    if (s == ECU_CUBLAS_STATUS_ALLOC_FAILED)
        return ec_fail(EC_ERR_NOMEM, "cuBLAS could not allocate memory in %s (%s)", what,
                       text ? text : "CUBLAS_STATUS_ALLOC_FAILED");
    return ec_fail(EC_ERR_CUDA, "cuBLAS error in %s: %s (status %d)", what,
                   text ? text : "unknown status", s);
}

/* ------------------------------------------- handles, streams and workspaces */

typedef struct {
    ecu_cublasHandle_t h;
    uint64_t stream; /* the stream the handle is bound to (valid when bound) */
    int bound;
    int math; /* the math mode set on the handle */
} blas_slot;

typedef struct {
    blas_slot dev[BLAS_MAX_DEVICES];
} blas_thread;

static _Thread_local blas_thread* tls_blas = NULL;
static pthread_key_t blas_key;
static pthread_once_t blas_key_once = PTHREAD_ONCE_INIT;

/* Handles of threads that exited, per device, for the next thread. */
static struct {
    pthread_mutex_t lock;
    ecu_cublasHandle_t* free[BLAS_MAX_DEVICES];
    int nfree[BLAS_MAX_DEVICES], cap[BLAS_MAX_DEVICES];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void thread_exit(void* p) {
    blas_thread* t = p;
    pthread_mutex_lock(&pool.lock);
    for (int d = 0; d < BLAS_MAX_DEVICES; d++) {
        if (!t->dev[d].h) continue;
        if (pool.nfree[d] == pool.cap[d]) {
            int cap = pool.cap[d] ? 2 * pool.cap[d] : 8;
            ecu_cublasHandle_t* f = realloc(pool.free[d], sizeof *f * (size_t)cap);
            if (!f) continue; /* keep the handle alive rather than fail at exit */
            pool.free[d] = f;
            pool.cap[d] = cap;
        }
        pool.free[d][pool.nfree[d]++] = t->dev[d].h;
    }
    pthread_mutex_unlock(&pool.lock);
    free(t);
}

static void make_key(void) { pthread_key_create(&blas_key, thread_exit); }

/* Workspaces by (device, stream). */
typedef struct {
    int device;
    uint64_t stream, ptr, nbytes;
} workspace;

static struct {
    pthread_mutex_t lock;
    workspace* items;
    size_t n, cap;
} spaces = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int workspace_for(int device, uint64_t stream, uint64_t* ptr, uint64_t* nbytes) {
    pthread_mutex_lock(&spaces.lock);
    for (size_t i = 0; i < spaces.n; i++)
        if (spaces.items[i].device == device && spaces.items[i].stream == stream) {
            *ptr = spaces.items[i].ptr;
            *nbytes = spaces.items[i].nbytes;
            pthread_mutex_unlock(&spaces.lock);
            return EC_OK;
        }
    pthread_mutex_unlock(&spaces.lock);
    /* allocate outside the lock: the callback takes the GIL */
    uint64_t p = 0, nb = 0;
    int st = ecu_py_blas_workspace(device, stream, &p, &nb);
    if (st != EC_OK || (nb && !p))
        return ec_fail(EC_ERR_NOMEM,
                       "cuBLAS: its workspace could not be allocated on cuda:%d (out of memory; "
                       "CUBLAS_WORKSPACE_CONFIG=:4096:1 asks for a smaller one)", device);
    pthread_mutex_lock(&spaces.lock);
    for (size_t i = 0; i < spaces.n; i++)
        if (spaces.items[i].device == device && spaces.items[i].stream == stream) {
            /* another thread got there first; ours stays allocated (rare, bounded) */
            *ptr = spaces.items[i].ptr;
            *nbytes = spaces.items[i].nbytes;
            pthread_mutex_unlock(&spaces.lock);
            return EC_OK;
        }
    if (spaces.n == spaces.cap) {
        size_t cap = spaces.cap ? 2 * spaces.cap : 8;
        workspace* w = realloc(spaces.items, sizeof *w * cap);
        if (!w) {
            pthread_mutex_unlock(&spaces.lock);
            return ec_fail(EC_ERR_NOMEM, "cuBLAS: out of host memory");
        }
        spaces.items = w;
        spaces.cap = cap;
    }
    spaces.items[spaces.n++] = (workspace){device, stream, p, nb};
    pthread_mutex_unlock(&spaces.lock);
    *ptr = p;
    *nbytes = nb;
    return EC_OK;
}

/* This thread's handle for the current device, bound to its current stream
 * with that stream's workspace, in math mode `math`. */
static int blas_handle(int math, ecu_cublasHandle_t* out) {
    int dev = ecu_device();
    if (dev < 0 || dev >= BLAS_MAX_DEVICES)
        return ec_fail(EC_ERR_INVALID, "cuBLAS: device %d is beyond ember's limit", dev);
    blas_thread* t = tls_blas;
    if (!t) {
        pthread_once(&blas_key_once, make_key);
        t = calloc(1, sizeof *t);
        if (!t) return ec_fail(EC_ERR_NOMEM, "cuBLAS: out of host memory");
        pthread_setspecific(blas_key, t);
        tls_blas = t;
    }
    blas_slot* s = &t->dev[dev];
    if (!s->h) {
        pthread_mutex_lock(&pool.lock);
        if (pool.nfree[dev] > 0) s->h = pool.free[dev][--pool.nfree[dev]];
        pthread_mutex_unlock(&pool.lock);
        if (!s->h) {
            int st = blas_check(cublas.Create(&s->h), "cublasCreate");
            if (st != EC_OK) {
                s->h = NULL;
                return st;
            }
        }
        s->bound = 0;
        s->math = -1;
    }
    uint64_t stream = ecu_current_stream(dev);
    if (!s->bound || s->stream != stream) {
        uint64_t ws = 0, wsize = 0;
        int st = workspace_for(dev, stream, &ws, &wsize);
        if (st != EC_OK) return st;
        st = blas_check(cublas.SetStream(s->h, (ecu_cudaStream_t)(uintptr_t)stream),
                        "cublasSetStream");
        /* after SetStream: it resets the workspace to cuBLAS's own */
        if (st == EC_OK && wsize)
            st = blas_check(cublas.SetWorkspace(s->h, (void*)(uintptr_t)ws, (size_t)wsize),
                            "cublasSetWorkspace");
        if (st != EC_OK) {
            s->bound = 0;
            return st;
        }
        s->stream = stream;
        s->bound = 1;
    }
    if (s->math != math) {
        int st = blas_check(cublas.SetMathMode(s->h, math), "cublasSetMathMode");
        if (st != EC_OK) return st;
        s->math = math;
    }
    *out = s->h;
    return EC_OK;
}

/* ------------------------------------------------------------------ launcher */

static const char* torch_name(int dtype) {
    switch (dtype) {
        case EC_BOOL: return "Bool";
        case EC_UINT8: return "Byte";
        case EC_INT8: return "Char";
        case EC_INT16: return "Short";
        case EC_INT32: return "Int";
        case EC_INT64: return "Long";
        default: return "?";
    }
}

/* k == 0: the product is empty, C = beta C (C is not read when beta is 0). */
static int scale_c(int dtype, int64_t batch, int64_t m, int64_t n, double beta, ec_ptr c,
                   int64_t c_bs, int64_t c_rs, int64_t c_cs) {
    if (beta == 1) return EC_OK;
    int64_t layout[9] = {batch, m, n, c_bs, c_rs, c_cs, c_bs, c_rs, c_cs};
    if (beta == 0) return ecu_fill(3, layout, c, dtype, 0.0, 0);
    return ecu_binary_scalar(EC_B_MUL, dtype, 3, layout, c, c, beta, 0, 0, 0.0);
}

int ecu_matmul(int dtype, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
               ec_ptr a, int64_t a_bs, int64_t a_rs, int64_t a_cs, ec_ptr b, int64_t b_bs,
               int64_t b_rs, int64_t b_cs, double beta, ec_ptr c, int64_t c_bs, int64_t c_rs,
               int64_t c_cs) {
    int flags = ecu_blas_get_flags();
    int type, compute = ECU_CUBLAS_COMPUTE_32F, math = ECU_CUBLAS_DEFAULT_MATH;
    switch (dtype) {
        case EC_FLOAT32:
            type = ECU_CUDA_R_32F;
            if (flags & ECU_BLAS_ALLOW_TF32) {
                compute = ECU_CUBLAS_COMPUTE_32F_FAST_TF32;
                math = ECU_CUBLAS_TF32_TENSOR_OP_MATH;
            }
            break;
        case EC_FLOAT64:
            type = ECU_CUDA_R_64F;
            compute = ECU_CUBLAS_COMPUTE_64F;
            break;
        case EC_FLOAT16:
            type = ECU_CUDA_R_16F;
            if (!(flags & ECU_BLAS_ALLOW_FP16_REDUCED))
                math |= ECU_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
            break;
        case EC_BFLOAT16:
            type = ECU_CUDA_R_16BF;
            if (!(flags & ECU_BLAS_ALLOW_BF16_REDUCED))
                math |= ECU_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
            break;
        default:
            if (!ec_valid_dtype(dtype))
                return ec_fail(EC_ERR_INVALID, "matmul: bad dtype %d", dtype);
            return ec_fail(EC_ERR_DTYPE, "\"%s\" not implemented for '%s'",
                           batch > 1 ? "bmm_cuda" : "addmm_cuda", torch_name(dtype));
    }
    if (batch < 0 || m < 0 || n < 0 || k < 0)
        return ec_fail(EC_ERR_INVALID, "matmul: negative size");
    if (batch == 0 || m == 0 || n == 0) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    if (k == 0) return scale_c(dtype, batch, m, n, beta, c, c_bs, c_rs, c_cs);
    if (!ecu_blas_loaded())
        return ec_fail(EC_ERR_CUDA_UNAVAILABLE,
                       "matmul on CUDA: cuBLAS is not loaded (ember_core._cuda.blas.load() "
                       "loads it before the first product)");
    ecu_gemm_plan p;
    st = ecu_gemm_plan_make(batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs,
                            &p);
    if (st != EC_OK) return st;
    if (p.copy)
        return ec_fail(EC_ERR_INVALID,
                       "matmul on CUDA: cuBLAS cannot address operand%s %s%s%s in place (strides "
                       "A %lld,%lld B %lld,%lld C %lld,%lld); pass dense copies",
                       (p.copy & (p.copy - 1)) ? "s" : "", p.copy & ECU_GEMM_COPY_A ? "A" : "",
                       p.copy & ECU_GEMM_COPY_B ? "B" : "", p.copy & ECU_GEMM_COPY_C ? "C" : "",
                       (long long)a_rs, (long long)a_cs, (long long)b_rs, (long long)b_cs,
                       (long long)c_rs, (long long)c_cs);
    ecu_cublasHandle_t h;
    st = blas_handle(math, &h);
    if (st != EC_OK) return st;
    float fa = (float)alpha, fb = (float)beta;
    const void* pa = dtype == EC_FLOAT64 ? (const void*)&alpha : (const void*)&fa;
    const void* pb = dtype == EC_FLOAT64 ? (const void*)&beta : (const void*)&fb;
    int64_t isz = ec_itemsize[dtype];
    const char* A = (const char*)(p.swap ? b : a);
    const char* B = (const char*)(p.swap ? a : b);
    char* C = (char*)c;
    int ta = p.transa ? ECU_CUBLAS_OP_T : ECU_CUBLAS_OP_N;
    int tb = p.transb ? ECU_CUBLAS_OP_T : ECU_CUBLAS_OP_N;
    if (batch == 1 || p.loop) {
        for (int64_t i = 0; i < batch && st == EC_OK; i++)
            st = blas_check(cublas.GemmEx(h, ta, tb, (int)p.m, (int)p.n, (int)p.k, pa,
                                          A + i * p.stride_a * isz, type, (int)p.lda,
                                          B + i * p.stride_b * isz, type, (int)p.ldb, pb, C, type,
                                          (int)p.ldc, compute, ECU_CUBLAS_GEMM_DEFAULT),
                            "cublasGemmEx");
    } else {
        for (int64_t i = 0; i < batch && st == EC_OK; i += INT32_LIMIT) {
            int64_t count = batch - i < INT32_LIMIT ? batch - i : INT32_LIMIT;
            st = blas_check(
                cublas.GemmStridedBatchedEx(
                    h, ta, tb, (int)p.m, (int)p.n, (int)p.k, pa, A + i * p.stride_a * isz, type,
                    (int)p.lda, (long long)p.stride_a, B + i * p.stride_b * isz, type, (int)p.ldb,
                    (long long)p.stride_b, pb, C + i * p.stride_c * isz, type, (int)p.ldc,
                    (long long)p.stride_c, (int)count, compute, ECU_CUBLAS_GEMM_DEFAULT),
                "cublasGemmStridedBatchedEx");
        }
    }
    if (st != EC_OK) { /* say what cuBLAS was asked (a refused argument is a plan bug) */
        char why[300];
        snprintf(why, sizeof why, "%s", ec_last_message());
        return ec_fail(st, "%s; the call was %c%c m=%lld n=%lld k=%lld lda=%lld ldb=%lld "
                       "ldc=%lld strides %lld/%lld/%lld batch %lld, dtype %d",
                       why, ta == ECU_CUBLAS_OP_T ? 'T' : 'N', tb == ECU_CUBLAS_OP_T ? 'T' : 'N',
                       (long long)p.m, (long long)p.n, (long long)p.k, (long long)p.lda,
                       (long long)p.ldb, (long long)p.ldc, (long long)p.stride_a,
                       (long long)p.stride_b, (long long)p.stride_c, (long long)batch, dtype);
    }
    if (ecu_launch_is_blocking()) st = ecu_stream_synchronize((uint64_t)(uintptr_t)ecu_stream());
    return st;
}
