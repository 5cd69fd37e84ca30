/* ember_allocator: a caching allocator generic over raw allocators and streams.
 *
 * This header is both the C API and the source of the cffi cdef: everything
 * between the cdef markers is read by csrc/build.py, so it must stay within the
 * C subset cffi parses (no #if, no macros other than integer #defines).
 *
 * Every function returns a status (EA_OK or an EA_ERR_* code) or a value whose
 * failure is signalled in-band (0 pointer); C never raises.  The caller (the one
 * Python module _lib.py) turns statuses into typed exceptions.
 */
#ifndef EMBER_ALLOCATOR_H
#define EMBER_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

/* cdef:begin */

/* Status codes. */
#define EA_OK 0
#define EA_ERR_OOM 1            /* out of memory: see ea_last_oom() */
#define EA_ERR_INVALID 2        /* bad argument */
#define EA_ERR_NOT_ALLOCATED 3  /* pointer not handed out by this allocator (or already freed) */
#define EA_ERR_UNAVAILABLE 4    /* raw allocator cannot run here (no CUDA runtime, ...) */
#define EA_ERR_SYSTEM 5         /* an OS or driver call failed: see ea_last_message() */
#define EA_ERR_BUSY 6           /* operation not allowed while blocks are in use */

/* Raw allocators: where segments come from. */
#define EA_RAW_HOST 0    /* pageable host memory (mmap) */
#define EA_RAW_PINNED 1  /* page-locked host memory (cudaHostAlloc) */
#define EA_RAW_CUDA 2    /* device memory (cudaMalloc, or cuMemMap when expandable) */
#define EA_RAW_SHM 3     /* host memory in anonymous memfd segments, shareable across processes */
#define EA_RAW_SIM 4     /* host memory that behaves like a device with asynchronous streams */

/* Block states in snapshots. */
#define EA_BLOCK_FREE 0
#define EA_BLOCK_ALLOCATED 1
#define EA_BLOCK_PENDING 2    /* freed by the user, waiting for other streams to finish with it */
#define EA_BLOCK_UNMAPPED 3   /* expandable segment: address space with no memory behind it */

/* History event kinds. */
#define EA_EV_ALLOC 0
#define EA_EV_FREE 1            /* the user freed the block (PyTorch's free_requested) */
#define EA_EV_SEGMENT_ALLOC 2
#define EA_EV_SEGMENT_FREE 3
#define EA_EV_OOM 4
#define EA_EV_EMPTY_CACHE 5
#define EA_EV_MAP 6
#define EA_EV_UNMAP 7
#define EA_EV_FREE_COMPLETED 8  /* the block is back in its pool (after its streams' events) */

/* Policy constants, exported so Python never writes them twice. */
#define EA_MIN_BLOCK_SIZE 512
#define EA_SMALL_SIZE 1048576
#define EA_SMALL_BUFFER 2097152
#define EA_LARGE_BUFFER 20971520
#define EA_MIN_LARGE_ALLOC 10485760
#define EA_ROUND_LARGE 2097152
#define EA_HOST_ALIGNMENT 64

typedef struct ea_allocator ea_allocator;

typedef struct ea_config {
    int raw_kind;                 /* EA_RAW_* */
    int device_index;             /* CUDA device for PINNED/CUDA */
    uint64_t memory_limit;        /* cap on reserved bytes; 0 = none */
    uint64_t max_split_size;      /* blocks at least this large are never split; 0 = no limit */
    int expandable_segments;      /* large pool grows one mapped segment per stream */
    uint64_t expandable_reserve;  /* address space reserved per expandable segment; 0 = default */
} ea_config;

/* {current, peak, allocated, freed}: the one shape of every statistic. */
typedef struct ea_stat {
    int64_t current;
    int64_t peak;
    int64_t allocated;
    int64_t freed;
} ea_stat;

/* Each array is indexed by pool: 0 = all, 1 = small, 2 = large. */
typedef struct ea_stats {
    ea_stat allocation[3];
    ea_stat segment[3];
    ea_stat active[3];
    ea_stat inactive_split[3];
    ea_stat allocated_bytes[3];
    ea_stat reserved_bytes[3];
    ea_stat active_bytes[3];
    ea_stat inactive_split_bytes[3];
    ea_stat requested_bytes[3];
    ea_stat oversize_allocations;  /* blocks of at least max_split_size handed out */
    ea_stat oversize_segments;     /* segments of at least max_split_size reserved */
    int64_t num_alloc_retries;
    int64_t num_ooms;
    int64_t num_sync_all_streams;
    int64_t num_device_alloc;
    int64_t num_device_free;
    int64_t num_maps;
    int64_t num_unmaps;
    int64_t cache_hits;
    int64_t cache_misses;
    uint64_t max_split_size;
    uint64_t memory_limit;
} ea_stats;

