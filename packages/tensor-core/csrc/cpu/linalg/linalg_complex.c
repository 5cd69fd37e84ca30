/* Dense linear algebra on complex matrices, and the general eigenproblem.
 *
 * The complex counterparts (the c- and z-prefixed LAPACK routines of the same
 * scipy-openblas32 wheel) of the real kernels in linalg.c and linalg_qr.c,
 * with the same entry-point signatures and the same layout (Note [LAPACK
 * layout] in linalg.c: batches of column-major matrices, overwritten in place;
 * per-matrix info codes that Python words).
 * Where LAPACK's complex routine differs from the real one it is named here:
 * orgqr -> ungqr, syevd -> heevd; heevd, gesdd, gelsy, gelsd, gelss and geev
 * take a real workspace (rwork) besides the complex one.  Eigenvalues of
 * Hermitian matrices and singular values are real (float for complex64,
 * double for complex128).
 *
 * ec_linalg_eig is the general (non-symmetric) eigendecomposition, geev, for
 * real and complex input alike; as in PyTorch its eigenvalues and right
 * eigenvectors are always complex.  The real geev returns conjugate pairs as
 * (wr, wi) and packs the pair's eigenvectors in two real columns (re, im);
 * they are unpacked into complex columns v_j = re + i im, v_{j+1} = conj(v_j). */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "cblas.h"
#include "ember_core.h"

typedef int lint; /* LAPACK's integer in scipy-openblas32 */
#define LINT_MAX 2147483647LL

#define CLAPACK_DECLS(T, R, p)                                                                  \
    void scipy_##p##getrf_(const lint* m, const lint* n, T* a, const lint* lda, lint* ipiv,     \
                           lint* info);                                                         \
    void scipy_##p##getrs_(const char* trans, const lint* n, const lint* nrhs, const T* a,      \
                           const lint* lda, const lint* ipiv, T* b, const lint* ldb, lint* info, \
                           size_t l1);                                                          \
    void scipy_##p##potrf_(const char* uplo, const lint* n, T* a, const lint* lda, lint* info,  \
                           size_t l1);                                                          \
    void scipy_##p##geqrf_(const lint* m, const lint* n, T* a, const lint* lda, T* tau, T* work, \
                           const lint* lwork, lint* info);                                      \
    void scipy_##p##ungqr_(const lint* m, const lint* n, const lint* k, T* a, const lint* lda,  \
                           const T* tau, T* work, const lint* lwork, lint* info);               \
    void scipy_##p##heevd_(const char* jobz, const char* uplo, const lint* n, T* a,             \
                           const lint* lda, R* w, T* work, const lint* lwork, R* rwork,         \
                           const lint* lrwork, lint* iwork, const lint* liwork, lint* info,     \
                           size_t l1, size_t l2);                                               \
    void scipy_##p##gesdd_(const char* jobz, const lint* m, const lint* n, T* a, const lint* lda, \
                           R* s, T* u, const lint* ldu, T* vt, const lint* ldvt, T* work,       \
                           const lint* lwork, R* rwork, lint* iwork, lint* info, size_t l1);    \
    void scipy_##p##gels_(const char* trans, const lint* m, const lint* n, const lint* nrhs,    \
                          T* a, const lint* lda, T* b, const lint* ldb, T* work,                \
                          const lint* lwork, lint* info, size_t l1);                            \
    void scipy_##p##gelsy_(const lint* m, const lint* n, const lint* nrhs, T* a,                \
                           const lint* lda, T* b, const lint* ldb, lint* jpvt, const R* rcond,  \
                           lint* rank, T* work, const lint* lwork, R* rwork, lint* info);       \
    void scipy_##p##gelsd_(const lint* m, const lint* n, const lint* nrhs, T* a,                \
                           const lint* lda, T* b, const lint* ldb, R* s, const R* rcond,        \
                           lint* rank, T* work, const lint* lwork, R* rwork, lint* iwork,       \
                           lint* info);                                                         \
    void scipy_##p##gelss_(const lint* m, const lint* n, const lint* nrhs, T* a,                \
                           const lint* lda, T* b, const lint* ldb, R* s, const R* rcond,        \
                           lint* rank, T* work, const lint* lwork, R* rwork, lint* info);       \
    void scipy_##p##geev_(const char* jobvl, const char* jobvr, const lint* n, T* a,            \
                          const lint* lda, T* w, T* vl, const lint* ldvl, T* vr,                \
                          const lint* ldvr, T* work, const lint* lwork, R* rwork, lint* info,   \
                          size_t l1, size_t l2);

