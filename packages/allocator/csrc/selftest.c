/* A multi-threaded stress test of the caching core, run from C threads.
 *
 * Python threads cannot exercise the allocator's mutex: the cffi wrappers keep
 * the GIL (see build.py), so calls from Python never overlap.  These threads
 * call ea_malloc/ea_free directly and truly at once.  Each thread fills every
 * byte it asked for with a word naming (thread, allocation) and checks the
 * words before freeing: two live blocks that overlapped, or a block handed out
 * twice, show up as a foreign word.  Only memory the CPU can touch is tested.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LIVE_PER_THREAD 16

typedef struct stress_thread {
    ea_allocator* a;
    int index;
    int n_streams;
    int64_t iterations;
    uint64_t max_bytes;
    uint64_t rng;
    int status;                 /* EA_OK, or the first failure */
    char message[160];
} stress_thread;

typedef struct live_block {
    uintptr_t ptr;
    uint64_t nbytes;
    uint64_t tag;
} live_block;

static uint64_t next_random(uint64_t* state) { /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Log-uniform sizes in [1, max_bytes]: mostly small, some large, as in real use. */
static uint64_t random_size(uint64_t* state, uint64_t max_bytes) {
    int bits = 0;
    while (bits < 63 && (2ULL << bits) <= max_bytes) bits++;
    uint64_t top = 1ULL << (next_random(state) % (uint64_t)(bits + 1));
    uint64_t n = top + next_random(state) % top;
    return n > max_bytes ? max_bytes : n;
}

static void fill(const live_block* b) {
    uint64_t* w = (uint64_t*)b->ptr;
    for (uint64_t i = 0; i < b->nbytes / 8; i++) w[i] = b->tag ^ i;
    unsigned char* tail = (unsigned char*)b->ptr;
    for (uint64_t i = b->nbytes / 8 * 8; i < b->nbytes; i++) tail[i] = (unsigned char)b->tag;
}

static int intact(const live_block* b) {
    const uint64_t* w = (const uint64_t*)b->ptr;
    for (uint64_t i = 0; i < b->nbytes / 8; i++)
        if (w[i] != (b->tag ^ i)) return 0;
    const unsigned char* tail = (const unsigned char*)b->ptr;
    for (uint64_t i = b->nbytes / 8 * 8; i < b->nbytes; i++)
        if (tail[i] != (unsigned char)b->tag) return 0;
    return 1;
}

static int release(stress_thread* t, live_block* b) {
    if (!intact(b)) {
        t->status = EA_ERR_INVALID;
        snprintf(t->message, sizeof t->message,
                 "thread %d: block 0x%llx of %llu bytes was overwritten while live", t->index,
                 (unsigned long long)b->ptr, (unsigned long long)b->nbytes);
        return 0;
    }
    if (ea_free(t->a, b->ptr) != EA_OK) {
        t->status = EA_ERR_INVALID;
        snprintf(t->message, sizeof t->message, "thread %d: free of 0x%llx failed", t->index,
                 (unsigned long long)b->ptr);
        return 0;
    }
    b->ptr = 0;
    return 1;
}

static void* stress_main(void* arg) {
    stress_thread* t = arg;
    live_block live[LIVE_PER_THREAD];
    memset(live, 0, sizeof live);
    for (int64_t it = 0; it < t->iterations && t->status == EA_OK; it++) {
        live_block* b = &live[next_random(&t->rng) % LIVE_PER_THREAD];
        if (b->ptr) {
            release(t, b);
            continue;
        }
        uint64_t nbytes = random_size(&t->rng, t->max_bytes);
        uint64_t stream = t->n_streams > 1 ? (uint64_t)(it % t->n_streams) : 0;
        uintptr_t ptr = ea_malloc(t->a, nbytes, stream);
        if (!ptr) {
            t->status = ea_last_status();
            snprintf(t->message, sizeof t->message, "thread %d: allocating %llu bytes failed",
                     t->index, (unsigned long long)nbytes);
            break;
        }
        b->ptr = ptr;
        b->nbytes = nbytes;
        b->tag = ((uint64_t)t->index << 48) ^ (uint64_t)it ^ 0x5A5A5A5A00000000ULL;
        fill(b);
    }
    for (int i = 0; i < LIVE_PER_THREAD; i++)
        if (live[i].ptr && !release(t, &live[i])) break;
    return NULL;
}

int ea_stress_threads(ea_allocator* a, int n_threads, int64_t iterations, uint64_t max_bytes,
                      int n_streams, uint64_t seed) {
    if (!a || n_threads < 1 || n_threads > 256 || iterations < 0 || max_bytes < 1 || n_streams < 1)
        return ea_fail(EA_ERR_INVALID,
                       "stress_threads: need 1-256 threads, iterations >= 0, max_bytes >= 1 and "
                       "n_streams >= 1");
    if (a->cfg.raw_kind == EA_RAW_CUDA)
        return ea_fail(EA_ERR_INVALID, "stress_threads: device memory cannot be checked from the CPU");
    stress_thread* threads = calloc((size_t)n_threads, sizeof *threads);
    pthread_t* ids = calloc((size_t)n_threads, sizeof *ids);
    if (!threads || !ids) {
        free(threads);
        free(ids);
        return ea_fail(EA_ERR_OOM, "stress_threads: no memory for %d threads", n_threads);
    }
    int started = 0;
    for (int i = 0; i < n_threads; i++) {
        threads[i] = (stress_thread){.a = a, .index = i, .n_streams = n_streams,
                                     .iterations = iterations, .max_bytes = max_bytes,
                                     .rng = seed * 1000003ULL + (uint64_t)i};
        if (pthread_create(&ids[i], NULL, stress_main, &threads[i]) != 0) break;
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
    int status = started == n_threads ? EA_OK : ea_fail(EA_ERR_SYSTEM, "stress_threads: "
                                                        "could only start %d threads", started);
    for (int i = 0; i < started && status == EA_OK; i++)
        if (threads[i].status != EA_OK) status = ea_fail(threads[i].status, "%s", threads[i].message);
    free(threads);
    free(ids);
    return status;
}
