/* Matrix products: BLAS (scipy-openblas32) for float32/float64 and complex64/
 * complex128 (sgemm/dgemm/cgemm/zgemm), float32 BLAS on
 * converted copies for float16/bfloat16, and C loops for integers.
 *
 * Strided operands are handed to BLAS as transposes where one of their strides
 * is 1 (no copy); only an operand with no unit stride is copied first. */
#include <pthread.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core.h"
#include "cblas.h"

void scipy_openblas_set_num_threads(int num_threads);

/* OpenBLAS always runs one thread per call (Note [BLAS threads]); ember's own
 * thread count is applied by blas_gemm. */
void ec_blas_set_num_threads(int n) {
    (void)n;
    scipy_openblas_set_num_threads(1);
}

/* ...except inside LAPACK (linalg.c), which can only thread through OpenBLAS:
 * calls are bracketed with these (nested and concurrent brackets are counted). */
static pthread_mutex_t lapack_lock = PTHREAD_MUTEX_INITIALIZER;
static int lapack_depth = 0;

void ec_blas_threads_begin(void) {
    pthread_mutex_lock(&lapack_lock);
    if (lapack_depth++ == 0) {
        int nt = ec_get_num_threads();
        if (nt > 1) scipy_openblas_set_num_threads(nt);
    }
    pthread_mutex_unlock(&lapack_lock);
}

void ec_blas_threads_end(void) {
    pthread_mutex_lock(&lapack_lock);
    if (--lapack_depth == 0) scipy_openblas_set_num_threads(1);
    pthread_mutex_unlock(&lapack_lock);
}

/* How BLAS sees a (rows x cols) operand with row stride rs and column stride cs:
 * row-major with leading dimension ld, transposed or not.  Returns 0 when
 * neither stride is 1 (the caller copies). */
static int blas_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int* trans, int64_t* ld) {
    if (cs == 1 || cols == 1) {
        int64_t l = rows == 1 ? cols : rs;
        if (l >= (cols > 1 ? cols : 1)) {
            *trans = 0;
            *ld = l;
            return 1;
        }
    }
    if (rs == 1 || rows == 1) {
        int64_t l = cols == 1 ? rows : cs;
        if (l >= (rows > 1 ? rows : 1)) {
            *trans = 1;
            *ld = l;
            return 1;
        }
    }
    return 0;
}

/* Copy a strided (rows x cols) matrix of dtype into contiguous dst of dtype2. */
static int pack(int dtype, const char* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                int dtype2, char* dst) {
    int64_t layout[6] = {rows, cols, cols, 1, rs, cs};
    return ec_copy(2, layout, (ec_ptr)dst, dtype2, (ec_ptr)src, dtype);
}

#define BLAS_INT_MAX 2147483647

/* Products this small cost less as plain loops than as a BLAS call (whose
 * argument checks and dispatch take about a microsecond). */
#define SMALL_GEMM_MACS 4096

#define SMALL_GEMM(T)                                                                        \
    static void small_gemm_##T(int64_t m, int64_t n, int64_t k, double alpha, const T* a,    \
                                int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs,         \
                                int64_t b_cs, double beta, T* c, int64_t c_rs, int64_t c_cs) { \
        for (int64_t i = 0; i < m; i++)                                                       \
            for (int64_t j = 0; j < n; j++) {                                                 \
                T acc = 0;                                                                    \
                for (int64_t p = 0; p < k; p++) acc += a[i * a_rs + p * a_cs] * b[p * b_rs + j * b_cs]; \
                T* o = c + i * c_rs + j * c_cs;                                               \
                *o = beta == 0 ? (T)(alpha * acc) : (T)(alpha * acc + beta * *o);              \
            }                                                                                 \
    }
SMALL_GEMM(float)
SMALL_GEMM(double)
SMALL_GEMM(ec_c64)
SMALL_GEMM(ec_c128)