#define CLDL_DECLS(T, p, kind)                                                                  \
    void scipy_##p##kind##trf_(const char* uplo, const lint* n, T* a, const lint* lda, lint* ipiv, \
                               T* work, const lint* lwork, lint* info, size_t l1);              \
    void scipy_##p##kind##trs_(const char* uplo, const lint* n, const lint* nrhs, const T* a,   \
                               const lint* lda, const lint* ipiv, T* b, const lint* ldb,        \
                               lint* info, size_t l1);
CLDL_DECLS(ec_c64, c, sy)
CLDL_DECLS(ec_c64, c, he)
CLDL_DECLS(ec_c128, z, sy)
CLDL_DECLS(ec_c128, z, he)

CLAPACK_DECLS(ec_c64, float, c)
CLAPACK_DECLS(ec_c128, double, z)

#define RGEEV_DECL(T, p)                                                                        \
    void scipy_##p##geev_(const char* jobvl, const char* jobvr, const lint* n, T* a,            \
                          const lint* lda, T* wr, T* wi, T* vl, const lint* ldvl, T* vr,        \
                          const lint* ldvr, T* work, const lint* lwork, lint* info, size_t l1,  \
                          size_t l2);
RGEEV_DECL(float, s)
RGEEV_DECL(double, d)

/* ------------------------------------------------------------------ helpers */

static int fits(const char* op, int64_t a, int64_t b, int64_t c) {
    if (a < 0 || b < 0 || c < 0 || a > LINT_MAX || b > LINT_MAX || c > LINT_MAX)
        return ec_fail(EC_ERR_INVALID, "%s: matrix dimensions (%lld, %lld, %lld) exceed LAPACK's "
                       "32-bit integers", op, (long long)a, (long long)b, (long long)c);
    return EC_OK;
}

/* Workspace size from a LAPACK query result (a float holding an integer). */
static lint wsize(double q, lint at_least) {
    lint w = (lint)q;
    if ((double)w < q) w++;
    return w > at_least ? w : at_least;
}

#define NOMEM(op) ec_fail(EC_ERR_NOMEM, "%s: out of memory for LAPACK workspace", op)
#define MAX1(x) ((x) > 1 ? (x) : 1)

/* ------------------------------------------------------------ typed bodies */

