/* Dense linear algebra: LAPACK from the scipy-openblas32 wheel, batched.
 *
 * Note [LAPACK layout]
 * Every matrix argument is a batch of column-major matrices, packed one after
 * the other: matrix b of an (r x c) operand starts at element b * r * c and
 * has leading dimension r (Python hands over `A.mT.contiguous()`, whose
 * row-major memory is A's column-major layout).  The only exception is the
 * right-hand side of the least-squares drivers, whose leading dimension is
 * max(m, n) (LAPACK writes the solution over it).  Kernels overwrite their
 * inputs in place, as LAPACK does; they allocate only LAPACK's scratch.
 *
 * The wheel exports LAPACK's Fortran symbols with a `scipy_` prefix and 32-bit
 * integers (hence EC_LAPACK_INT_MAX); character arguments carry gfortran's
 * hidden length arguments at the end.  Per-matrix LAPACK `info` codes are
 * written to an int32 array and never turned into failures here: Python words
 * the error (singular matrix, not positive-definite, no convergence) the way
 * PyTorch does. */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "cblas.h"

#define EC_LAPACK_INT_MAX 2147483647LL
typedef int lint; /* LAPACK's integer in this build */

/* --------------------------------------------------------- Fortran entry points */

#define LAPACK_DECLS(T, p)                                                                      \
    void scipy_##p##getrf_(const lint* m, const lint* n, T* a, const lint* lda, lint* ipiv,     \
                           lint* info);                                                         \
    void scipy_##p##getri_(const lint* n, T* a, const lint* lda, const lint* ipiv, T* work,     \
                           const lint* lwork, lint* info);                                      \
    void scipy_##p##getrs_(const char* trans, const lint* n, const lint* nrhs, const T* a,      \
                           const lint* lda, const lint* ipiv, T* b, const lint* ldb, lint* info, \
                           size_t l1);                                                          \
    void scipy_##p##potrf_(const char* uplo, const lint* n, T* a, const lint* lda, lint* info,  \
                           size_t l1);                                                          \
    void scipy_##p##trtrs_(const char* uplo, const char* trans, const char* diag, const lint* n, \
                           const lint* nrhs, const T* a, const lint* lda, T* b, const lint* ldb, \
                           lint* info, size_t l1, size_t l2, size_t l3);                        \
    void scipy_##p##geqrf_(const lint* m, const lint* n, T* a, const lint* lda, T* tau, T* work, \
                           const lint* lwork, lint* info);                                      \
    void scipy_##p##orgqr_(const lint* m, const lint* n, const lint* k, T* a, const lint* lda,  \
                           const T* tau, T* work, const lint* lwork, lint* info);               \
    void scipy_##p##syevd_(const char* jobz, const char* uplo, const lint* n, T* a,             \
                           const lint* lda, T* w, T* work, const lint* lwork, lint* iwork,      \
                           const lint* liwork, lint* info, size_t l1, size_t l2);               \
    void scipy_##p##gesdd_(const char* jobz, const lint* m, const lint* n, T* a, const lint* lda, \
                           T* s, T* u, const lint* ldu, T* vt, const lint* ldvt, T* work,       \
                           const lint* lwork, lint* iwork, lint* info, size_t l1);              \
    void scipy_##p##gels_(const char* trans, const lint* m, const lint* n, const lint* nrhs,    \
                          T* a, const lint* lda, T* b, const lint* ldb, T* work,                \
                          const lint* lwork, lint* info, size_t l1);                            \
    void scipy_##p##gelsy_(const lint* m, const lint* n, const lint* nrhs, T* a,                \
                           const lint* lda, T* b, const lint* ldb, lint* jpvt, const T* rcond,  \
                           lint* rank, T* work, const lint* lwork, lint* info);                 \
    void scipy_##p##gelsd_(const lint* m, const lint* n, const lint* nrhs, T* a,                \
                           const lint* lda, T* b, const lint* ldb, T* s, const T* rcond,        \
                           lint* rank, T* work, const lint* lwork, lint* iwork, lint* info);    \
    void scipy_##p##gelss_(const lint* m, const lint* n, const lint* nrhs, T* a,                \
                           const lint* lda, T* b, const lint* ldb, T* s, const T* rcond,        \
                           lint* rank, T* work, const lint* lwork, lint* info);