typedef struct ea_oom_info {
    uint64_t requested;         /* bytes asked for */
    uint64_t rounded;           /* after rounding */
    uint64_t allocated;         /* bytes held by live blocks */
    uint64_t reserved;          /* bytes held from the raw allocator */
    uint64_t reserved_free;     /* reserved but not allocated (cached) */
    uint64_t largest_free;      /* largest cached free block */
    uint64_t limit;             /* memory_limit, 0 = none */
    uint64_t device_free;       /* what the raw allocator says is free, 0 = unknown */
    uint64_t device_total;      /* what the raw allocator says exists, 0 = unknown */
    uint64_t stream;
} ea_oom_info;

typedef struct ea_segment_info {
    uintptr_t address;
    uint64_t size;              /* bytes of address space the segment spans */
    uint64_t mapped;            /* bytes backed by memory (== size unless expandable) */
    uint64_t allocated;         /* bytes in allocated blocks */
    uint64_t active;            /* bytes in allocated or pending blocks */
    uint64_t requested;         /* bytes asked for by the users of its blocks */
    uint64_t stream;
    int64_t handle;             /* raw allocator handle (memfd for SHM), -1 if none */
    int is_small;
    int expandable;
    int64_t num_blocks;
} ea_segment_info;

typedef struct ea_block_info {
    uintptr_t address;
    uint64_t size;
    uint64_t requested;
    uint64_t stream;
    int state;                  /* EA_BLOCK_* */
    int64_t segment;            /* index into the snapshot's segments */
} ea_block_info;

typedef struct ea_event {
    int kind;                   /* EA_EV_* */
    uintptr_t address;
    uint64_t size;
    uint64_t stream;
    int64_t time_ns;            /* CLOCK_MONOTONIC */
    int64_t allocated_bytes;    /* after the event */
    int64_t reserved_bytes;     /* after the event */
} ea_event;

/* Lifetime. ea_create returns NULL on failure with the reason in *status and
 * ea_last_message(). ea_destroy releases every segment; live pointers dangle. */
ea_allocator* ea_create(const ea_config* config, int* status);
void ea_destroy(ea_allocator* a);

/* Allocation. ea_malloc returns 0 on failure; ea_last_status() says why. */
uintptr_t ea_malloc(ea_allocator* a, uint64_t nbytes, uint64_t stream);
int ea_free(ea_allocator* a, uintptr_t ptr);
int ea_record_stream(ea_allocator* a, uintptr_t ptr, uint64_t stream);
int ea_block_of(ea_allocator* a, uintptr_t ptr, ea_block_info* block, ea_segment_info* segment);

/* The process's default allocator, reachable through one-argument calls, which
 * cffi dispatches about twice as fast as calls with several arguments.
 * Allocations use stream 0. ea_set_default(NULL) unsets it. */
int ea_set_default(ea_allocator* a);
uintptr_t ea_default_malloc(uint64_t nbytes);
int ea_default_free(uintptr_t ptr);

/* Errors of the calling thread's last failed call. */
int ea_last_status(void);
const char* ea_last_message(void);
void ea_last_oom(ea_oom_info* out);

/* Cache control and settings. */
int ea_empty_cache(ea_allocator* a);
int ea_set_memory_limit(ea_allocator* a, uint64_t bytes);
int ea_set_max_split_size(ea_allocator* a, uint64_t bytes);
int ea_synchronize(ea_allocator* a);
int ea_device_memory(ea_allocator* a, uint64_t* free_bytes, uint64_t* total_bytes);

/* Statistics. */
void ea_get_stats(ea_allocator* a, ea_stats* out);
void ea_reset_peak_stats(ea_allocator* a);
void ea_reset_accumulated_stats(ea_allocator* a);

/* Snapshot: fills up to max_* entries and returns the true counts in *n_*, so a
 * caller whose buffers were too small calls again with larger ones. */
int ea_snapshot(ea_allocator* a, ea_segment_info* segments, int64_t max_segments,
                int64_t* n_segments, ea_block_info* blocks, int64_t max_blocks,
                int64_t* n_blocks);

/* History: a ring buffer of the last `capacity` events (0 turns it off). */
int ea_set_history(ea_allocator* a, int64_t capacity);
int64_t ea_history(ea_allocator* a, ea_event* out, int64_t max_events);

/* Simulated device (EA_RAW_SIM): complete every event recorded on a stream. */
int ea_sim_complete(ea_allocator* a, uint64_t stream);

/* Self-test (selftest.c): n_threads C threads allocate and free at once, each
 * `iterations` random steps of up to max_bytes on n_streams streams, checking
 * that no live block is overwritten by another.  Everything is freed at the
 * end.  Host-accessible kinds only. */
int ea_stress_threads(ea_allocator* a, int n_threads, int64_t iterations, uint64_t max_bytes,
                      int n_streams, uint64_t seed);

/* cdef:end */

#endif /* EMBER_ALLOCATOR_H */