/* Note [BLAS threads]: OpenBLAS runs single-threaded (its own pool is never used:
 * its waiting threads spin, and on a loaded machine a two-thread product stalls
 * until the descheduled half runs -- a small MLP step took 20x longer).  ember
 * splits a large product into row (or column) blocks of C itself and hands them
 * to its OpenMP threads, which wait passively; a dynamic schedule lets a running
 * thread take the block of one that has not woken up yet. */
#define GEMM_GRAIN_MACS (1 << 20) /* multiply-adds per thread below which one thread runs */
#define GEMM_MIN_BLOCK 64          /* rows (or columns) per block: packing stays amortised */
#define GEMM_BLOCKS_PER_THREAD 1   /* more blocks cost 4-5% (re-packed operands) */

static void blas_call(int dtype, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                      const char* a, int64_t lda, const char* b, int64_t ldb, double beta, char* c,
                      int64_t ldc) {
    if (dtype == EC_COMPLEX64 || dtype == EC_COMPLEX128) {
        /* cgemm/zgemm take alpha and beta by address, as complex numbers */
        double al[2] = {alpha, 0}, be[2] = {beta, 0};
        float alf[2] = {(float)alpha, 0}, bef[2] = {(float)beta, 0};
        int c64 = dtype == EC_COMPLEX64;
        (c64 ? scipy_cblas_cgemm : scipy_cblas_zgemm)(
            CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
            (blasint)m, (blasint)n, (blasint)k, c64 ? (const void*)alf : (const void*)al, a,
            (blasint)lda, b, (blasint)ldb, c64 ? (const void*)bef : (const void*)be, c, (blasint)ldc);
    } else if (dtype == EC_FLOAT32)
        scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                          tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                          (float)alpha, (const float*)a, (blasint)lda, (const float*)b,
                          (blasint)ldb, (float)beta, (float*)c, (blasint)ldc);
    else
        scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                          tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                          alpha, (const double*)a, (blasint)lda, (const double*)b, (blasint)ldb,
                          beta, (double*)c, (blasint)ldc);
}

/* C (row-major, ldc) = alpha op(A) op(B) + beta C, on ember's threads when large. */
static void blas_gemm(int dtype, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                      const char* a, int64_t lda, const char* b, int64_t ldb, double beta, char* c,
                      int64_t ldc) {
    int nt = ec_threads_for(m * n * k, GEMM_GRAIN_MACS);
#ifdef _OPENMP
    if (omp_in_parallel()) nt = 1; /* a product per thread already (bmm, conv per image) */
#endif
    int by_rows = m >= n;
    int64_t len = by_rows ? m : n;
    if (nt > 1 && len < 2 * GEMM_MIN_BLOCK) nt = 1;
    if (nt <= 1) {
        blas_call(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* blocks of whole GEMM_MIN_BLOCK units (full micro-kernel tiles), fixed for a
     * given nt: which thread runs a block never changes the result */
    int64_t units = len / GEMM_MIN_BLOCK;
    int64_t nblocks = GEMM_BLOCKS_PER_THREAD * (int64_t)nt;
    if (nblocks > units) nblocks = units;
    int isz = ec_itemsize[dtype];
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int64_t blk = 0; blk < nblocks; blk++) {
        int64_t lo = units * blk / nblocks * GEMM_MIN_BLOCK;
        int64_t hi = blk == nblocks - 1 ? len : units * (blk + 1) / nblocks * GEMM_MIN_BLOCK;
        if (by_rows) /* rows lo..hi of op(A) and of C */
            blas_call(dtype, ta, tb, hi - lo, n, k, alpha, a + (ta ? lo : lo * lda) * isz, lda,
                      b, ldb, beta, c + lo * ldc * isz, ldc);
        else /* columns lo..hi of op(B) and of C */
            blas_call(dtype, ta, tb, m, hi - lo, k, alpha, a, lda,
                      b + (tb ? lo * ldb : lo) * isz, ldb, beta, c + lo * isz, ldc);
    }
}

/* cblas-shaped entry points for other kernels (conv.c) that want the policy above. */
void ec_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    blas_gemm(EC_FLOAT32, ta, tb, m, n, k, alpha, (const char*)a, lda, (const char*)b, ldb, beta,
              (char*)c, ldc);
}

