/* LAPACK factorizations PyTorch exposes on their own: geqrf (torch.geqrf:
 * Householder QR leaving R above the diagonal, the reflectors below it and
 * their scalars in tau) and the LDL^T factorization (ldl_factor, ldl_solve).
 * Layout as Note [LAPACK layout] in linalg.c: a batch of column-major
 * matrices, overwritten in place; only LAPACK's scratch is allocated. */
#include <stddef.h>
#include <stdlib.h>

#include "core.h"
#include "ember_core.h"

typedef int lint; /* LAPACK's integer in scipy-openblas32 */

void scipy_sgeqrf_(const lint* m, const lint* n, float* a, const lint* lda, float* tau,
                   float* work, const lint* lwork, lint* info);
void scipy_dgeqrf_(const lint* m, const lint* n, double* a, const lint* lda, double* tau,
                   double* work, const lint* lwork, lint* info);

#define GEQRF(T, p)                                                                    \
    static int geqrf_##p(int64_t batch, lint m, lint n, T* a, T* tau, lint* info) {    \
        lint lda = m > 1 ? m : 1, k = m < n ? m : n, lwork = -1, i2;                   \
        T q = 0;                                                                       \
        scipy_##p##geqrf_(&m, &n, a, &lda, tau, &q, &lwork, &i2);                      \
        lwork = (lint)q > (n > 1 ? n : 1) ? (lint)q : (n > 1 ? n : 1);                 \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                   \
        if (!work) return ec_fail(EC_ERR_NOMEM, "geqrf: no memory for LAPACK scratch"); \
        for (int64_t b = 0; b < batch; b++)                                            \
            scipy_##p##geqrf_(&m, &n, a + b * (int64_t)m * n, &lda, tau + b * (int64_t)k, \
                              work, &lwork, info + b);                                 \
        free(work);                                                                    \
        return EC_OK;                                                                  \
    }

GEQRF(float, s)
GEQRF(double, d)

int ec_linalg_geqrf(int dtype, int64_t batch, int64_t m, int64_t n, ec_ptr a, ec_ptr tau,
                    ec_ptr info) {
    if (m > 2147483647LL || n > 2147483647LL || m * n > 2147483647LL)
        return ec_fail(EC_ERR_INVALID, "geqrf: a %lldx%lld matrix is too large for LAPACK",
                       (long long)m, (long long)n);
    if (dtype == EC_FLOAT32)
        return geqrf_s(batch, (lint)m, (lint)n, (float*)a, (float*)tau, (lint*)info);
    if (dtype == EC_FLOAT64)
        return geqrf_d(batch, (lint)m, (lint)n, (double*)a, (double*)tau, (lint*)info);
    return ec_fail(EC_ERR_DTYPE, "geqrf: LAPACK computes in float32 or float64");
}

/* ---------------------------------------------------------------- LDL^T
 * torch.linalg.ldl_factor / ldl_solve: Bunch-Kaufman LDL^T of symmetric
 * matrices (sytrf, lower triangle) and the solve from it (sytrs).  Pivots are
 * LAPACK's (1-based; negative pairs mark 2x2 blocks).  Character arguments
 * carry gfortran's hidden length at the end. */

void scipy_ssytrf_(const char* uplo, const lint* n, float* a, const lint* lda, lint* ipiv,
                   float* work, const lint* lwork, lint* info, size_t l1);
void scipy_dsytrf_(const char* uplo, const lint* n, double* a, const lint* lda, lint* ipiv,
                   double* work, const lint* lwork, lint* info, size_t l1);
void scipy_ssytrs_(const char* uplo, const lint* n, const lint* nrhs, const float* a,
                   const lint* lda, const lint* ipiv, float* b, const lint* ldb, lint* info,
                   size_t l1);
void scipy_dsytrs_(const char* uplo, const lint* n, const lint* nrhs, const double* a,
                   const lint* lda, const lint* ipiv, double* b, const lint* ldb, lint* info,
                   size_t l1);

#define LDL(T, p)                                                                          \
    static int ldl_factor_##p(int64_t batch, lint n, T* a, lint* ipiv, lint* info) {       \
        lint lda = n > 1 ? n : 1, lwork = -1, i2;                                          \
        T q = 0;                                                                           \
        scipy_##p##sytrf_("L", &n, a, &lda, ipiv, &q, &lwork, &i2, 1);                     \
        lwork = (lint)q > 1 ? (lint)q : 1;                                                 \
        T* work = malloc(sizeof(T) * (size_t)lwork);                                       \
        if (!work) return ec_fail(EC_ERR_NOMEM, "ldl_factor: no memory for LAPACK scratch"); \
        for (int64_t b = 0; b < batch; b++)                                                \
            scipy_##p##sytrf_("L", &n, a + b * (int64_t)n * n, &lda, ipiv + b * (int64_t)n, \
                              work, &lwork, info + b, 1);                                  \
        free(work);                                                                        \
        return EC_OK;                                                                      \
    }                                                                                      \
    static int ldl_solve_##p(int64_t batch, lint n, lint nrhs, const T* a, const lint* ipiv, \
                             T* x, lint* info) {                                           \
        lint lda = n > 1 ? n : 1;                                                          \
        for (int64_t b = 0; b < batch; b++)                                                \
            scipy_##p##sytrs_("L", &n, &nrhs, a + b * (int64_t)n * n, &lda,                \
                              ipiv + b * (int64_t)n, x + b * (int64_t)n * nrhs, &lda, info + b, \
                              1);                                                          \
        return EC_OK;                                                                      \
    }

LDL(float, s)
LDL(double, d)

static int fits(const char* op, int64_t n, int64_t nrhs) {
    if (n > 2147483647LL || nrhs > 2147483647LL || n * n > 2147483647LL ||
        n * nrhs > 2147483647LL)
        return ec_fail(EC_ERR_INVALID, "%s: a %lldx%lld system is too large for LAPACK", op,
                       (long long)n, (long long)nrhs);
    return EC_OK;
}

int ec_linalg_ldl_factor(int dtype, int64_t batch, int64_t n, ec_ptr a, ec_ptr ipiv,
                         ec_ptr info) {
    int st = fits("ldl_factor", n, 1);
    if (st) return st;
    if (dtype == EC_FLOAT32) return ldl_factor_s(batch, (lint)n, (float*)a, (lint*)ipiv, (lint*)info);
    if (dtype == EC_FLOAT64)
        return ldl_factor_d(batch, (lint)n, (double*)a, (lint*)ipiv, (lint*)info);
    return ec_fail(EC_ERR_DTYPE, "ldl_factor: LAPACK computes in float32 or float64");
}

int ec_linalg_ldl_solve(int dtype, int64_t batch, int64_t n, int64_t nrhs, ec_ptr a,
                        ec_ptr ipiv, ec_ptr x, ec_ptr info) {
    int st = fits("ldl_solve", n, nrhs);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return ldl_solve_s(batch, (lint)n, (lint)nrhs, (const float*)a, (const lint*)ipiv,
                           (float*)x, (lint*)info);
    if (dtype == EC_FLOAT64)
        return ldl_solve_d(batch, (lint)n, (lint)nrhs, (const double*)a, (const lint*)ipiv,
                           (double*)x, (lint*)info);
    return ec_fail(EC_ERR_DTYPE, "ldl_solve: LAPACK computes in float32 or float64");
}
