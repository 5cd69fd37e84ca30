/* The strided iterator, threading and error reporting shared by every kernel. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core.h"

const int ec_itemsize[EC_NUM_DTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 2, 4, 8, 8, 16};

/* ------------------------------------------------------------------ errors */

static _Thread_local char tls_message[512];

int ec_fail(int status, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_message, sizeof tls_message, fmt, ap);
    va_end(ap);
    return status;
}

const char* ec_last_message(void) { return tls_message; }

/* ----------------------------------------------------------------- threads */

/* Note [Threads after fork]: GNU OpenMP's thread pool does not survive fork();
 * a forked child (a DataLoader worker, say) that enters a parallel region can
 * hang.  Children therefore run kernels on one thread. */
static int num_threads = 0; /* 0: not set, use OpenMP's default */
static int in_forked_child = 0;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void mark_forked_child(void) { in_forked_child = 1; }
static void install_atfork(void) { pthread_atfork(NULL, NULL, mark_forked_child); }

void ec_blas_set_num_threads(int n); /* blas.c */

void ec_set_num_threads(int n) {
    pthread_once(&atfork_once, install_atfork);
    if (n < 1) n = 1;
    num_threads = n;
    ec_blas_set_num_threads(n);
}

int ec_get_num_threads(void) {
    pthread_once(&atfork_once, install_atfork);
    if (in_forked_child) return 1;
    if (num_threads) return num_threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int ec_has_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

int ec_threads_for(int64_t work, int64_t grain) {
    if (work < 2 * grain) return 1;
    int nt = ec_get_num_threads();
    int64_t useful = work / grain;
    return useful < nt ? (int)useful : nt;
}

/* ---------------------------------------------------------------- iterator */

typedef struct iter {
    int nops, nd;
    int64_t shape[EC_MAX_DIMS];
    int64_t st[EC_MAX_OPERANDS][EC_MAX_DIMS]; /* bytes */
} iter;

/* Visit flat indices [lo, hi) of the iteration space. */
static void run_range(const iter* it, char** base, ec_loop loop, ec_params* p, int64_t lo,
                      int64_t hi) {
    int nd = it->nd, nops = it->nops;
    int64_t idx[EC_MAX_DIMS];
    char* ptr[EC_MAX_OPERANDS];
    int64_t inner_st[EC_MAX_OPERANDS];
    int64_t rem = lo;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (int k = 0; k < nops; k++) {
        ptr[k] = base[k];
        for (int d = 0; d < nd; d++) ptr[k] += idx[d] * it->st[k][d];
        inner_st[k] = it->st[k][nd - 1];
    }
    int64_t inner = it->shape[nd - 1];
    int64_t pos = lo;
    while (pos < hi) {
        int64_t n = inner - idx[nd - 1];
        if (n > hi - pos) n = hi - pos;
        loop(n, ptr, inner_st, p);
        pos += n;
        if (pos >= hi) break;
        /* advance by n along the inner dim, carrying into outer dims */
        idx[nd - 1] += n;
        for (int k = 0; k < nops; k++) ptr[k] += n * inner_st[k];
        for (int d = nd - 1; d > 0 && idx[d] == it->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int k = 0; k < nops; k++)
                ptr[k] += it->st[k][d - 1] - it->shape[d] * it->st[k][d];
        }
    }
}

int ec_iterate(int nops, int ndim, const int64_t* layout, const int* itemsizes, char** base,
               ec_loop loop, ec_params* p) {
    if (ndim < 0 || ndim > EC_MAX_DIMS || nops > EC_MAX_OPERANDS)
        return ec_fail(EC_ERR_INVALID, "iterator: %d dims (max %d)", ndim, EC_MAX_DIMS);
    iter it;
    it.nops = nops;
    it.nd = 0;
    for (int d = 0; d < ndim; d++) {
        int64_t s = layout[d];
        if (s == 0) return EC_OK; /* empty: nothing to do */
        if (s < 0) return ec_fail(EC_ERR_INVALID, "iterator: negative size %lld", (long long)s);
        if (s == 1) continue;
        it.shape[it.nd] = s;
        for (int k = 0; k < nops; k++) it.st[k][it.nd] = layout[ndim * (1 + k) + d] * itemsizes[k];
        it.nd++;
    }
    /* merge dim d into its outer neighbour when contiguous for every operand */
    int nd = 0;
    for (int d = 0; d < it.nd; d++) {
        if (nd > 0) {
            int mergeable = 1;
            for (int k = 0; k < nops; k++)
                mergeable &= it.st[k][nd - 1] == it.st[k][d] * it.shape[d];
            if (mergeable) {
                it.shape[nd - 1] *= it.shape[d];
                for (int k = 0; k < nops; k++) it.st[k][nd - 1] = it.st[k][d];
                continue;
            }
        }
        it.shape[nd] = it.shape[d];
        for (int k = 0; k < nops; k++) it.st[k][nd] = it.st[k][d];
        nd++;
    }
    it.nd = nd;
    if (nd == 0) { /* a single element */
        int64_t zero[EC_MAX_OPERANDS] = {0};
        loop(1, base, zero, p);
        return p->status;
    }
    int64_t total = 1;
    for (int d = 0; d < nd; d++) total *= it.shape[d];
    int nt = ec_threads_for(total, EC_GRAIN);
    if (nt <= 1) {
        run_range(&it, base, loop, p, 0, total);
    } else {
#pragma omp parallel num_threads(nt)
        {
#ifdef _OPENMP
            int t = omp_get_thread_num(), n = omp_get_num_threads();
#else
            int t = 0, n = 1;
#endif
            int64_t lo = total * t / n, hi = total * (t + 1) / n;
            if (lo < hi) run_range(&it, base, loop, p, lo, hi);
        }
    }
    return p->status;
}