void ec_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    blas_gemm(EC_FLOAT64, ta, tb, m, n, k, alpha, (const char*)a, lda, (const char*)b, ldb, beta,
              (char*)c, ldc);
}

static int gemm_float(int dtype, int64_t m, int64_t n, int64_t k, double alpha, const char* a,
                      int64_t a_rs, int64_t a_cs, const char* b, int64_t b_rs, int64_t b_cs,
                      double beta, char* c, int64_t c_rs, int64_t c_cs) {
    if (m * n * k <= SMALL_GEMM_MACS) {
        if (dtype == EC_COMPLEX64)
            small_gemm_ec_c64(m, n, k, alpha, (const ec_c64*)a, a_rs, a_cs, (const ec_c64*)b, b_rs,
                              b_cs, beta, (ec_c64*)c, c_rs, c_cs);
        else if (dtype == EC_COMPLEX128)
            small_gemm_ec_c128(m, n, k, alpha, (const ec_c128*)a, a_rs, a_cs, (const ec_c128*)b,
                               b_rs, b_cs, beta, (ec_c128*)c, c_rs, c_cs);
        else if (dtype == EC_FLOAT32)
            small_gemm_float(m, n, k, alpha, (const float*)a, a_rs, a_cs, (const float*)b, b_rs,
                             b_cs, beta, (float*)c, c_rs, c_cs);
        else
            small_gemm_double(m, n, k, alpha, (const double*)a, a_rs, a_cs, (const double*)b, b_rs,
                              b_cs, beta, (double*)c, c_rs, c_cs);
        return EC_OK;
    }
    int isz = ec_itemsize[dtype];
    int ta, tb;
    int64_t lda, ldb;
    char *abuf = NULL, *bbuf = NULL, *cbuf = NULL;
    int st = EC_OK;
    if (!blas_view(m, k, a_rs, a_cs, &ta, &lda)) {
        abuf = malloc((size_t)(m * k) * isz);
        if (!abuf) return ec_fail(EC_ERR_NOMEM, "matmul: no scratch memory");
        pack(dtype, a, m, k, a_rs, a_cs, dtype, abuf);
        a = abuf, ta = 0, lda = k > 0 ? k : 1;
    }
    if (!blas_view(k, n, b_rs, b_cs, &tb, &ldb)) {
        bbuf = malloc((size_t)(k * n) * isz);
        if (!bbuf) { free(abuf); return ec_fail(EC_ERR_NOMEM, "matmul: no scratch memory"); }
        pack(dtype, b, k, n, b_rs, b_cs, dtype, bbuf);
        b = bbuf, tb = 0, ldb = n > 0 ? n : 1;
    }
    /* C must be row-major for cblas; compute into a buffer otherwise */
    char* cc = c;
    int64_t ldc = m == 1 ? (n > 0 ? n : 1) : c_rs;
    if (!(c_cs == 1 || n == 1) || ldc < (n > 1 ? n : 1)) {
        cbuf = malloc((size_t)(m * n) * isz);
        if (!cbuf) { st = ec_fail(EC_ERR_NOMEM, "matmul: no scratch memory"); goto done; }
        if (beta != 0) pack(dtype, c, m, n, c_rs, c_cs, dtype, cbuf);
        cc = cbuf;
        ldc = n > 0 ? n : 1;
    }
    if (lda > BLAS_INT_MAX || ldb > BLAS_INT_MAX || ldc > BLAS_INT_MAX || m > BLAS_INT_MAX ||
        n > BLAS_INT_MAX || k > BLAS_INT_MAX) {
        st = ec_fail(EC_ERR_INVALID, "matmul: dimension exceeds BLAS's 32-bit limit");
        goto done;
    }
    if (k == 0) {
        /* BLAS with k == 0 scales C by beta; do it ourselves for clarity */
        int64_t layout[4] = {m, n, ldc, 1};
        if (beta == 0) ec_fill(2, layout, (ec_ptr)cc, dtype, 0, 0); /* complex too: 0 + 0i */
        else {
            int64_t l3[6] = {m, n, ldc, 1, ldc, 1};
            ec_binary_scalar(EC_B_MUL, dtype, 2, l3, (ec_ptr)cc, (ec_ptr)cc, beta, 0, 0, 1);
        }
    } else {
        blas_gemm(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc);
    }
    if (cbuf) {
        int64_t layout[6] = {m, n, c_rs, c_cs, n, 1};
        ec_copy(2, layout, (ec_ptr)c, dtype, (ec_ptr)cbuf, dtype);
    }
done:
    free(abuf);
    free(bbuf);
    free(cbuf);
    return st;
}