LAPACK_DECLS(float, s)
LAPACK_DECLS(double, d)

/* ------------------------------------------------------------------ helpers */

static int dims_fit(const char* op, int64_t a, int64_t b, int64_t c) {
    if (a < 0 || b < 0 || c < 0 || a > EC_LAPACK_INT_MAX || b > EC_LAPACK_INT_MAX ||
        c > EC_LAPACK_INT_MAX)
        return ec_fail(EC_ERR_INVALID, "%s: matrix dimensions (%lld, %lld, %lld) exceed LAPACK's "
                       "32-bit integers", op, (long long)a, (long long)b, (long long)c);
    return EC_OK;
}

static int float_only(const char* op, int dtype) {
    if (dtype != EC_FLOAT32 && dtype != EC_FLOAT64)
        return ec_fail(EC_ERR_DTYPE, "%s: LAPACK kernels take float32 or float64 (dtype code %d)",
                       op, dtype);
    return EC_OK;
}

/* Workspace size from a LAPACK query result (a float holding an integer). */
static lint wsize(double q, lint at_least) {
    lint w = (lint)q;
    if ((double)w < q) w++; /* round up: a float32 query may round down */
    return w > at_least ? w : at_least;
}

#define NOMEM(op) ec_fail(EC_ERR_NOMEM, "%s: out of memory for LAPACK workspace", op)

/* ------------------------------------------------------------ typed bodies */