#define CLINALG_BODIES(T, R, p)                                                             \
    static int getrf_##p(int64_t batch, lint m, lint n, T* a, lint* ipiv, lint* info) {         \
        lint lda = MAX1(m), k = m < n ? m : n;                                                  \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##getrf_(&m, &n, a + b * (int64_t)m * n, &lda, ipiv + b * k, info + b);    \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* LU, then solve against the identity (as linalg.c's inverse). */                          \
    static int inv_##p(int64_t batch, lint n, T* a, lint* ipiv, lint* info) {                  \
        lint lda = MAX1(n);                                                                     \
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
        lint lda = MAX1(n);                                                                     \
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
        lint lda = MAX1(n);                                                                     \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##potrf_(upper ? "U" : "L", &n, a + b * (int64_t)n * n, &lda, info + b, 1); \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* trsm (divides by a zero diagonal element, inf/nan as PyTorch); trans 1 is the    \
     * transpose, 2 the conjugate transpose. */                                                 \
    static int trsolve_##p(int64_t batch, lint n, lint nrhs, int upper, int trans, int unit,    \
                           const T* a, T* x, lint* info) {                                      \
        lint lda = MAX1(n);                                                                     \
        const T one = 1;                                                                        \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            scipy_cblas_##p##trsm(CblasColMajor, CblasLeft, upper ? CblasUpper : CblasLower,    \
                                  trans == 2 ? CblasConjTrans : (trans ? CblasTrans : CblasNoTrans), \
                                  unit ? CblasUnit : CblasNonUnit, n, nrhs, &one,               \
                                  a + b * (int64_t)n * n, lda, x + b * (int64_t)n * nrhs, lda);  \
            info[b] = 0;                                                                        \
        }                                                                                       \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int qr_##p(int64_t batch, lint m, lint n, lint qcols, T* a, T* q, lint* info) {      \
        lint lda = MAX1(m), k = m < n ? m : n, lwork = -1, i2;                                  \
        T q1 = 0, q2 = 0;                                                                       \
        scipy_##p##geqrf_(&m, &n, a, &lda, &q1, &q1, &lwork, &i2);                              \
        if (q && qcols > 0) scipy_##p##ungqr_(&m, &qcols, &k, q, &lda, &q2, &q2, &lwork, &i2);  \
        double w1 = creal(q1), w2 = creal(q2);                                                  \
        lwork = wsize(w1 > w2 ? w1 : w2, MAX1(n > qcols ? n : qcols));                          \
        T* work = malloc(sizeof(T) * (size_t)(lwork + MAX1(k)));                                \
        if (!work) return NOMEM("linalg.qr");                                                   \
        T* tau = work + lwork;                                                                  \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            T* ab = a + b * (int64_t)m * n;                                                     \
            scipy_##p##geqrf_(&m, &n, ab, &lda, tau, work, &lwork, info + b);                   \
            if (!q || info[b] != 0) continue;                                                   \
            T* qb = q + b * (int64_t)m * qcols;                                                 \
            memcpy(qb, ab, sizeof(T) * (size_t)m * (size_t)(k < qcols ? k : qcols));            \
            if (qcols > 0) scipy_##p##ungqr_(&m, &qcols, &k, qb, &lda, tau, work, &lwork, info + b); \
        }                                                                                       \
        free(work);                                                                             \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int eigh_##p(int64_t batch, lint n, int upper, int vectors, T* a, R* w, lint* info) { \
        lint lda = MAX1(n), lwork = -1, lrwork = -1, liwork = -1, iq = 0, i2;                   \
        const char* jobz = vectors ? "V" : "N";                                                 \
        const char* uplo = upper ? "U" : "L";                                                   \
        T q = 0;                                                                                \
        R rq = 0;                                                                               \
        scipy_##p##heevd_(jobz, uplo, &n, a, &lda, w, &q, &lwork, &rq, &lrwork, &iq, &liwork,   \
                          &i2, 1, 1);                                                           \
        lwork = wsize(creal(q), 1);                                                             \
        lrwork = wsize(rq, 1);                                                                  \
        liwork = MAX1(iq);                                                                      \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                            \
        R* rwork = malloc(sizeof(R) * (size_t)lrwork);                                          \
        lint* iwork = malloc(sizeof(lint) * (size_t)liwork);                                    \
        if (!work || !rwork || !iwork) {                                                        \
            free(work);                                                                         \
            free(rwork);                                                                        \
            free(iwork);                                                                        \
            return NOMEM("linalg.eigh");                                                        \
        }                                                                                       \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##heevd_(jobz, uplo, &n, a + b * (int64_t)n * n, &lda, w + b * n, work,    \
                              &lwork, rwork, &lrwork, iwork, &liwork, info + b, 1, 1);          \
        free(work);                                                                             \
        free(rwork);                                                                            \
        free(iwork);                                                                            \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int svd_##p(int64_t batch, lint m, lint n, char job, T* a, R* s, T* u, T* vt,       \
                       lint* info) {                                                            \
        lint lda = MAX1(m), k = m < n ? m : n, mx = m > n ? m : n, lwork = -1, i2;              \
        lint vrows = job == 'A' ? n : (job == 'S' ? k : 1);                                     \
        lint ucols = job == 'A' ? m : (job == 'S' ? k : 1);                                     \
        lint ldu = MAX1(m), ldvt = MAX1(vrows);                                                 \
        char jobz[2] = {job, 0};                                                                \
        T q = 0, dummy = 0;                                                                     \
        /* LAPACK's bound on rwork (with the 3.7 fix for jobz = 'N') */                         \
        int64_t lr = job == 'N' ? 7 * (int64_t)k                                                \
                                : (5 * (int64_t)k * k + 5 * (int64_t)k >                        \
                                           2 * (int64_t)mx * k + 2 * (int64_t)k * k + k         \
                                       ? 5 * (int64_t)k * k + 5 * (int64_t)k                    \
                                       : 2 * (int64_t)mx * k + 2 * (int64_t)k * k + k);         \
        R* rwork = malloc(sizeof(R) * (size_t)MAX1(lr));                                        \
        lint* iwork = malloc(sizeof(lint) * (8 * (size_t)MAX1(k)));                             \
        if (!rwork || !iwork) {                                                                 \
            free(rwork);                                                                        \
            free(iwork);                                                                        \
            return NOMEM("linalg.svd");                                                         \
        }                                                                                       \
        scipy_##p##gesdd_(jobz, &m, &n, a, &lda, s, u ? u : &dummy, &ldu, vt ? vt : &dummy,     \
                          &ldvt, &q, &lwork, rwork, iwork, &i2, 1);                             \
        lwork = wsize(creal(q), 1);                                                             \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                            \
        if (!work) {                                                                            \
            free(rwork);                                                                        \
            free(iwork);                                                                        \
            return NOMEM("linalg.svd");                                                         \
        }                                                                                       \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##gesdd_(jobz, &m, &n, a + b * (int64_t)m * n, &lda, s + b * k,            \
                              u ? u + b * (int64_t)m * ucols : &dummy, &ldu,                    \
                              vt ? vt + b * (int64_t)vrows * n : &dummy, &ldvt, work, &lwork,   \
                              rwork, iwork, info + b, 1);                                       \
        free(work);                                                                             \
        free(rwork);                                                                            \
        free(iwork);                                                                            \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* driver: 0 gels, 1 gelsy, 2 gelsd, 3 gelss (as linalg.c); s is real. */                   \
    static int lstsq_##p(int64_t batch, lint m, lint n, lint nrhs, int driver, double rcond_d,  \
                         T* a, T* bm, R* s, lint* rank, lint* info) {                           \
        lint lda = MAX1(m), ldb = MAX1(m > n ? m : n), k = m < n ? m : n, lwork = -1, i2;       \
        R rcond = (R)rcond_d, rq = 0, sdummy = 0;                                               \
        T q = 0;                                                                                \
        lint rk = 0, iq = 0, liwork = 1, lrwork = 1;                                            \
        if (driver == 0)                                                                        \
            scipy_##p##gels_("N", &m, &n, &nrhs, a, &lda, bm, &ldb, &q, &lwork, &i2, 1);       \
        else if (driver == 1)                                                                   \
            scipy_##p##gelsy_(&m, &n, &nrhs, a, &lda, bm, &ldb, &iq, &rcond, &rk, &q, &lwork,   \
                              &rq, &i2);                                                        \
        else if (driver == 2)                                                                   \
            scipy_##p##gelsd_(&m, &n, &nrhs, a, &lda, bm, &ldb, &sdummy, &rcond, &rk, &q,       \
                              &lwork, &rq, &iq, &i2);                                           \
        else                                                                                    \
            scipy_##p##gelss_(&m, &n, &nrhs, a, &lda, bm, &ldb, &sdummy, &rcond, &rk, &q,       \
                              &lwork, &rq, &i2);                                                \
        lwork = wsize(creal(q), 1);                                                             \
        if (driver == 1) {                                                                      \
            liwork = MAX1(n);                                                                   \
            lrwork = MAX1(2 * n);                                                               \
        } else if (driver == 2) {                                                               \
            liwork = MAX1(iq);                                                                  \
            lrwork = wsize(rq, 1);                                                              \
        } else if (driver == 3) {                                                               \
            lrwork = MAX1(5 * k);                                                               \
        }                                                                                       \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                            \
        lint* iwork = malloc(sizeof(lint) * (size_t)liwork);                                    \
        R* rwork = malloc(sizeof(R) * (size_t)lrwork);                                          \
        R* stmp = malloc(sizeof(R) * (size_t)MAX1(k));                                          \
        if (!work || !iwork || !rwork || !stmp) {                                               \
            free(work);                                                                         \
            free(iwork);                                                                        \
            free(rwork);                                                                        \
            free(stmp);                                                                         \
            return NOMEM("linalg.lstsq");                                                       \
        }                                                                                       \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            T* ab = a + b * (int64_t)m * n;                                                     \
            T* bb = bm + b * (int64_t)ldb * nrhs;                                               \
            R* sb = s ? s + b * k : stmp;                                                       \
            rk = k;                                                                             \
            if (driver == 0) {                                                                  \
                scipy_##p##gels_("N", &m, &n, &nrhs, ab, &lda, bb, &ldb, work, &lwork, info + b, 1); \
            } else if (driver == 1) {                                                           \
                memset(iwork, 0, sizeof(lint) * (size_t)liwork);                                \
                scipy_##p##gelsy_(&m, &n, &nrhs, ab, &lda, bb, &ldb, iwork, &rcond, &rk, work,  \
                                  &lwork, rwork, info + b);                                     \
            } else if (driver == 2) {                                                           \
                scipy_##p##gelsd_(&m, &n, &nrhs, ab, &lda, bb, &ldb, sb, &rcond, &rk, work,     \
                                  &lwork, rwork, iwork, info + b);                              \
            } else {                                                                            \
                scipy_##p##gelss_(&m, &n, &nrhs, ab, &lda, bb, &ldb, sb, &rcond, &rk, work,     \
                                  &lwork, rwork, info + b);                                     \
            }                                                                                   \
            if (rank) rank[b] = rk;                                                             \
        }                                                                                       \
        free(work);                                                                             \
        free(iwork);                                                                            \
        free(rwork);                                                                            \
        free(stmp);                                                                             \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    /* geqrf alone (torch.geqrf): R above the diagonal, reflectors below, tau. */              \
    static int geqrf_##p(int64_t batch, lint m, lint n, T* a, T* tau, lint* info) {             \
        lint lda = MAX1(m), k = m < n ? m : n, lwork = -1, i2;                                  \
        T q = 0;                                                                                \
        scipy_##p##geqrf_(&m, &n, a, &lda, tau, &q, &lwork, &i2);                               \
        lwork = wsize(creal(q), MAX1(n));                                                       \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                            \
        if (!work) return NOMEM("geqrf");                                                       \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##geqrf_(&m, &n, a + b * (int64_t)m * n, &lda, tau + b * (int64_t)k, work, \
                              &lwork, info + b);                                                \
        free(work);                                                                             \
        return EC_OK;                                                                           \
    }                                                                                           \
                                                                                                \
    static int geev_##p(int64_t batch, lint n, T* a, T* w, T* v, lint* info) {                  \
        lint lda = MAX1(n), ldv = MAX1(n), lwork = -1, i2;                                      \
        const char* jobvr = v ? "V" : "N";                                                      \
        T q = 0, dummy = 0;                                                                     \
        R* rwork = malloc(sizeof(R) * (size_t)MAX1(2 * n));                                     \
        if (!rwork) return NOMEM("linalg.eig");                                                 \
        scipy_##p##geev_("N", jobvr, &n, a, &lda, w, &dummy, &ldv, v ? v : &dummy, &ldv, &q,    \
                         &lwork, rwork, &i2, 1, 1);                                             \
        lwork = wsize(creal(q), MAX1(2 * n));                                                   \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                            \
        if (!work) {                                                                            \
            free(rwork);                                                                        \
            return NOMEM("linalg.eig");                                                         \
        }                                                                                       \
        for (int64_t b = 0; b < batch; b++)                                                     \
            scipy_##p##geev_("N", jobvr, &n, a + b * (int64_t)n * n, &lda, w + b * n, &dummy,   \
                             &ldv, v ? v + b * (int64_t)n * n : &dummy, &ldv, work, &lwork,     \
                             rwork, info + b, 1, 1);                                            \
        free(work);                                                                             \
        free(rwork);                                                                            \
        return EC_OK;                                                                           \
    }