/* float16/bfloat16: compute in float32 on converted copies. */
static int gemm_half(int dtype, int64_t m, int64_t n, int64_t k, double alpha, const char* a,
                     int64_t a_rs, int64_t a_cs, const char* b, int64_t b_rs, int64_t b_cs,
                     double beta, char* c, int64_t c_rs, int64_t c_cs) {
    float* af = malloc(sizeof(float) * (size_t)(m * k + 1));
    float* bf = malloc(sizeof(float) * (size_t)(k * n + 1));
    float* cf = malloc(sizeof(float) * (size_t)(m * n + 1));
    int st = EC_OK;
    if (!af || !bf || !cf) {
        st = ec_fail(EC_ERR_NOMEM, "matmul: no scratch memory");
    } else {
        pack(dtype, a, m, k, a_rs, a_cs, EC_FLOAT32, (char*)af);
        pack(dtype, b, k, n, b_rs, b_cs, EC_FLOAT32, (char*)bf);
        if (beta != 0) pack(dtype, c, m, n, c_rs, c_cs, EC_FLOAT32, (char*)cf);
        st = gemm_float(EC_FLOAT32, m, n, k, alpha, (char*)af, k, 1, (char*)bf, n, 1, beta,
                        (char*)cf, n, 1);
        if (st == EC_OK) {
            int64_t layout[6] = {m, n, c_rs, c_cs, n, 1};
            st = ec_copy(2, layout, (ec_ptr)c, dtype, (ec_ptr)cf, EC_FLOAT32);
        }
    }
    free(af);
    free(bf);
    free(cf);
    return st;
}

static int gemm_int(int dtype, int64_t m, int64_t n, int64_t k, double alpha, const char* a,
                    int64_t a_rs, int64_t a_cs, const char* b, int64_t b_rs, int64_t b_cs,
                    double beta, char* c, int64_t c_rs, int64_t c_cs) {
    int isz = ec_itemsize[dtype];
    int64_t ialpha = ec_f2i64(alpha), ibeta = ec_f2i64(beta);
    int nt = ec_threads_for(m * n * k, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            int64_t acc = 0;
            for (int64_t p = 0; p < k; p++) {
                int64_t x, y;
                const char* pa = a + (i * a_rs + p * a_cs) * isz;
                const char* pb = b + (p * b_rs + j * b_cs) * isz;
                switch (dtype) {
                    case EC_BOOL: case EC_UINT8: x = *(const uint8_t*)pa; y = *(const uint8_t*)pb; break;
                    case EC_INT8: x = *(const int8_t*)pa; y = *(const int8_t*)pb; break;
                    case EC_INT16: x = *(const int16_t*)pa; y = *(const int16_t*)pb; break;
                    case EC_INT32: x = *(const int32_t*)pa; y = *(const int32_t*)pb; break;
                    default: x = *(const int64_t*)pa; y = *(const int64_t*)pb; break;
                }
                acc += x * y;
            }
            char* pc = c + (i * c_rs + j * c_cs) * isz;
            int64_t old = 0;
            if (ibeta != 0) {
                switch (dtype) {
                    case EC_BOOL: case EC_UINT8: old = *(uint8_t*)pc; break;
                    case EC_INT8: old = *(int8_t*)pc; break;
                    case EC_INT16: old = *(int16_t*)pc; break;
                    case EC_INT32: old = *(int32_t*)pc; break;
                    default: old = *(int64_t*)pc; break;
                }
            }
            int64_t v = ialpha * acc + ibeta * old;
            switch (dtype) {
                case EC_BOOL: *(uint8_t*)pc = v != 0; break;
                case EC_UINT8: *(uint8_t*)pc = (uint8_t)v; break;
                case EC_INT8: *(int8_t*)pc = (int8_t)v; break;
                case EC_INT16: *(int16_t*)pc = (int16_t)v; break;
                case EC_INT32: *(int32_t*)pc = (int32_t)v; break;
                default: *(int64_t*)pc = v; break;
            }
        }
    }
    return EC_OK;
}

