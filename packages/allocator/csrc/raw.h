/* The raw allocator interface: where the caching core gets and returns memory.
 *
 * The core (pool.c) never calls malloc, mmap or CUDA directly: it calls these
 * function pointers, so its policy is the same for every kind of memory and is
 * tested on any machine (EA_RAW_SIM plays a device with asynchronous streams).
 */
#ifndef EMBER_ALLOCATOR_RAW_H
#define EMBER_ALLOCATOR_RAW_H

#include <stddef.h>
#include <stdint.h>

typedef struct ea_raw {
    const char* name;
    void* ctx;
    int has_streams;   /* 0: memory use is synchronous, frees need no events */

    /* Whole segments.  *handle is kind-specific (a memfd for SHM), -1 if none. */
    int (*alloc)(void* ctx, size_t size, void** ptr, int64_t* handle);
    void (*free)(void* ctx, void* ptr, size_t size, int64_t handle);

    /* Stream events (when has_streams). query: 1 done, 0 pending, <0 error. */
    int (*record_event)(void* ctx, uint64_t stream, void** event);
    int (*query_event)(void* ctx, void* event);
    void (*destroy_event)(void* ctx, void* event);
    int (*synchronize)(void* ctx);

    /* Expandable segments: reserve address space, back pages with memory, and
     * take memory away again.  NULL reserve = not supported by this kind. */
    size_t granularity;
    int (*reserve)(void* ctx, size_t size, void** base);
    int (*map)(void* ctx, void* addr, size_t size);
    int (*unmap)(void* ctx, void* addr, size_t size);
    void (*release)(void* ctx, void* base, size_t size);

    /* What exists: free/total bytes, 0 when unknown. */
    int (*memory_info)(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes);

    void (*destroy)(void* ctx);
} ea_raw;

/* Constructors; each returns EA_OK or an EA_ERR_* status and sets the message. */
int ea_raw_host_init(ea_raw* raw);
int ea_raw_shm_init(ea_raw* raw);
int ea_raw_sim_init(ea_raw* raw);
int ea_raw_sim_complete(ea_raw* raw, uint64_t stream);
int ea_raw_pinned_init(ea_raw* raw, int device);
int ea_raw_cuda_init(ea_raw* raw, int device);

/* Thread-local error reporting shared by every file (errors.c). */
int ea_fail(int status, const char* fmt, ...);
void ea_clear_error(void);

#endif