CLINALG_BODIES(ec_c64, float, c)
CLINALG_BODIES(ec_c128, double, z)

/* LDL^T (complex symmetric: sytrf/sytrs) or LDL^H (Hermitian: hetrf/hetrs) of
 * the lower triangle, as linalg_qr.c's real LDL^T; 1-based Bunch-Kaufman pivots. */
#define CLDL_BODIES(T, p)                                                                       \
    static int ldl_factor_##p(int64_t batch, lint n, int herm, T* a, lint* ipiv, lint* info) {  \
        lint lda = MAX1(n), lwork = -1, i2;                                                     \
        T q = 0;                                                                                \
        (herm ? scipy_##p##hetrf_ : scipy_##p##sytrf_)("L", &n, a, &lda, ipiv, &q, &lwork, &i2, 1); \
        lwork = wsize(creal(q), 1);                                                             \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                            \
        if (!work) return NOMEM("ldl_factor");                                                  \
        for (int64_t b = 0; b < batch; b++)                                                     \
            (herm ? scipy_##p##hetrf_ : scipy_##p##sytrf_)("L", &n, a + b * (int64_t)n * n, &lda, \
                                                           ipiv + b * (int64_t)n, work, &lwork, \
                                                           info + b, 1);                        \
        free(work);                                                                             \
        return EC_OK;                                                                           \
    }                                                                                           \
    static int ldl_solve_##p(int64_t batch, lint n, lint nrhs, int herm, const T* a,            \
                             const lint* ipiv, T* x, lint* info) {                              \
        lint lda = MAX1(n);                                                                     \
        for (int64_t b = 0; b < batch; b++)                                                     \
            (herm ? scipy_##p##hetrs_ : scipy_##p##sytrs_)("L", &n, &nrhs, a + b * (int64_t)n * n, \
                                                           &lda, ipiv + b * (int64_t)n,         \
                                                           x + b * (int64_t)n * nrhs, &lda,     \
                                                           info + b, 1);                        \
        return EC_OK;                                                                           \
    }

