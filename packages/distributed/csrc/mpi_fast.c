/* MPI_Iallreduce polled to completion in C (Note [MPI fast path] in _mpi.py). */
#define _GNU_SOURCE
#include "ember_distributed.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <time.h>

/* MPI's C API with int handles (MPICH and derivatives) ... */
typedef int (*iallreduce_int_fn)(const void *, void *, int, int, int, int, int *);
typedef int (*test_int_fn)(int *, int *, void *);
/* ... and with pointer handles (Open MPI, the MPI 5 ABI). */
typedef int (*iallreduce_ptr_fn)(const void *, void *, int, void *, void *, void *, void **);
typedef int (*test_ptr_fn)(void **, int *, void *);
typedef int (*version_fn)(char *, int *);

/* MPI_MAX_LIBRARY_VERSION_STRING is 8192 in MPICH, 256 in Open MPI */
#define VERSION_BYTES 8192
/* larger than any implementation's MPI_Status (MPICH: 20 bytes, Open MPI: 24) */
#define STATUS_BYTES 256

/* polls before the loop starts yielding the core (see emd_allreduce) */
#define SPIN_POLLS 1024

static void *iallreduce_sym, *test_sym, *version_sym;
static int int_handles;

static int find_in(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *a = dlsym(h, "MPI_Iallreduce");
    void *t = dlsym(h, "MPI_Test");
    void *v = dlsym(h, "MPI_Get_library_version");
    if (a && t && v) {
        /* the library stays loaded (mpi4py holds it); this handle keeps it so */
        iallreduce_sym = a;
        test_sym = t;
        version_sym = v;
        return 1;
    }
    dlclose(h);
    return 0;
}

int emd_mpi_bind(int handle_bytes, char *version, int len) {
    if (handle_bytes != 4 && handle_bytes != (int)sizeof(void *))
        return -1;
    if (!iallreduce_sym && !dl_iterate_phdr(find_in, NULL))
        return -1;
    int_handles = handle_bytes == 4;
    static char buf[VERSION_BYTES];
    int n = 0;
    if (((version_fn)version_sym)(buf, &n) != 0)
        return -1;
    /* the string up to its NUL (Open MPI's resultlen counts the NUL) */
    n = (int)strnlen(buf, sizeof buf);
    if (n >= len)
        n = len - 1;
    if (n < 0)
        n = 0;
    memcpy(version, buf, (size_t)n);
    version[n] = 0;
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Poll *req (a request handle in the caller's memory) with MPI_Test until it is
 * done or slice_s seconds passed; *req becomes MPI_REQUEST_NULL when done. */
static int poll(uint64_t *req, double slice_s, unsigned spun) {
    _Alignas(16) char status[STATUS_BYTES];
    int req_i = (int)(uint32_t)*req, flag = 0, rc = 0;
    void *req_p = (void *)(uintptr_t)*req;
    double deadline = -1.0;
    for (unsigned n = spun; rc == 0; n++) {
        rc = int_handles ? ((test_int_fn)test_sym)(&req_i, &flag, status)
                         : ((test_ptr_fn)test_sym)(&req_p, &flag, status);
        if (rc != 0 || flag)
            break;
        /* The clock is read every 256 polls.  A small all-reduce finishes within
         * the first SPIN_POLLS polls on a machine with a free core for every
         * process; past them the core is offered to others every few polls, so
         * that a peer process waiting for a core (more processes than cores)
         * gets it sooner than at the end of this one's time slice. */
        if (!(n & 255)) {
            double t = now();
            if (deadline < 0)
                deadline = t + slice_s;
            else if (t > deadline) {
                *req = int_handles ? (uint64_t)(uint32_t)req_i : (uint64_t)(uintptr_t)req_p;
                return EMD_PENDING;
            }
        }
        if (n >= SPIN_POLLS && !(n & 7))
            sched_yield();
    }
    *req = int_handles ? (uint64_t)(uint32_t)req_i : (uint64_t)(uintptr_t)req_p;
    /* MPI's error codes are positive (MPI_SUCCESS is 0) */
    return rc > 0 ? rc : rc == 0 ? EMD_OK : 1;
}

int emd_allreduce(uintptr_t buf, int count, uint64_t datatype, uint64_t op, uint64_t comm,
                  intptr_t in_place, double slice_s, uint64_t *req) {
    if (!iallreduce_sym)
        return EMD_UNBOUND;
    int req_i = 0, rc;
    void *req_p = NULL;
    if (int_handles)
        rc = ((iallreduce_int_fn)iallreduce_sym)((const void *)in_place, (void *)buf, count,
                                                 (int)(uint32_t)datatype, (int)(uint32_t)op,
                                                 (int)(uint32_t)comm, &req_i);
    else
        rc = ((iallreduce_ptr_fn)iallreduce_sym)((const void *)in_place, (void *)buf, count,
                                                 (void *)(uintptr_t)datatype,
                                                 (void *)(uintptr_t)op,
                                                 (void *)(uintptr_t)comm, &req_p);
    if (rc != 0)
        return rc > 0 ? rc : 1;
    *req = int_handles ? (uint64_t)(uint32_t)req_i : (uint64_t)(uintptr_t)req_p;
    return poll(req, slice_s, 0);
}

int emd_wait(uint64_t *req, double slice_s) {
    if (!test_sym)
        return EMD_UNBOUND;
    return poll(req, slice_s, SPIN_POLLS);
}
