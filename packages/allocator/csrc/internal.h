/* Internal structures of the caching core, shared by pool.c, stats.c and
 * snapshot.c.  Nothing here is visible to Python. */
#ifndef EMBER_ALLOCATOR_INTERNAL_H
#define EMBER_ALLOCATOR_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ember_allocator.h"
#include "raw.h"

struct ea_segment;
struct ea_pool;

typedef struct ea_block {
    uintptr_t ptr;
    size_t size;
    size_t requested;
    uint64_t stream;
    struct ea_segment* seg;
    struct ea_block* prev;      /* neighbours in address order within the segment */
    struct ea_block* next;
    int state;                  /* EA_BLOCK_* */
    int in_pool;                /* in its pool's free list */
    int counted_split;          /* counted in inactive_split stats while in the pool */
    int counted_oversize;       /* counted in oversize_allocations while allocated */
    int pending_events;         /* events still to complete before the block is free */
    int n_uses, cap_uses;
    uint64_t* uses;             /* other streams the block was used on (record_stream) */
} ea_block;

typedef struct ea_segment {
    uintptr_t base;
    size_t size;                /* address space spanned */
    size_t mapped;              /* bytes backed by memory (== size unless expandable) */
    uint64_t stream;
    int64_t handle;
    int is_small;
    int expandable;
    int counted_oversize;       /* counted in oversize_segments while reserved */
    struct ea_pool* pool;
    ea_block* first;
    struct ea_segment* prev_seg;
    struct ea_segment* next_seg;
} ea_segment;

typedef struct ea_pool {
    uint64_t stream;
    int is_small;
    ea_block** free;            /* free blocks sorted by (size, address): best fit */
    size_t n_free, cap_free;
    ea_segment* expandable;     /* the growing segment of a large pool, if enabled */
} ea_pool;

typedef struct ea_ptrmap {      /* open addressing, linear probing: ptr -> block */
    uintptr_t* keys;
    ea_block** values;
    size_t cap, count;
} ea_ptrmap;

typedef struct ea_pending {
    void* event;
    ea_block* block;
} ea_pending;

struct ea_allocator {
    pthread_mutex_t lock;
    ea_config cfg;
    ea_raw raw;
    ea_pool** pools;
    size_t n_pools, cap_pools;
    ea_segment* segments;
    ea_ptrmap live;             /* allocated (not yet freed by the user) blocks */
    ea_pending* pending;
    size_t n_pending, cap_pending;
    ea_stats stats;
    ea_event* history;
    int64_t history_cap, history_head, history_count;
    ea_block* spare_blocks;     /* recycled block structs */
    struct ea_allocator* next_registered;  /* Note [Fork safety] in pool.c */
};

/* stats.c: the only code that changes statistics. */
/* Statistics: every counter has the shape {current, peak, allocated, freed} for
 * {all, small, large} pools, and changes only through ea_stat_update (inline:
 * it runs about a dozen times per allocate/free pair). */
enum { EA_STAT_ALL = 0, EA_STAT_SMALL = 1, EA_STAT_LARGE = 2 };

static inline void ea_stat_apply(ea_stat* s, int64_t delta) {
    s->current += delta;
    if (s->current > s->peak) s->peak = s->current;
    if (delta > 0) s->allocated += delta;
    else s->freed -= delta;
}

static inline void ea_stat_update(ea_stat stat[3], int is_small, int64_t delta) {
    ea_stat_apply(&stat[EA_STAT_ALL], delta);
    ea_stat_apply(&stat[is_small ? EA_STAT_SMALL : EA_STAT_LARGE], delta);
}

void ea_stats_reset_peak(ea_stats* s);
void ea_stats_reset_accumulated(ea_stats* s);

/* snapshot.c */
void ea_history_add(ea_allocator* a, int kind, uintptr_t address, uint64_t size, uint64_t stream);

/* errors.c */
void ea_set_oom(const ea_oom_info* info);

#endif
