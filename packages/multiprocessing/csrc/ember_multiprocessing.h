/* ember_multiprocessing: the few system calls Python's standard library does not
 * expose: atomic reference counts that live in shared memory, and raw mappings
 * of segments received from other processes.  C never raises: failures return
 * 0 / -1 and leave errno in emp_last_errno().
 *
 * Header = C API = cffi cdef source (between the markers). */
#ifndef EMBER_MULTIPROCESSING_H
#define EMBER_MULTIPROCESSING_H

#include <stdint.h>

/* cdef:begin */

/* The int64 at addr (8-byte aligned, in shared memory), atomically: add delta
 * and return the new value / store value / load. */
int64_t emp_ref_add(uintptr_t addr, int64_t delta);
void emp_ref_store(uintptr_t addr, int64_t value);
int64_t emp_ref_load(uintptr_t addr);

/* Map `size` bytes of descriptor fd shared and read-write; 0 on failure.
 * emp_unmap undoes it (0, or -1 on failure). */
uintptr_t emp_map(int fd, uint64_t size);
int emp_unmap(uintptr_t addr, uint64_t size);
int emp_last_errno(void);

/* cdef:end */

#endif