#define LINALG_BODIES(T, p)                                                                     \
    static int getrf_##p(int64_t batch, lint m, lint n, T* a, lint* ipiv, lint* info) {         \
        lint lda = m > 1 ? m : 1, k = m < n ? m : n;                                            \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##getrf_(&m, &n, a + b * (int64_t)m * n, &lda, ipiv + b * k, info + b);    \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* Inverse as PyTorch computes it: LU (getrf), then solve against the identity    \
     * (getrs; triangular solves on BLAS-3 trsm).  getri's inversion of U was much   \
     * slower in OpenBLAS and erratic under load (benchmarks/linalg.py). */            \
    static int inv_##p(int64_t batch, lint n, T* a, lint* ipiv, lint* info) {                  \
        lint lda = n > 1 ? n : 1;                                                               \
        T* lu = malloc(sizeof(T) * (size_t)n * n);                                              \
        if (!lu) return NOMEM("linalg.inv");                                                    \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            T* ab = a + b * (int64_t)n * n;                                                     \
            lint* pb = ipiv + b * n;                                                            \
            memcpy(lu, ab, sizeof(T) * (size_t)n * n);                                          \
            scipy_##p##getrf_(&n, &n, lu, &lda, pb, info + b);                                  \
            if (info[b] != 0) continue;                                                         \
            memset(ab, 0, sizeof(T) * (size_t)n * n);                                           \
            for (lint i = 0; i < n; i++) ab[(int64_t)i * n + i] = 1;                            \
            lint i2;                                                                            \
            scipy_##p##getrs_("N", &n, &n, lu, &lda, pb, ab, &lda, &i2, 1);                     \
        }                                                                                       \
        free(lu);                                                                               \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int solve_##p(int64_t batch, lint n, lint nrhs, T* a, T* x, lint* ipiv, lint* info) { \
        lint lda = n > 1 ? n : 1;                                                               \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            T* ab = a + b * (int64_t)n * n;                                                     \
            lint* pb = ipiv + b * n;                                                            \
            scipy_##p##getrf_(&n, &n, ab, &lda, pb, info + b);                                  \
            if (info[b] == 0 && nrhs > 0) {                                                     \
                lint i2;                                                                        \
                scipy_##p##getrs_("N", &n, &nrhs, ab, &lda, pb, x + b * (int64_t)n * nrhs,      \
                                  &lda, &i2, 1);                                                \
            }                                                                                   \
        }                                                                                       \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int cholesky_##p(int64_t batch, lint n, int upper, T* a, lint* info) {               \
        lint lda = n > 1 ? n : 1;                                                               \
        const char* uplo = upper ? "U" : "L";                                                   \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##potrf_(uplo, &n, a + b * (int64_t)n * n, &lda, info + b, 1);              \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* trsm rather than trtrs: trtrs stops at a zero diagonal element and leaves  \
     * B as it was, trsm divides by it (inf/nan, as PyTorch). */                    \
    static int trsolve_##p(int64_t batch, lint n, lint nrhs, int upper, int trans, int unit,    \
                           const T* a, T* x, lint* info) {                                      \
        lint lda = n > 1 ? n : 1;                                                               \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            scipy_cblas_##p##trsm(CblasColMajor, CblasLeft, upper ? CblasUpper : CblasLower,    \
                                  trans ? CblasTrans : CblasNoTrans,                            \
                                  unit ? CblasUnit : CblasNonUnit, n, nrhs, (T)1,               \
                                  a + b * (int64_t)n * n, lda, x + b * (int64_t)n * nrhs, lda);  \
            info[b] = 0;                                                                        \
        }                                                                                       \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int qr_##p(int64_t batch, lint m, lint n, lint qcols, T* a, T* q, lint* info) {      \
        lint lda = m > 1 ? m : 1, k = m < n ? m : n, lwork = -1, i2;                            \
        T q1 = 0, q2 = 0;                                                                       \
        scipy_##p##geqrf_(&m, &n, a, &lda, &q1, &q1, &lwork, &i2);                              \
        if (q && qcols > 0) scipy_##p##orgqr_(&m, &qcols, &k, q, &lda, &q2, &q2, &lwork, &i2);  \
        lwork = wsize(q1 > q2 ? q1 : q2, n > qcols ? (n > 1 ? n : 1) : (qcols > 1 ? qcols : 1)); \
        T* work = malloc(sizeof(T) * (lwork + (k > 1 ? k : 1)));                                \
        if (!work) return NOMEM("linalg.qr");                                                   \
        T* tau = work + lwork;                                                                  \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            T* ab = a + b * (int64_t)m * n;                                                     \
            scipy_##p##geqrf_(&m, &n, ab, &lda, tau, work, &lwork, info + b);                   \
            if (!q || info[b] != 0) continue;                                                   \
            T* qb = q + b * (int64_t)m * qcols;                                                 \
            /* the reflectors (first k columns of ab) seed Q; orgqr expands them */             \
            memcpy(qb, ab, sizeof(T) * (size_t)m * (size_t)(k < qcols ? k : qcols));            \
            if (qcols > 0) scipy_##p##orgqr_(&m, &qcols, &k, qb, &lda, tau, work, &lwork, info + b); \
        }                                                                                       \
        free(work);                                                                             \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int eigh_##p(int64_t batch, lint n, int upper, int vectors, T* a, T* w, lint* info) { \
        lint lda = n > 1 ? n : 1, lwork = -1, liwork = -1, iq = 0, i2;                          \
        const char* jobz = vectors ? "V" : "N";                                                 \
        const char* uplo = upper ? "U" : "L";                                                   \
        T q = 0;                                                                                \
        scipy_##p##syevd_(jobz, uplo, &n, a, &lda, w, &q, &lwork, &iq, &liwork, &i2, 1, 1);     \
        lwork = wsize(q, 1);                                                                    \
        liwork = iq > 1 ? iq : 1;                                                               \
        T* work = malloc(sizeof(T) * lwork);                                                    \
        lint* iwork = malloc(sizeof(lint) * liwork);                                            \
        if (!work || !iwork) {                                                                  \
            free(work);                                                                         \
            free(iwork);                                                                        \
            return NOMEM("linalg.eigh");                                                        \
        }                                                                                       \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##syevd_(jobz, uplo, &n, a + b * (int64_t)n * n, &lda, w + b * n, work,    \
                              &lwork, iwork, &liwork, info + b, 1, 1);                          \
        free(work);                                                                             \
        free(iwork);                                                                            \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* job: 'A' (full U, Vt), 'S' (reduced), 'N' (values only).  U is m x ucols, Vt is       \
     * vrows x n, both column-major. */                                                         \
    static int svd_##p(int64_t batch, lint m, lint n, char job, T* a, T* s, T* u, T* vt,       \
                       lint* info) {                                                            \
        lint lda = m > 1 ? m : 1, k = m < n ? m : n, lwork = -1, i2;                            \
        lint ucols = job == 'A' ? m : (job == 'S' ? k : 1);                                     \
        lint vrows = job == 'A' ? n : (job == 'S' ? k : 1);                                     \
        lint ldu = m > 1 ? m : 1, ldvt = vrows > 1 ? vrows : 1;                                 \
        char jobz[2] = {job, 0};                                                                \
        T q = 0, dummy = 0;                                                                     \
        lint* iwork = malloc(sizeof(lint) * (8 * (size_t)(k > 1 ? k : 1)));                     \
        if (!iwork) return NOMEM("linalg.svd");                                                 \
        scipy_##p##gesdd_(jobz, &m, &n, a, &lda, s, u ? u : &dummy, &ldu, vt ? vt : &dummy,     \
                          &ldvt, &q, &lwork, iwork, &i2, 1);                                    \
        lwork = wsize(q, 1);                                                                    \
        T* work = malloc(sizeof(T) * lwork);                                                    \
        if (!work) {                                                                            \
            free(iwork);                                                                        \
            return NOMEM("linalg.svd");                                                         \
        }                                                                                       \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##gesdd_(jobz, &m, &n, a + b * (int64_t)m * n, &lda, s + b * k,            \
                              u ? u + b * (int64_t)m * ucols : &dummy, &ldu,                    \
                              vt ? vt + b * (int64_t)vrows * n : &dummy, &ldvt, work, &lwork,   \
                              iwork, info + b, 1);                                              \
        free(work);                                                                             \
        free(iwork);                                                                            \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* driver: 0 gels, 1 gelsy, 2 gelsd, 3 gelss.  b has leading dimension max(m, n);       \
     * rank (int32, per matrix) and s (min(m, n) per matrix) may be 0. */                       \
    static int lstsq_##p(int64_t batch, lint m, lint n, lint nrhs, int driver, double rcond_d,  \
                         T* a, T* bm, T* s, lint* rank, lint* info) {                           \
        lint lda = m > 1 ? m : 1, ldb = m > n ? m : n, k = m < n ? m : n, lwork = -1, i2;       \
        if (ldb < 1) ldb = 1;                                                                   \
        T rcond = (T)rcond_d, q = 0, dummy = 0;                                                 \
        lint rk = 0, iq = 0;                                                                    \
        lint liwork = 1;                                                                        \
        if (driver == 0)                                                                        \
            scipy_##p##gels_("N", &m, &n, &nrhs, a, &lda, bm, &ldb, &q, &lwork, &i2, 1);       \
        else if (driver == 1)                                                                   \
            scipy_##p##gelsy_(&m, &n, &nrhs, a, &lda, bm, &ldb, &iq, &rcond, &rk, &q, &lwork,   \
                              &i2);                                                             \
        else if (driver == 2)                                                                   \
            scipy_##p##gelsd_(&m, &n, &nrhs, a, &lda, bm, &ldb, &dummy, &rcond, &rk, &q, &lwork, \
                              &iq, &i2);                                                        \
        else                                                                                    \
            scipy_##p##gelss_(&m, &n, &nrhs, a, &lda, bm, &ldb, &dummy, &rcond, &rk, &q, &lwork, \
                              &i2);                                                             \
        lwork = wsize(q, 1);                                                                    \
        if (driver == 1) liwork = n > 1 ? n : 1;                                                \
        if (driver == 2) liwork = iq > 1 ? iq : 1;                                              \
        T* work = malloc(sizeof(T) * lwork);                                                    \
        lint* iwork = malloc(sizeof(lint) * liwork);                                            \
        T* stmp = malloc(sizeof(T) * (k > 1 ? k : 1));                                          \
        if (!work || !iwork || !stmp) {                                                         \
            free(work);                                                                         \
            free(iwork);                                                                        \
            free(stmp);                                                                         \
            return NOMEM("linalg.lstsq");                                                       \
        }                                                                                       \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            T* ab = a + b * (int64_t)m * n;                                                     \
            T* bb = bm + b * (int64_t)ldb * nrhs;                                               \
            T* sb = s ? s + b * k : stmp;                                                       \
            rk = k;                                                                             \
            if (driver == 0) {                                                                  \
                scipy_##p##gels_("N", &m, &n, &nrhs, ab, &lda, bb, &ldb, work, &lwork, info + b, 1); \
            } else if (driver == 1) {                                                           \
                memset(iwork, 0, sizeof(lint) * liwork); /* all columns free to pivot */        \
                scipy_##p##gelsy_(&m, &n, &nrhs, ab, &lda, bb, &ldb, iwork, &rcond, &rk, work,  \
                                  &lwork, info + b);                                            \
            } else if (driver == 2) {                                                           \
                scipy_##p##gelsd_(&m, &n, &nrhs, ab, &lda, bb, &ldb, sb, &rcond, &rk, work,     \
                                  &lwork, iwork, info + b);                                     \
            } else {                                                                            \
                scipy_##p##gelss_(&m, &n, &nrhs, ab, &lda, bb, &ldb, sb, &rcond, &rk, work,     \
                                  &lwork, info + b);                                            \
            }                                                                                   \
            if (rank) rank[b] = rk;                                                             \
        }                                                                                       \
        free(work);                                                                             \
        free(iwork);                                                                            \
        free(stmp);                                                                             \
        return EC_OK;                                                                           \
    }