CLDL_BODIES(ec_c64, c)
CLDL_BODIES(ec_c128, z)

/* The real geev, its results unpacked into complex eigenvalues and vectors. */
#define RGEEV_BODY(R, C, p)                                                                     \
    static int rgeev_##p(int64_t batch, lint n, R* a, C* w, C* v, lint* info) {                 \
        lint lda = MAX1(n), ldv = MAX1(n), lwork = -1, i2;                                      \
        const char* jobvr = v ? "V" : "N";                                                      \
        R q = 0, dummy = 0;                                                                     \
        scipy_##p##geev_("N", jobvr, &n, a, &lda, &dummy, &dummy, &dummy, &ldv, &dummy, &ldv,   \
                         &q, &lwork, &i2, 1, 1);                                                \
        lwork = wsize(q, MAX1(4 * n));                                                          \
        size_t scratch = (size_t)lwork + 2 * (size_t)n + (v ? (size_t)n * n : 0);               \
        R* work = malloc(sizeof(R) * scratch);                                                  \
        if (!work) return NOMEM("linalg.eig");                                                  \
        R* wr = work + lwork;                                                                   \
        R* wi = wr + n;                                                                         \
        R* vr = v ? wi + n : &dummy;                                                            \
        for (int64_t b = 0; b < batch; b++) {                                                   \
            scipy_##p##geev_("N", jobvr, &n, a + b * (int64_t)n * n, &lda, wr, wi, &dummy,      \
                             &ldv, vr, &ldv, work, &lwork, info + b, 1, 1);                     \
            C* wb = w + b * n;                                                                  \
            for (lint j = 0; j < n; j++) wb[j] = wr[j] + wi[j] * (C)_Complex_I;                 \
            if (!v || info[b] != 0) continue;                                                   \
            C* vb = v + b * (int64_t)n * n;                                                     \
            for (lint j = 0; j < n; j++) {                                                      \
                const R* col = vr + (int64_t)j * n;                                             \
                if (wi[j] != 0 && j + 1 < n) { /* a conjugate pair: columns j (re), j+1 (im) */ \
                    const R* im = col + n;                                                      \
                    for (lint i = 0; i < n; i++) {                                              \
                        vb[(int64_t)j * n + i] = col[i] + im[i] * (C)_Complex_I;                \
                        vb[(int64_t)(j + 1) * n + i] = col[i] - im[i] * (C)_Complex_I;          \
                    }                                                                           \
                    j++;                                                                        \
                } else {                                                                        \
                    for (lint i = 0; i < n; i++) vb[(int64_t)j * n + i] = col[i];               \
                }                                                                           \
            }                                                                                   \
        }                                                                                       \
        free(work);                                                                             \
        return EC_OK;                                                                           \
    }

