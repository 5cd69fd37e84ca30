/* The caching core.
 *
 * Policy (after the CUDA caching allocator described in the PyTorch paper,
 * applied to every kind of memory):
 *  - Requests are rounded up to multiples of EA_MIN_BLOCK_SIZE (512 bytes).
 *  - Requests up to EA_SMALL_SIZE (1 MiB) are "small": they are carved from
 *    EA_SMALL_BUFFER (2 MiB) segments.  Larger ones are "large": 1-10 MiB
 *    requests get EA_LARGE_BUFFER (20 MiB) segments, bigger ones a segment of
 *    their own rounded to EA_ROUND_LARGE (2 MiB).
 *  - Every (stream, small/large) pair has its own pool.  A freed block goes back
 *    to the pool of the stream it was allocated on; if it was also used on other
 *    streams (ea_record_stream), it waits for an event on each of them before it
 *    can be handed out again.
 *  - A request takes the best fitting free block of its pool (smallest, then
 *    lowest address) and splits it when the remainder is worth keeping: any
 *    remainder in the small pool, more than 1 MiB in the large pool.  Blocks at
 *    least max_split_size large are never split, and are not handed to requests
 *    smaller than max_split_size (this bounds fragmentation).
 *  - Freed blocks merge with free neighbours and stay cached; memory goes back to
 *    the raw allocator only in ea_empty_cache and on the out-of-memory path.
 *  - Out of memory is one fallback chain: a cached block, else a new segment,
 *    else release every cached segment and try once more, else fail with a
 *    report (ea_oom_info).  memory_limit caps reserved bytes.
 *  - Expandable segments (large pools, opt-in): one segment per pool reserves a
 *    wide address range and backs pages with memory on demand.  A request that
 *    finds no cached block takes the best run of adjacent free and unmapped
 *    blocks, maps what is missing and merges it; before mapping new memory the
 *    segment unmaps the free pages it holds elsewhere, so it never reserves more
 *    than its live blocks need plus page rounding.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DEFAULT_EXPANDABLE_RESERVE (1ULL << 38) /* 256 GiB of address space */

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static size_t round_size(uint64_t nbytes) {
    if (nbytes < EA_MIN_BLOCK_SIZE) return EA_MIN_BLOCK_SIZE;
    return round_up(nbytes, EA_MIN_BLOCK_SIZE);
}

static size_t segment_size(size_t size) {
    if (size <= EA_SMALL_SIZE) return EA_SMALL_BUFFER;
    if (size < EA_MIN_LARGE_ALLOC) return EA_LARGE_BUFFER;
    return round_up(size, EA_ROUND_LARGE);
}

/* ---------------------------------------------------------------- ptr map */

static size_t hash_ptr(uintptr_t p, size_t mask) {
    uint64_t x = (uint64_t)p >> 9;  /* blocks are 512-byte aligned */
    x *= 0x9E3779B97F4A7C15ULL;
    return (size_t)(x >> 20) & mask;
}

