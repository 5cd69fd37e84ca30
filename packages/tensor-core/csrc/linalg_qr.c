/* geqrf on its own (torch.geqrf): Householder QR leaving R above the diagonal,
 * the reflectors below it and their scalars in tau, as LAPACK returns them.
 * Layout as Note [LAPACK layout] in linalg.c: a batch of column-major
 * matrices, overwritten in place; only LAPACK's scratch is allocated. */
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