RGEEV_BODY(float, ec_c64, s)
RGEEV_BODY(double, ec_c128, d)

/* ------------------------------------------------------------ entry points */

static int complex_only(const char* op, int dtype) {
    if (!ec_is_complex(dtype))
        return ec_fail(EC_ERR_DTYPE, "%s: complex LAPACK kernels take complex64 or complex128 "
                       "(dtype code %d)", op, dtype);
    return EC_OK;
}

/* LAPACK threads inside OpenBLAS (Note [BLAS threads] in blas.c), as linalg.c. */
#define CDISPATCH(op, dims_st, call_c, call_z)                                                  \
    do {                                                                                        \
        int st_ = (dims_st);                                                                    \
        if (!st_) st_ = complex_only(op, dtype);                                                \
        if (st_) return st_;                                                                    \
        ec_blas_threads_begin();                                                                \
        st_ = dtype == EC_COMPLEX64 ? (call_c) : (call_z);                                      \
        ec_blas_threads_end();                                                                  \
        return st_;                                                                             \
    } while (0)

int ec_linalg_lu_complex(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a, ec_ptr ipiv,
                         ec_ptr info) {
    CDISPATCH("linalg.lu_factor", fits("linalg.lu_factor", m, n, 0),
              getrf_c(batch, m, n, (ec_c64*)a, (lint*)ipiv, (lint*)info),
              getrf_z(batch, m, n, (ec_c128*)a, (lint*)ipiv, (lint*)info));
}

