/* ember_multiprocessing: the few system calls Python's standard library does not
 * expose conveniently: atomic reference counts living in shared memory, and raw
 * mappings of memfd segments received from other processes.
 *
 * Header = C API = cffi cdef source (between the markers). */
#ifndef EMBER_MULTIPROCESSING_H
#define EMBER_MULTIPROCESSING_H

#include <stdint.h>

/* cdef:begin */

/* Atomically add delta to the int64 at addr; returns the new value. */
int64_t emp_ref_add(uintptr_t addr, int64_t delta);
int64_t emp_ref_load(uintptr_t addr);

/* Map `size` bytes of file descriptor fd shared and read-write; 0 on failure
 * (errno in emp_last_errno()).  emp_unmap undoes it. */
uintptr_t emp_map(int fd, uint64_t size);
int emp_unmap(uintptr_t addr, uint64_t size);
int emp_last_errno(void);

/* Copy n bytes (used for moving data into shared memory without the GIL). */
void emp_copy(uintptr_t dst, uintptr_t src, uint64_t n);

/* cdef:end */

#endif
