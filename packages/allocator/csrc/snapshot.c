/* Snapshots (every segment and block, for tools) and the bounded history of
 * allocation events.  Both read the pool under its lock and copy out. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Called with the lock held.  Costs nothing when history is off. */
void ea_history_add(ea_allocator* a, int kind, uintptr_t address, uint64_t size,
                    uint64_t stream) {
    if (a->history_cap == 0) return;
    ea_event* e = &a->history[a->history_head];
    e->kind = kind;
    e->address = address;
    e->size = size;
    e->stream = stream;
    e->time_ns = now_ns();
    e->allocated_bytes = a->stats.allocated_bytes[EA_STAT_ALL].current;
    e->reserved_bytes = a->stats.reserved_bytes[EA_STAT_ALL].current;
    a->history_head = (a->history_head + 1) % a->history_cap;
    if (a->history_count < a->history_cap) a->history_count++;
}

int ea_set_history(ea_allocator* a, int64_t capacity) {
    if (capacity < 0) return ea_fail(EA_ERR_INVALID, "history capacity must be >= 0, got %lld",
                                     (long long)capacity);
    ea_event* buf = NULL;
    if (capacity > 0) {
        buf = calloc((size_t)capacity, sizeof *buf);
        if (!buf) return ea_fail(EA_ERR_OOM, "cannot allocate a history of %lld events",
                                 (long long)capacity);
    }
    pthread_mutex_lock(&a->lock);
    free(a->history);
    a->history = buf;
    a->history_cap = capacity;
    a->history_head = 0;
    a->history_count = 0;
    pthread_mutex_unlock(&a->lock);
    return EA_OK;
}

int64_t ea_history(ea_allocator* a, ea_event* out, int64_t max_events) {
    pthread_mutex_lock(&a->lock);
    int64_t n = a->history_count < max_events ? a->history_count : max_events;
    /* oldest first: the ring's oldest entry sits at head once it has wrapped */
    int64_t start = (a->history_head - a->history_count + a->history_cap) %
                    (a->history_cap ? a->history_cap : 1);
    int64_t skip = a->history_count - n;  /* keep the newest n */
    for (int64_t i = 0; i < n; i++) out[i] = a->history[(start + skip + i) % a->history_cap];
    pthread_mutex_unlock(&a->lock);
    return n;
}

static void fill_segment(const ea_segment* s, ea_segment_info* out) {
    memset(out, 0, sizeof *out);
    out->address = s->base;
    out->size = s->size;
    out->mapped = s->mapped;
    out->stream = s->stream;
    out->handle = s->handle;
    out->is_small = s->is_small;
    out->expandable = s->expandable;
    for (const ea_block* b = s->first; b; b = b->next) {
        out->num_blocks++;
        if (b->state == EA_BLOCK_ALLOCATED) {
            out->allocated += b->size;
            out->requested += b->requested;
        }
        if (b->state == EA_BLOCK_ALLOCATED || b->state == EA_BLOCK_PENDING) out->active += b->size;
    }
}

static void fill_block(const ea_block* b, int64_t segment_index, ea_block_info* out) {
    out->address = b->ptr;
    out->size = b->size;
    out->requested = b->state == EA_BLOCK_ALLOCATED ? b->requested : 0;
    out->stream = b->stream;
    out->state = b->state;
    out->segment = segment_index;
}

int ea_snapshot(ea_allocator* a, ea_segment_info* segments, int64_t max_segments,
                int64_t* n_segments, ea_block_info* blocks, int64_t max_blocks,
                int64_t* n_blocks) {
    pthread_mutex_lock(&a->lock);
    int64_t si = 0, bi = 0;
    for (const ea_segment* s = a->segments; s; s = s->next_seg, si++) {
        if (si < max_segments) fill_segment(s, &segments[si]);
        for (const ea_block* b = s->first; b; b = b->next, bi++)
            if (bi < max_blocks) fill_block(b, si, &blocks[bi]);
    }
    pthread_mutex_unlock(&a->lock);
    *n_segments = si;
    *n_blocks = bi;
    return EA_OK;
}

int ea_block_of(ea_allocator* a, uintptr_t ptr, ea_block_info* block, ea_segment_info* segment) {
    pthread_mutex_lock(&a->lock);
    int64_t si = 0;
    for (const ea_segment* s = a->segments; s; s = s->next_seg, si++) {
        if (ptr < s->base || ptr >= s->base + s->size) continue;
        for (const ea_block* b = s->first; b; b = b->next) {
            if (ptr >= b->ptr && ptr < b->ptr + b->size) {
                fill_block(b, si, block);
                fill_segment(s, segment);
                pthread_mutex_unlock(&a->lock);
                return EA_OK;
            }
        }
    }
    pthread_mutex_unlock(&a->lock);
    return ea_fail(EA_ERR_NOT_ALLOCATED, "address 0x%llx is not inside any segment of this allocator",
                   (unsigned long long)ptr);
}
