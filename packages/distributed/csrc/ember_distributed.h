/* ember_distributed: the MPI calls whose Python cost shows (Note [MPI fast path]
 * in _mpi.py).  No MPI header is needed to build this: the MPI functions are found
 * at run time in the MPI library mpi4py loaded, and MPI's handles (ints in
 * MPICH, pointers in Open MPI and the MPI ABI) travel as 64-bit integers, cast
 * here to the implementation's width.  C never raises: it returns a status.
 *
 * Header = C API = cffi cdef source (between the markers). */
#ifndef EMBER_DISTRIBUTED_H
#define EMBER_DISTRIBUTED_H

#include <stdint.h>

/* cdef:begin */

/* Statuses of emd_allreduce and emd_wait; a positive one is the error code MPI
 * returned. */
#define EMD_OK 0
#define EMD_PENDING -1  /* not finished within the slice: *req holds the request */
#define EMD_UNBOUND -2  /* emd_mpi_bind has not found an MPI library */

/* Find MPI_Iallreduce, MPI_Test and MPI_Get_library_version in the loaded
 * objects of this process.  handle_bytes: sizeof(MPI_Comm) (4: int handles, 8:
 * pointer handles; every handle type must have that width).  Returns 0, or -1
 * when no loaded object exports them; version (len bytes) receives the found
 * library's MPI_Get_library_version, to check it is the one mpi4py runs. */
int emd_mpi_bind(int handle_bytes, char *version, int len);

/* MPI_Iallreduce(in_place, buf, count, datatype, op, comm), then polled with
 * MPI_Test until done or slice_s seconds passed (EMD_PENDING: *req holds the
 * request, to be polled on with emd_wait).  The caller returns to Python between
 * slices, so that signals (Ctrl-C) are seen while a peer is late; the GIL is
 * released during the calls. */
int emd_allreduce(uintptr_t buf, int count, uint64_t datatype, uint64_t op, uint64_t comm,
                  intptr_t in_place, double slice_s, uint64_t *req);
int emd_wait(uint64_t *req, double slice_s);

/* cdef:end */

#endif