LINALG_BODIES(float, s)
LINALG_BODIES(double, d)

/* ------------------------------------------------------------ entry points */

/* LAPACK threads inside OpenBLAS (its blocked factorizations call threaded level-3
 * BLAS), which otherwise runs one thread (Note [BLAS threads] in blas.c). */
#define DISPATCH(op, call_s, call_d)                                                            \
    do {                                                                                        \
        int st_ = float_only(op, dtype);                                                        \
        if (st_) return st_;                                                                    \
        ec_blas_threads_begin();                                                                \
        st_ = dtype == EC_FLOAT32 ? (call_s) : (call_d);                                        \
        ec_blas_threads_end();                                                                  \
        return st_;                                                                             \
    } while (0)

int ec_linalg_lu(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a, ec_ptr ipiv,
                 ec_ptr info) {
    int st = dims_fit("linalg.lu_factor", m, n, 0);
    if (st) return st;
    DISPATCH("linalg.lu_factor", getrf_s(batch, m, n, (float*)a, (lint*)ipiv, (lint*)info),
             getrf_d(batch, m, n, (double*)a, (lint*)ipiv, (lint*)info));
}

int ec_linalg_inv(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr ipiv, ec_ptr info) {
    int st = dims_fit("linalg.inv", n, n, 0);
    if (st) return st;
    DISPATCH("linalg.inv", inv_s(batch, n, (float*)a, (lint*)ipiv, (lint*)info),
             inv_d(batch, n, (double*)a, (lint*)ipiv, (lint*)info));
}