int ec_matmul(int dtype, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
              ec_ptr a_addr, int64_t a_bs, int64_t a_rs, int64_t a_cs,
              ec_ptr b_addr, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
              ec_ptr c_addr, int64_t c_bs, int64_t c_rs, int64_t c_cs) {
    const void* a = (const void*)a_addr;
    const void* b = (const void*)b_addr;
    void* c = (void*)c_addr;
    if (!ec_valid_dtype(dtype)) return ec_fail(EC_ERR_INVALID, "matmul: bad dtype %d", dtype);
    if (!ec_base_dtype(dtype) && !ec_is_complex(dtype))
        return ec_fail(EC_ERR_DTYPE, "matmul: no kernel for dtype code %d", dtype);
    if (batch < 0 || m < 0 || n < 0 || k < 0) return ec_fail(EC_ERR_INVALID, "matmul: negative size");
    if (m == 0 || n == 0) return EC_OK;
    int isz = ec_itemsize[dtype];
    /* Many small float products (attention heads, RNN steps): spread the batch
     * over the threads.  Products big enough to be split themselves
     * (blas_gemm, Note [BLAS threads]) run one at a time. */
    int64_t macs = m * n * (k > 0 ? k : 1);
    if (batch > 1 && macs < 2 * GEMM_GRAIN_MACS && c_bs != 0 &&
        (dtype == EC_FLOAT32 || dtype == EC_FLOAT64)) {
        int nt = ec_threads_for(batch * macs, 4 * EC_GRAIN);
        if (nt > 1) {
            int status = EC_OK;
#pragma omp parallel for num_threads(nt) schedule(static)
            for (int64_t i = 0; i < batch; i++) {
                int st = gemm_float(dtype, m, n, k, alpha, (const char*)a + i * a_bs * isz, a_rs, a_cs,
                                    (const char*)b + i * b_bs * isz, b_rs, b_cs, beta,
                                    (char*)c + i * c_bs * isz, c_rs, c_cs);
                if (st != EC_OK) {
#pragma omp atomic write
                    status = st;
                }
            }
            /* a worker's message is in its own thread's buffer: say it here */
            return status == EC_OK ? EC_OK : ec_fail(status, "matmul: a batched product failed");
        }
    }
    for (int64_t i = 0; i < batch; i++) {
        const char* ai = (const char*)a + i * a_bs * isz;
        const char* bi = (const char*)b + i * b_bs * isz;
        char* ci = (char*)c + i * c_bs * isz;
        int st;
        if (dtype == EC_FLOAT32 || dtype == EC_FLOAT64 || ec_is_complex(dtype))
            st = gemm_float(dtype, m, n, k, alpha, ai, a_rs, a_cs, bi, b_rs, b_cs, beta, ci, c_rs, c_cs);
        else if (dtype == EC_FLOAT16 || dtype == EC_BFLOAT16)
            st = gemm_half(dtype, m, n, k, alpha, ai, a_rs, a_cs, bi, b_rs, b_cs, beta, ci, c_rs, c_cs);
        else
            st = gemm_int(dtype, m, n, k, alpha, ai, a_rs, a_cs, bi, b_rs, b_cs, beta, ci, c_rs, c_cs);
        if (st != EC_OK) return st;
    }
    return EC_OK;
}