int ec_linalg_inv_complex(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr ipiv,
                          ec_ptr info) {
    CDISPATCH("linalg.inv", fits("linalg.inv", n, n, 0),
              inv_c(batch, n, (ec_c64*)a, (lint*)ipiv, (lint*)info),
              inv_z(batch, n, (ec_c128*)a, (lint*)ipiv, (lint*)info));
}

int ec_linalg_solve_complex(int dtype, int64_t batch, int64_t n, int64_t nrhs, ec_ptr a,
                            ec_ptr x, ec_ptr ipiv, ec_ptr info) {
    CDISPATCH("linalg.solve", fits("linalg.solve", n, nrhs, 0),
              solve_c(batch, n, nrhs, (ec_c64*)a, (ec_c64*)x, (lint*)ipiv, (lint*)info),
              solve_z(batch, n, nrhs, (ec_c128*)a, (ec_c128*)x, (lint*)ipiv, (lint*)info));
}

int ec_linalg_cholesky_complex(int dtype, int64_t batch, int64_t n, int upper, ec_ptr a,
                               ec_ptr info) {
    CDISPATCH("linalg.cholesky", fits("linalg.cholesky", n, n, 0),
              cholesky_c(batch, n, upper, (ec_c64*)a, (lint*)info),
              cholesky_z(batch, n, upper, (ec_c128*)a, (lint*)info));
}

int ec_linalg_solve_triangular_complex(int dtype, int64_t batch, int64_t n, int64_t nrhs,
                                       int upper, int trans, int unit, ec_ptr a, ec_ptr x,
                                       ec_ptr info) {
    CDISPATCH("linalg.solve_triangular", fits("linalg.solve_triangular", n, nrhs, 0),
              trsolve_c(batch, n, nrhs, upper, trans, unit, (const ec_c64*)a, (ec_c64*)x,
                        (lint*)info),
              trsolve_z(batch, n, nrhs, upper, trans, unit, (const ec_c128*)a, (ec_c128*)x,
                        (lint*)info));
}

int ec_linalg_qr_complex(int dtype, int64_t batch, int64_t m, int64_t n, int64_t qcols,
                         ec_ptr a, ec_ptr q, ec_ptr info) {
    if (qcols > m || (q && qcols < (m < n ? m : n)))
        return ec_fail(EC_ERR_INVALID, "linalg.qr: Q with %lld columns for a %lldx%lld matrix",
                       (long long)qcols, (long long)m, (long long)n);
    CDISPATCH("linalg.qr", fits("linalg.qr", m, n, qcols),
              qr_c(batch, m, n, qcols, (ec_c64*)a, (ec_c64*)q, (lint*)info),
              qr_z(batch, m, n, qcols, (ec_c128*)a, (ec_c128*)q, (lint*)info));
}

int ec_linalg_eigh_complex(int dtype, int64_t batch, int64_t n, int upper, int vectors,
                           ec_ptr a, ec_ptr w, ec_ptr info) {
    CDISPATCH("linalg.eigh", fits("linalg.eigh", n, n, 0),
              eigh_c(batch, n, upper, vectors, (ec_c64*)a, (float*)w, (lint*)info),
              eigh_z(batch, n, upper, vectors, (ec_c128*)a, (double*)w, (lint*)info));
}

