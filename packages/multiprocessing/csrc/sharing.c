/* See ember_multiprocessing.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#include "ember_multiprocessing.h"

static _Thread_local int last_errno;

int64_t emp_ref_add(uintptr_t addr, int64_t delta) {
    return __atomic_add_fetch((int64_t*)addr, delta, __ATOMIC_ACQ_REL);
}

void emp_ref_store(uintptr_t addr, int64_t value) {
    __atomic_store_n((int64_t*)addr, value, __ATOMIC_RELEASE);
}

int64_t emp_ref_load(uintptr_t addr) { return __atomic_load_n((int64_t*)addr, __ATOMIC_ACQUIRE); }

uintptr_t emp_map(int fd, uint64_t size) {
    void* p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        last_errno = errno;
        return 0;
    }
    return (uintptr_t)p;
}

int emp_unmap(uintptr_t addr, uint64_t size) {
    if (munmap((void*)addr, (size_t)size) != 0) {
        last_errno = errno;
        return -1;
    }
    return 0;
}

int emp_last_errno(void) { return last_errno; }