static int ptrmap_grow(ea_ptrmap* m) {
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uintptr_t* keys = calloc(ncap, sizeof *keys);
    ea_block** values = calloc(ncap, sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return EA_ERR_OOM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = hash_ptr(m->keys[i], ncap - 1);
        while (keys[j]) j = (j + 1) & (ncap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = ncap;
    return EA_OK;
}

static int ptrmap_put(ea_ptrmap* m, uintptr_t key, ea_block* value) {
    if ((m->count + 1) * 2 > m->cap && ptrmap_grow(m) != EA_OK) return EA_ERR_OOM;
    size_t mask = m->cap - 1, i = hash_ptr(key, mask);
    while (m->keys[i]) i = (i + 1) & mask;
    m->keys[i] = key;
    m->values[i] = value;
    m->count++;
    return EA_OK;
}

static ea_block* ptrmap_get(const ea_ptrmap* m, uintptr_t key) {
    if (!m->cap || !key) return NULL;
    size_t mask = m->cap - 1, i = hash_ptr(key, mask);
    while (m->keys[i]) {
        if (m->keys[i] == key) return m->values[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

/* Removal shifts later entries of the probe run back, so no tombstones. */
static ea_block* ptrmap_remove(ea_ptrmap* m, uintptr_t key) {
    if (!m->cap || !key) return NULL;
    size_t mask = m->cap - 1, i = hash_ptr(key, mask);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & mask;
    if (!m->keys[i]) return NULL;
    ea_block* found = m->values[i];
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->keys[j]) break;
        size_t home = hash_ptr(m->keys[j], mask);
        /* move j back to i unless its home lies cyclically in (i, j] */
        int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        m->keys[i] = m->keys[j];
        m->values[i] = m->values[j];
        i = j;
    }
    m->keys[i] = 0;
    m->values[i] = NULL;
    m->count--;
    return found;
}

/* ---------------------------------------------------------------- blocks */

/* Block structs are recycled through a free list: allocation is the hot path
 * and a split or merge per call would otherwise cost a calloc/free pair. */
static ea_block* block_new(ea_allocator* a, ea_segment* seg, uintptr_t ptr, size_t size, int state) {
    ea_block* b = a->spare_blocks;
    if (b) {
        a->spare_blocks = b->next;
        uint64_t* uses = b->uses;
        int cap = b->cap_uses;
        memset(b, 0, sizeof *b);
        b->uses = uses;
        b->cap_uses = cap;
    } else {
        b = calloc(1, sizeof *b);
        if (!b) return NULL;
    }
    b->ptr = ptr;
    b->size = size;
    b->seg = seg;
    b->stream = seg->stream;
    b->state = state;
    return b;
}

static void block_delete(ea_allocator* a, ea_block* b) {
    b->next = a->spare_blocks;
    a->spare_blocks = b;
}

static void block_destroy(ea_block* b) {
    free(b->uses);
    free(b);
}

static int is_split(const ea_block* b) { return b->prev != NULL || b->next != NULL; }

/* (size, address) order of the free lists */
static int block_less(const ea_block* x, size_t size, uintptr_t ptr) {
    return x->size < size || (x->size == size && x->ptr < ptr);
}

static size_t pool_lower_bound(const ea_pool* p, size_t size, uintptr_t ptr) {
    size_t lo = 0, hi = p->n_free;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (block_less(p->free[mid], size, ptr)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int pool_insert(ea_allocator* a, ea_block* b) {
    ea_pool* p = b->seg->pool;
    if (p->n_free == p->cap_free) {
        size_t ncap = p->cap_free ? p->cap_free * 2 : 64;
        ea_block** nf = realloc(p->free, ncap * sizeof *nf);
        if (!nf) return EA_ERR_OOM;
        p->free = nf;
        p->cap_free = ncap;
    }
    size_t i = pool_lower_bound(p, b->size, b->ptr);
    memmove(&p->free[i + 1], &p->free[i], (p->n_free - i) * sizeof *p->free);
    p->free[i] = b;
    p->n_free++;
    b->in_pool = 1;
    b->counted_split = is_split(b);
    if (b->counted_split) {
        ea_stat_update(a->stats.inactive_split, p->is_small, 1);
        ea_stat_update(a->stats.inactive_split_bytes, p->is_small, (int64_t)b->size);
    }
    return EA_OK;
}

static void pool_remove(ea_allocator* a, ea_block* b) {
    ea_pool* p = b->seg->pool;
    size_t i = pool_lower_bound(p, b->size, b->ptr);
    /* the block must be there: the free list is exact */
    memmove(&p->free[i], &p->free[i + 1], (p->n_free - i - 1) * sizeof *p->free);
    p->n_free--;
    b->in_pool = 0;
    if (b->counted_split) {
        ea_stat_update(a->stats.inactive_split, p->is_small, -1);
        ea_stat_update(a->stats.inactive_split_bytes, p->is_small, -(int64_t)b->size);
        b->counted_split = 0;
    }
}

/* Unlink `next` from its segment after its bytes were given to its neighbour. */
static void block_absorb_next(ea_allocator* a, ea_block* b) {
    ea_block* n = b->next;
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    block_delete(a, n);
}

/* A block becomes free: merge with free neighbours, return it to its pool. */
static void free_block(ea_allocator* a, ea_block* b) {
    int is_small = b->seg->is_small;
    ea_stat_update(a->stats.active, is_small, -1);
    ea_stat_update(a->stats.active_bytes, is_small, -(int64_t)b->size);
    ea_history_add(a, EA_EV_FREE_COMPLETED, b->ptr, b->size, b->stream);
    b->state = EA_BLOCK_FREE;
    b->n_uses = 0;
    b->requested = 0;
    if (b->prev && b->prev->state == EA_BLOCK_FREE) {
        ea_block* p = b->prev;
        pool_remove(a, p);
        block_absorb_next(a, p);
        b = p;
    }
    if (b->next && b->next->state == EA_BLOCK_FREE) {
        pool_remove(a, b->next);
        block_absorb_next(a, b);
    }
    pool_insert(a, b);
}

/* --------------------------------------------------------------- segments */

static ea_pool* get_pool(ea_allocator* a, uint64_t stream, int is_small) {
    for (size_t i = 0; i < a->n_pools; i++)
        if (a->pools[i]->stream == stream && a->pools[i]->is_small == is_small) return a->pools[i];
    if (a->n_pools == a->cap_pools) {
        size_t ncap = a->cap_pools ? a->cap_pools * 2 : 8;
        ea_pool** np = realloc(a->pools, ncap * sizeof *np);
        if (!np) return NULL;
        a->pools = np;
        a->cap_pools = ncap;
    }
    ea_pool* p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->stream = stream;
    p->is_small = is_small;
    a->pools[a->n_pools++] = p;
    return p;
}

static void segment_link(ea_allocator* a, ea_segment* s) {
    s->prev_seg = NULL;
    s->next_seg = a->segments;
    if (a->segments) a->segments->prev_seg = s;
    a->segments = s;
}

static void segment_unlink(ea_allocator* a, ea_segment* s) {
    if (s->prev_seg) s->prev_seg->next_seg = s->next_seg;
    else a->segments = s->next_seg;
    if (s->next_seg) s->next_seg->prev_seg = s->prev_seg;
}

static int over_limit(const ea_allocator* a, size_t more) {
    uint64_t limit = a->cfg.memory_limit;
    return limit && (uint64_t)a->stats.reserved_bytes[EA_STAT_ALL].current + more > limit;
}

/* A fresh segment for `size` bytes; returns its single free block (not pooled). */
static int new_segment(ea_allocator* a, ea_pool* pool, size_t size, ea_block** out) {
    size_t seg_size = segment_size(size);
    if (over_limit(a, seg_size)) return EA_ERR_OOM;
    void* ptr = NULL;
    int64_t handle = -1;
    int st = a->raw.alloc(a->raw.ctx, seg_size, &ptr, &handle);
    if (st != EA_OK) return st;
    ea_segment* s = calloc(1, sizeof *s);
    ea_block* b = s ? NULL : NULL;
    if (s) {
        s->base = (uintptr_t)ptr;
        s->size = s->mapped = seg_size;
        s->stream = pool->stream;
        s->handle = handle;
        s->is_small = pool->is_small;
        s->pool = pool;
        b = block_new(a, s, s->base, seg_size, EA_BLOCK_FREE);
    }
    if (!s || !b) {
        a->raw.free(a->raw.ctx, ptr, seg_size, handle);
        free(s);
        return ea_fail(EA_ERR_OOM, "no host memory for allocator bookkeeping");
    }
    s->first = b;
    segment_link(a, s);
    a->stats.num_device_alloc++;
    if (a->cfg.max_split_size && seg_size >= a->cfg.max_split_size) {
        s->counted_oversize = 1;
        ea_stat_apply(&a->stats.oversize_segments, 1);
    }
    ea_stat_update(a->stats.segment, s->is_small, 1);
    ea_stat_update(a->stats.reserved_bytes, s->is_small, (int64_t)seg_size);
    ea_history_add(a, EA_EV_SEGMENT_ALLOC, s->base, seg_size, s->stream);
    *out = b;
    return EA_OK;
}

static void release_segment(ea_allocator* a, ea_segment* s) {
    ea_block* b = s->first;
    if (b->in_pool) pool_remove(a, b);
    block_delete(a, b);
    a->raw.free(a->raw.ctx, (void*)s->base, s->size, s->handle);
    a->stats.num_device_free++;
    if (s->counted_oversize) ea_stat_apply(&a->stats.oversize_segments, -1);
    ea_stat_update(a->stats.segment, s->is_small, -1);
    ea_stat_update(a->stats.reserved_bytes, s->is_small, -(int64_t)s->size);
    ea_history_add(a, EA_EV_SEGMENT_FREE, s->base, s->size, s->stream);
    segment_unlink(a, s);
    free(s);
}

/* ---------------------------------------------------- expandable segments */

static int expandable_create(ea_allocator* a, ea_pool* pool, ea_segment** out) {
    size_t gran = a->raw.granularity;
    size_t size = a->cfg.expandable_reserve ? a->cfg.expandable_reserve
                                            : DEFAULT_EXPANDABLE_RESERVE;
    size = round_up(size, gran);
    void* base = NULL;
    int st = a->raw.reserve(a->raw.ctx, size, &base);
    if (st != EA_OK) return st;
    ea_segment* s = calloc(1, sizeof *s);
    ea_block* b = s ? NULL : NULL;
    if (s) {
        s->base = (uintptr_t)base;
        s->size = size;
        s->mapped = 0;
        s->stream = pool->stream;
        s->handle = -1;
        s->is_small = 0;
        s->expandable = 1;
        s->pool = pool;
        b = block_new(a, s, s->base, size, EA_BLOCK_UNMAPPED);
    }
    if (!s || !b) {
        a->raw.release(a->raw.ctx, base, size);
        free(s);
        return ea_fail(EA_ERR_OOM, "no host memory for allocator bookkeeping");
    }
    s->first = b;
    segment_link(a, s);
    ea_stat_update(a->stats.segment, 0, 1);
    pool->expandable = s;
    *out = s;
    return EA_OK;
}

/* Split b at `offset` bytes from its start; the tail keeps b's state. */
static ea_block* block_split_at(ea_allocator* a, ea_block* b, size_t offset) {
    ea_block* t = block_new(a, b->seg, b->ptr + offset, b->size - offset, b->state);
    if (!t) return NULL;
    b->size = offset;
    t->prev = b;
    t->next = b->next;
    if (b->next) b->next->prev = t;
    b->next = t;
    return t;
}

static void account_map(ea_allocator* a, ea_segment* s, int64_t delta) {
    s->mapped = (size_t)((int64_t)s->mapped + delta);
    ea_stat_update(a->stats.reserved_bytes, 0, delta);
    if (delta > 0) a->stats.num_maps++;
    else a->stats.num_unmaps++;
    ea_history_add(a, delta > 0 ? EA_EV_MAP : EA_EV_UNMAP, s->base, (uint64_t)(delta > 0 ? delta : -delta),
                   s->stream);
}

/* Merge an UNMAPPED block with UNMAPPED neighbours. */
static void merge_unmapped(ea_allocator* a, ea_block* b) {
    if (b->next && b->next->state == EA_BLOCK_UNMAPPED) block_absorb_next(a, b);
    if (b->prev && b->prev->state == EA_BLOCK_UNMAPPED) block_absorb_next(a, b->prev);
}

/* Give back the whole pages inside free block b (which must be pooled). */
static int unmap_free_block(ea_allocator* a, ea_block* b) {
    size_t gran = a->raw.granularity;
    uintptr_t lo = (uintptr_t)round_up(b->ptr - b->seg->base, gran) + b->seg->base;
    uintptr_t hi = (b->ptr + b->size - b->seg->base) / gran * gran + b->seg->base;
    if (hi <= lo) return EA_OK;
    pool_remove(a, b);
    int st = a->raw.unmap(a->raw.ctx, (void*)lo, hi - lo);
    if (st != EA_OK) {
        pool_insert(a, b);
        return st;
    }
    ea_block* mid = b;
    if (lo > b->ptr) mid = block_split_at(a, b, lo - b->ptr);
    ea_block* tail = NULL;
    if (mid && hi < mid->ptr + mid->size) tail = block_split_at(a, mid, hi - mid->ptr);
    if (!mid) return EA_ERR_OOM;  /* bookkeeping failure; memory already unmapped */
    account_map(a, b->seg, -(int64_t)(hi - lo));
    if (mid != b) pool_insert(a, b);
    if (tail) pool_insert(a, tail);
    mid->state = EA_BLOCK_UNMAPPED;
    merge_unmapped(a, mid);
    return EA_OK;
}

/* Unmap the free pages of segment s, except in blocks overlapping [keep_lo, keep_hi).
 * Unmapping one free block only splits it and merges unmapped neighbours, so the
 * other free blocks collected first stay valid. */
static void unmap_free_pages(ea_allocator* a, ea_segment* s, uintptr_t keep_lo, uintptr_t keep_hi) {
    size_t n = 0;
    for (ea_block* b = s->first; b; b = b->next) n += b->state == EA_BLOCK_FREE;
    if (!n) return;
    ea_block** todo = malloc(n * sizeof *todo);
    if (!todo) return;
    n = 0;
    for (ea_block* b = s->first; b; b = b->next) {
        int overlaps = b->ptr < keep_hi && b->ptr + b->size > keep_lo;
        if (b->state == EA_BLOCK_FREE && !overlaps) todo[n++] = b;
    }
    for (size_t i = 0; i < n; i++) unmap_free_block(a, todo[i]);
    free(todo);
}

/* Find the best run of adjacent free/unmapped blocks that can hold `size`,
 * map what it lacks, and merge it into one free block. */
static int expandable_grow(ea_allocator* a, ea_pool* pool, size_t size, ea_block** out) {
    ea_segment* s = pool->expandable;
    if (!s) {
        int st = expandable_create(a, pool, &s);
        if (st != EA_OK) return st;
    }
    size_t gran = a->raw.granularity;
    ea_block *best = NULL;
    size_t best_total = 0;
    for (ea_block* b = s->first; b; b = b->next) {
        if (b->state != EA_BLOCK_FREE && b->state != EA_BLOCK_UNMAPPED) continue;
        if (b->prev && (b->prev->state == EA_BLOCK_FREE || b->prev->state == EA_BLOCK_UNMAPPED))
            continue; /* not the start of a run */
        size_t total = 0;
        for (ea_block* r = b; r && (r->state == EA_BLOCK_FREE || r->state == EA_BLOCK_UNMAPPED);
             r = r->next)
            total += r->size;
        if (total >= size && (!best || total < best_total)) {
            best = b;
            best_total = total;
        }
    }
    if (!best) return ea_fail(EA_ERR_OOM, "expandable segment address space exhausted");

    /* The window [start, end) is what the request will use; map its holes. */
    uintptr_t start = best->ptr;
    uintptr_t end = start + size;
    size_t to_map = 0;
    for (ea_block* r = best; r && r->ptr < end; r = r->next) {
        if (r->state != EA_BLOCK_UNMAPPED) continue;
        uintptr_t hi = r->ptr + r->size;
        uintptr_t want = s->base + round_up(end - s->base, gran);
        to_map += (want < hi ? want : hi) - r->ptr;
    }
    if (to_map) {
        /* Growing: first give back free pages held elsewhere in this segment. */
        unmap_free_pages(a, s, start, end);
        if (over_limit(a, to_map)) return EA_ERR_OOM;
    }
    for (ea_block* r = best; r && r->ptr < end; r = r->next) {
        if (r->state != EA_BLOCK_UNMAPPED) continue;
        uintptr_t want = s->base + round_up(end - s->base, gran);
        if (r->ptr + r->size > want) {
            if (!block_split_at(a, r, want - r->ptr)) return EA_ERR_OOM;
        }
        int st = a->raw.map(a->raw.ctx, (void*)r->ptr, r->size);
        if (st != EA_OK) return st;
        account_map(a, s, (int64_t)r->size);
        r->state = EA_BLOCK_FREE;
        r->in_pool = 0;
    }
    /* Merge the window's blocks into `best`. */
    if (best->in_pool) pool_remove(a, best);
    while (best->next && best->ptr + best->size < end) {
        ea_block* n = best->next;
        if (n->in_pool) pool_remove(a, n);
        block_absorb_next(a, best);
    }
    /* A free neighbour after the window merges too, so nothing free is stranded. */
    if (best->next && best->next->state == EA_BLOCK_FREE) {
        pool_remove(a, best->next);
        block_absorb_next(a, best);
    }
    best->state = EA_BLOCK_FREE;
    *out = best;
    return EA_OK;
}

/* ------------------------------------------------------------ main paths */

static ea_block* find_free(ea_allocator* a, ea_pool* pool, size_t size) {
    size_t i = pool_lower_bound(pool, size, 0);
    if (i == pool->n_free) return NULL;
    ea_block* b = pool->free[i];
    uint64_t max_split = a->cfg.max_split_size;
    if (max_split && !b->seg->expandable) {
        if (size < max_split && b->size >= max_split) return NULL;
        if (size >= max_split && b->size >= size + EA_LARGE_BUFFER) return NULL;
    }
    pool_remove(a, b);
    return b;
}

/* Small and expandable blocks split whenever the rest can hold a block: the
 * small pool serves nothing bigger, and the free pages of an expandable segment
 * are unmapped anyway.  A large block splits only for requests below
 * max_split_size, and only when the rest is itself large: a request of
 * max_split_size or more takes a whole block (find_free bounds the waste). */
static int should_split(const ea_allocator* a, const ea_block* b, size_t size) {
    size_t remaining = b->size - size;
    if (b->seg->is_small || b->seg->expandable) return remaining >= EA_MIN_BLOCK_SIZE;
    if (a->cfg.max_split_size && size >= a->cfg.max_split_size) return 0;
    return remaining > EA_SMALL_SIZE;
}

static void process_events(ea_allocator* a) {
    size_t kept = 0;
    for (size_t i = 0; i < a->n_pending; i++) {
        ea_pending p = a->pending[i];
        int q = a->raw.query_event(a->raw.ctx, p.event);
        if (q == 0) {
            a->pending[kept++] = p;
            continue;
        }
        /* done (or errored: the stream is unusable anyway; do not leak the block) */
        a->raw.destroy_event(a->raw.ctx, p.event);
        if (--p.block->pending_events == 0) free_block(a, p.block);
    }
    a->n_pending = kept;
}

static void synchronize_and_free_events(ea_allocator* a) {
    if (!a->raw.has_streams) return;
    a->raw.synchronize(a->raw.ctx);
    a->stats.num_sync_all_streams++;
    process_events(a);
}

/* Return every fully free segment (and every free page of expandable ones). */
static void release_cached(ea_allocator* a) {
    synchronize_and_free_events(a);
    ea_segment* s = a->segments;
    while (s) {
        ea_segment* next = s->next_seg;
        if (s->expandable) {
            unmap_free_pages(a, s, 0, 0);
        } else if (s->first->state == EA_BLOCK_FREE && !s->first->next) {
            release_segment(a, s);
        }
        s = next;
    }
}

static int grow(ea_allocator* a, ea_pool* pool, size_t size, ea_block** out) {
    if (!pool->is_small && a->cfg.expandable_segments) return expandable_grow(a, pool, size, out);
    return new_segment(a, pool, size, out);
}

static uint64_t largest_free(const ea_allocator* a) {
    uint64_t best = 0;
    for (size_t i = 0; i < a->n_pools; i++) {
        const ea_pool* p = a->pools[i];
        if (p->n_free && p->free[p->n_free - 1]->size > best) best = p->free[p->n_free - 1]->size;
    }
    return best;
}

static void report_oom(ea_allocator* a, uint64_t nbytes, size_t size, uint64_t stream) {
    ea_oom_info info;
    memset(&info, 0, sizeof info);
    info.requested = nbytes;
    info.rounded = size;
    info.allocated = (uint64_t)a->stats.allocated_bytes[EA_STAT_ALL].current;
    info.reserved = (uint64_t)a->stats.reserved_bytes[EA_STAT_ALL].current;
    info.reserved_free = info.reserved - (uint64_t)a->stats.active_bytes[EA_STAT_ALL].current;
    info.largest_free = largest_free(a);
    info.limit = a->cfg.memory_limit;
    info.stream = stream;
    if (a->raw.memory_info) a->raw.memory_info(a->raw.ctx, &info.device_free, &info.device_total);
    a->stats.num_ooms++;
    ea_history_add(a, EA_EV_OOM, 0, nbytes, stream);
    ea_set_oom(&info);
}

uintptr_t ea_malloc(ea_allocator* a, uint64_t nbytes, uint64_t stream) {
    if (!a) {
        ea_fail(EA_ERR_INVALID, "allocator was destroyed");
        return 0;
    }
    if (nbytes > ((uint64_t)1 << 62)) {
        pthread_mutex_lock(&a->lock);
        report_oom(a, nbytes, (size_t)nbytes, stream);
        pthread_mutex_unlock(&a->lock);
        return 0;
    }
    pthread_mutex_lock(&a->lock);
    if (a->n_pending) process_events(a);
    size_t size = round_size(nbytes);
    int is_small = size <= EA_SMALL_SIZE;
    ea_pool* pool = get_pool(a, stream, is_small);
    if (!pool) {
        pthread_mutex_unlock(&a->lock);
        ea_fail(EA_ERR_OOM, "no host memory for allocator bookkeeping");
        return 0;
    }
    ea_block* b = find_free(a, pool, size);
    if (b) {
        a->stats.cache_hits++;
    } else {
        a->stats.cache_misses++;
        int st = grow(a, pool, size, &b);
        if (st == EA_ERR_OOM) {
            release_cached(a);
            a->stats.num_alloc_retries++;
            st = grow(a, pool, size, &b);
        }
        if (st != EA_OK) {
            if (st == EA_ERR_OOM) report_oom(a, nbytes, size, stream);
            pthread_mutex_unlock(&a->lock);
            return 0;
        }
    }
    if (should_split(a, b, size)) {
        ea_block* rest = block_split_at(a, b, size);
        if (rest) pool_insert(a, rest);
    }
    if (ptrmap_put(&a->live, b->ptr, b) != EA_OK) {
        pool_insert(a, b);
        pthread_mutex_unlock(&a->lock);
        ea_fail(EA_ERR_OOM, "no host memory for allocator bookkeeping");
        return 0;
    }
    b->state = EA_BLOCK_ALLOCATED;
    b->requested = nbytes;
    b->stream = stream;
    if (a->cfg.max_split_size && b->size >= a->cfg.max_split_size) {
        b->counted_oversize = 1;
        ea_stat_apply(&a->stats.oversize_allocations, 1);
    }
    ea_stat_update(a->stats.allocation, is_small, 1);
    ea_stat_update(a->stats.allocated_bytes, is_small, (int64_t)b->size);
    ea_stat_update(a->stats.requested_bytes, is_small, (int64_t)nbytes);
    ea_stat_update(a->stats.active, is_small, 1);
    ea_stat_update(a->stats.active_bytes, is_small, (int64_t)b->size);
    ea_history_add(a, EA_EV_ALLOC, b->ptr, b->size, stream);
    uintptr_t ptr = b->ptr;
    pthread_mutex_unlock(&a->lock);
    return ptr;
}

int ea_free(ea_allocator* a, uintptr_t ptr) {
    if (!a) return ea_fail(EA_ERR_INVALID, "allocator was destroyed");
    pthread_mutex_lock(&a->lock);
    ea_block* b = ptrmap_remove(&a->live, ptr);
    if (!b) {
        pthread_mutex_unlock(&a->lock);
        return ea_fail(EA_ERR_NOT_ALLOCATED,
                       "free: 0x%llx was not allocated by this allocator or was already freed",
                       (unsigned long long)ptr);
    }
    int is_small = b->seg->is_small;
    ea_stat_update(a->stats.allocation, is_small, -1);
    ea_stat_update(a->stats.allocated_bytes, is_small, -(int64_t)b->size);
    ea_stat_update(a->stats.requested_bytes, is_small, -(int64_t)b->requested);
    if (b->counted_oversize) {
        b->counted_oversize = 0;
        ea_stat_apply(&a->stats.oversize_allocations, -1);
    }
    ea_history_add(a, EA_EV_FREE, b->ptr, b->size, b->stream);
    int waiting = 0;
    if (a->raw.has_streams && b->n_uses) {
        for (int i = 0; i < b->n_uses; i++) {
            if (a->n_pending == a->cap_pending) {
                size_t ncap = a->cap_pending ? a->cap_pending * 2 : 64;
                ea_pending* np = realloc(a->pending, ncap * sizeof *np);
                if (!np) break;
                a->pending = np;
                a->cap_pending = ncap;
            }
            void* ev = NULL;
            if (a->raw.record_event(a->raw.ctx, b->uses[i], &ev) != EA_OK) continue;
            a->pending[a->n_pending++] = (ea_pending){ev, b};
            waiting++;
        }
    }
    if (waiting) {
        b->state = EA_BLOCK_PENDING;
        b->pending_events = waiting;
    } else {
        free_block(a, b);
    }
    pthread_mutex_unlock(&a->lock);
    return EA_OK;
}

static ea_allocator* default_allocator;

int ea_set_default(ea_allocator* a) {
    default_allocator = a;
    return EA_OK;
}

uintptr_t ea_default_malloc(uint64_t nbytes) { return ea_malloc(default_allocator, nbytes, 0); }

int ea_default_free(uintptr_t ptr) { return ea_free(default_allocator, ptr); }

int ea_record_stream(ea_allocator* a, uintptr_t ptr, uint64_t stream) {
    pthread_mutex_lock(&a->lock);
    ea_block* b = ptrmap_get(&a->live, ptr);
    int st = EA_OK;
    if (!b) {
        st = ea_fail(EA_ERR_NOT_ALLOCATED,
                     "record_stream: 0x%llx is not a live allocation of this allocator",
                     (unsigned long long)ptr);
    } else if (stream != b->stream) {
        int seen = 0;
        for (int i = 0; i < b->n_uses; i++) seen |= b->uses[i] == stream;
        if (!seen) {
            if (b->n_uses == b->cap_uses) {
                int ncap = b->cap_uses ? b->cap_uses * 2 : 4;
                uint64_t* nu = realloc(b->uses, (size_t)ncap * sizeof *nu);
                if (!nu) st = ea_fail(EA_ERR_OOM, "no host memory for allocator bookkeeping");
                else {
                    b->uses = nu;
                    b->cap_uses = ncap;
                }
            }
            if (st == EA_OK) b->uses[b->n_uses++] = stream;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

int ea_empty_cache(ea_allocator* a) {
    pthread_mutex_lock(&a->lock);
    release_cached(a);
    ea_history_add(a, EA_EV_EMPTY_CACHE, 0, 0, 0);
    pthread_mutex_unlock(&a->lock);
    return EA_OK;
}

int ea_synchronize(ea_allocator* a) {
    pthread_mutex_lock(&a->lock);
    synchronize_and_free_events(a);
    pthread_mutex_unlock(&a->lock);
    return EA_OK;
}

int ea_set_memory_limit(ea_allocator* a, uint64_t bytes) {
    pthread_mutex_lock(&a->lock);
    a->cfg.memory_limit = bytes;
    a->stats.memory_limit = bytes;
    pthread_mutex_unlock(&a->lock);
    return EA_OK;
}

int ea_set_max_split_size(ea_allocator* a, uint64_t bytes) {
    if (bytes && bytes <= EA_SMALL_SIZE)
        return ea_fail(EA_ERR_INVALID, "max_split_size must exceed %d bytes (the small-block limit), got %llu",
                       EA_SMALL_SIZE, (unsigned long long)bytes);
    pthread_mutex_lock(&a->lock);
    a->cfg.max_split_size = bytes;
    a->stats.max_split_size = bytes;
    pthread_mutex_unlock(&a->lock);
    return EA_OK;
}

int ea_device_memory(ea_allocator* a, uint64_t* free_bytes, uint64_t* total_bytes) {
    *free_bytes = *total_bytes = 0;
    if (!a->raw.memory_info) return EA_OK;
    return a->raw.memory_info(a->raw.ctx, free_bytes, total_bytes);
}

void ea_get_stats(ea_allocator* a, ea_stats* out) {
    pthread_mutex_lock(&a->lock);
    *out = a->stats;
    pthread_mutex_unlock(&a->lock);
}

void ea_reset_peak_stats(ea_allocator* a) {
    pthread_mutex_lock(&a->lock);
    ea_stats_reset_peak(&a->stats);
    pthread_mutex_unlock(&a->lock);
}

void ea_reset_accumulated_stats(ea_allocator* a) {
    pthread_mutex_lock(&a->lock);
    ea_stats_reset_accumulated(&a->stats);
    pthread_mutex_unlock(&a->lock);
}

int ea_sim_complete(ea_allocator* a, uint64_t stream) {
    pthread_mutex_lock(&a->lock);
    int st = ea_raw_sim_complete(&a->raw, stream);
    pthread_mutex_unlock(&a->lock);
    return st;
}

/* -------------------------------------------------------------- lifetime */

/* Note [Fork safety]: a thread may hold an allocator's lock (a C thread, such as
 * selftest.c's, or any caller not holding the GIL) when another thread forks.  Every allocator is registered
 * here; fork takes all their locks first and releases them on both sides, so the
 * child inherits consistent pools and unlocked mutexes. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ea_allocator* registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) {
    pthread_mutex_lock(&registry_lock);
    for (ea_allocator* a = registry; a; a = a->next_registered) pthread_mutex_lock(&a->lock);
}

static void fork_release(void) {
    for (ea_allocator* a = registry; a; a = a->next_registered) pthread_mutex_unlock(&a->lock);
    pthread_mutex_unlock(&registry_lock);
}

static void install_atfork(void) { pthread_atfork(fork_prepare, fork_release, fork_release); }

static void registry_add(ea_allocator* a) {
    pthread_once(&atfork_once, install_atfork);
    pthread_mutex_lock(&registry_lock);
    a->next_registered = registry;
    registry = a;
    pthread_mutex_unlock(&registry_lock);
}

static void registry_remove(ea_allocator* a) {
    pthread_mutex_lock(&registry_lock);
    ea_allocator** p = &registry;
    while (*p && *p != a) p = &(*p)->next_registered;
    if (*p) *p = a->next_registered;
    pthread_mutex_unlock(&registry_lock);
}

ea_allocator* ea_create(const ea_config* config, int* status) {
    ea_clear_error();
    ea_allocator* a = calloc(1, sizeof *a);
    if (!a) {
        *status = ea_fail(EA_ERR_OOM, "cannot allocate an allocator");
        return NULL;
    }
    a->cfg = *config;
    int st;
    switch (config->raw_kind) {
        case EA_RAW_HOST: st = ea_raw_host_init(&a->raw); break;
        case EA_RAW_SHM: st = ea_raw_shm_init(&a->raw); break;
        case EA_RAW_SIM: st = ea_raw_sim_init(&a->raw); break;
        case EA_RAW_PINNED: st = ea_raw_pinned_init(&a->raw, config->device_index); break;
        case EA_RAW_CUDA: st = ea_raw_cuda_init(&a->raw, config->device_index); break;
        default: st = ea_fail(EA_ERR_INVALID, "unknown raw allocator kind %d", config->raw_kind);
    }
    if (st == EA_OK && config->expandable_segments && !a->raw.reserve)
        st = ea_fail(EA_ERR_INVALID, "the %s raw allocator does not support expandable segments",
                     a->raw.name);
    if (st == EA_OK && config->max_split_size && config->max_split_size <= EA_SMALL_SIZE)
        st = ea_fail(EA_ERR_INVALID, "max_split_size must exceed %d bytes, got %llu", EA_SMALL_SIZE,
                     (unsigned long long)config->max_split_size);
    if (st != EA_OK) {
        if (a->raw.destroy) a->raw.destroy(a->raw.ctx);
        free(a);
        *status = st;
        return NULL;
    }
    pthread_mutex_init(&a->lock, NULL);
    registry_add(a);
    a->stats.max_split_size = config->max_split_size;
    a->stats.memory_limit = config->memory_limit;
    *status = EA_OK;
    return a;
}

void ea_destroy(ea_allocator* a) {
    if (!a) return;
    if (default_allocator == a) default_allocator = NULL;
    registry_remove(a);
    pthread_mutex_lock(&a->lock);
    if (a->raw.has_streams) a->raw.synchronize(a->raw.ctx);
    for (size_t i = 0; i < a->n_pending; i++) a->raw.destroy_event(a->raw.ctx, a->pending[i].event);
    ea_segment* s = a->segments;
    while (s) {
        ea_segment* next = s->next_seg;
        ea_block* b = s->first;
        while (b) {
            ea_block* nb = b->next;
            block_destroy(b);
            b = nb;
        }
        if (s->expandable) a->raw.release(a->raw.ctx, (void*)s->base, s->size);
        else a->raw.free(a->raw.ctx, (void*)s->base, s->size, s->handle);
        free(s);
        s = next;
    }
    for (size_t i = 0; i < a->n_pools; i++) {
        free(a->pools[i]->free);
        free(a->pools[i]);
    }
    free(a->pools);
    while (a->spare_blocks) {
        ea_block* b = a->spare_blocks;
        a->spare_blocks = b->next;
        block_destroy(b);
    }
    free(a->pending);
    free(a->live.keys);
    free(a->live.values);
    free(a->history);
    if (a->raw.destroy) a->raw.destroy(a->raw.ctx);
    pthread_mutex_unlock(&a->lock);
    pthread_mutex_destroy(&a->lock);
    free(a);
}