int ec_linalg_solve(int dtype, int64_t batch, int64_t n, int64_t nrhs, ec_ptr a, ec_ptr x,
                    ec_ptr ipiv, ec_ptr info) {
    int st = dims_fit("linalg.solve", n, nrhs, 0);
    if (st) return st;
    DISPATCH("linalg.solve",
             solve_s(batch, n, nrhs, (float*)a, (float*)x, (lint*)ipiv, (lint*)info),
             solve_d(batch, n, nrhs, (double*)a, (double*)x, (lint*)ipiv, (lint*)info));
}

int ec_linalg_cholesky(int dtype, int64_t batch, int64_t n, int upper, ec_ptr a, ec_ptr info) {
    int st = dims_fit("linalg.cholesky", n, n, 0);
    if (st) return st;
    DISPATCH("linalg.cholesky", cholesky_s(batch, n, upper, (float*)a, (lint*)info),
             cholesky_d(batch, n, upper, (double*)a, (lint*)info));
}

int ec_linalg_solve_triangular(int dtype, int64_t batch, int64_t n, int64_t nrhs, int upper,
                               int trans, int unit, ec_ptr a, ec_ptr x, ec_ptr info) {
    int st = dims_fit("linalg.solve_triangular", n, nrhs, 0);
    if (st) return st;
    DISPATCH("linalg.solve_triangular",
             trsolve_s(batch, n, nrhs, upper, trans, unit, (const float*)a, (float*)x, (lint*)info),
             trsolve_d(batch, n, nrhs, upper, trans, unit, (const double*)a, (double*)x,
                       (lint*)info));
}