int ec_linalg_svd_complex(int dtype, int64_t batch, int64_t m, int64_t n, int job, ec_ptr a,
                          ec_ptr s, ec_ptr u, ec_ptr vt, ec_ptr info) {
    if (job != 'A' && job != 'S' && job != 'N')
        return ec_fail(EC_ERR_INVALID, "linalg.svd: job must be 'A', 'S' or 'N'");
    CDISPATCH("linalg.svd", fits("linalg.svd", m, n, 0),
              svd_c(batch, m, n, (char)job, (ec_c64*)a, (float*)s, (ec_c64*)u, (ec_c64*)vt,
                    (lint*)info),
              svd_z(batch, m, n, (char)job, (ec_c128*)a, (double*)s, (ec_c128*)u,
                    (ec_c128*)vt, (lint*)info));
}

int ec_linalg_lstsq_complex(int dtype, int64_t batch, int64_t m, int64_t n, int64_t nrhs,
                            int driver, double rcond, ec_ptr a, ec_ptr b, ec_ptr s, ec_ptr rank,
                            ec_ptr info) {
    if (driver < 0 || driver > 3)
        return ec_fail(EC_ERR_INVALID, "linalg.lstsq: unknown driver code %d", driver);
    CDISPATCH("linalg.lstsq", fits("linalg.lstsq", m, n, nrhs),
              lstsq_c(batch, m, n, nrhs, driver, rcond, (ec_c64*)a, (ec_c64*)b, (float*)s,
                      (lint*)rank, (lint*)info),
              lstsq_z(batch, m, n, nrhs, driver, rcond, (ec_c128*)a, (ec_c128*)b, (double*)s,
                      (lint*)rank, (lint*)info));
}

int ec_linalg_geqrf_complex(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a,
                            ec_ptr tau, ec_ptr info) {
    CDISPATCH("geqrf", fits("geqrf", m, n, m * n),
              geqrf_c(batch, m, n, (ec_c64*)a, (ec_c64*)tau, (lint*)info),
              geqrf_z(batch, m, n, (ec_c128*)a, (ec_c128*)tau, (lint*)info));
}

int ec_linalg_ldl_factor_complex(int dtype, int64_t batch, int64_t n, int hermitian, ec_ptr a,
                                 ec_ptr ipiv, ec_ptr info) {
    CDISPATCH("ldl_factor", fits("ldl_factor", n, n, n * n),
              ldl_factor_c(batch, n, hermitian, (ec_c64*)a, (lint*)ipiv, (lint*)info),
              ldl_factor_z(batch, n, hermitian, (ec_c128*)a, (lint*)ipiv, (lint*)info));
}

int ec_linalg_ldl_solve_complex(int dtype, int64_t batch, int64_t n, int64_t nrhs, int hermitian,
                                ec_ptr a, ec_ptr ipiv, ec_ptr x, ec_ptr info) {
    CDISPATCH("ldl_solve", fits("ldl_solve", n, nrhs, n * (n > nrhs ? n : nrhs)),
              ldl_solve_c(batch, n, nrhs, hermitian, (const ec_c64*)a, (const lint*)ipiv,
                          (ec_c64*)x, (lint*)info),
              ldl_solve_z(batch, n, nrhs, hermitian, (const ec_c128*)a, (const lint*)ipiv,
                          (ec_c128*)x, (lint*)info));
}

int ec_linalg_eig(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr w, ec_ptr v,
                  ec_ptr info) {
    int st = fits("linalg.eig", n, n, 0);
    if (st) return st;
    ec_blas_threads_begin();
    switch (dtype) {
    case EC_FLOAT32: st = rgeev_s(batch, n, (float*)a, (ec_c64*)w, (ec_c64*)v, (lint*)info); break;
    case EC_FLOAT64: st = rgeev_d(batch, n, (double*)a, (ec_c128*)w, (ec_c128*)v, (lint*)info); break;
    case EC_COMPLEX64: st = geev_c(batch, n, (ec_c64*)a, (ec_c64*)w, (ec_c64*)v, (lint*)info); break;
    case EC_COMPLEX128: st = geev_z(batch, n, (ec_c128*)a, (ec_c128*)w, (ec_c128*)v, (lint*)info); break;
    default:
        st = ec_fail(EC_ERR_DTYPE, "linalg.eig: LAPACK kernels take float32, float64, complex64 "
                     "or complex128 (dtype code %d)", dtype);
    }
    ec_blas_threads_end();
    return st;
}