int ec_linalg_qr(int dtype, int64_t batch, int64_t m, int64_t n, int64_t qcols, ec_ptr a,
                 ec_ptr q, ec_ptr info) {
    int st = dims_fit("linalg.qr", m, n, qcols);
    if (st) return st;
    if (qcols > m || (q && qcols < (m < n ? m : n)))
        return ec_fail(EC_ERR_INVALID, "linalg.qr: Q with %lld columns for a %lldx%lld matrix",
                       (long long)qcols, (long long)m, (long long)n);
    DISPATCH("linalg.qr", qr_s(batch, m, n, qcols, (float*)a, (float*)q, (lint*)info),
             qr_d(batch, m, n, qcols, (double*)a, (double*)q, (lint*)info));
}

int ec_linalg_eigh(int dtype, int64_t batch, int64_t n, int upper, int vectors, ec_ptr a,
                   ec_ptr w, ec_ptr info) {
    int st = dims_fit("linalg.eigh", n, n, 0);
    if (st) return st;
    DISPATCH("linalg.eigh", eigh_s(batch, n, upper, vectors, (float*)a, (float*)w, (lint*)info),
             eigh_d(batch, n, upper, vectors, (double*)a, (double*)w, (lint*)info));
}

int ec_linalg_svd(int dtype, int64_t batch, int64_t m, int64_t n, int job, ec_ptr a, ec_ptr s,
                  ec_ptr u, ec_ptr vt, ec_ptr info) {
    int st = dims_fit("linalg.svd", m, n, 0);
    if (st) return st;
    if (job != 'A' && job != 'S' && job != 'N')
        return ec_fail(EC_ERR_INVALID, "linalg.svd: job must be 'A', 'S' or 'N'");
    DISPATCH("linalg.svd",
             svd_s(batch, m, n, (char)job, (float*)a, (float*)s, (float*)u, (float*)vt,
                   (lint*)info),
             svd_d(batch, m, n, (char)job, (double*)a, (double*)s, (double*)u, (double*)vt,
                   (lint*)info));
}

int ec_linalg_lstsq(int dtype, int64_t batch, int64_t m, int64_t n, int64_t nrhs, int driver,
                    double rcond, ec_ptr a, ec_ptr b, ec_ptr s, ec_ptr rank, ec_ptr info) {
    int st = dims_fit("linalg.lstsq", m, n, nrhs);
    if (st) return st;
    if (driver < 0 || driver > 3)
        return ec_fail(EC_ERR_INVALID, "linalg.lstsq: unknown driver code %d", driver);
    DISPATCH("linalg.lstsq",
             lstsq_s(batch, m, n, nrhs, driver, rcond, (float*)a, (float*)b, (float*)s,
                     (lint*)rank, (lint*)info),
             lstsq_d(batch, m, n, nrhs, driver, rcond, (double*)a, (double*)b, (double*)s,
                     (lint*)rank, (lint*)info));
}
