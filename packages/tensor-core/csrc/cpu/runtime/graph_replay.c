/* Replay of recorded kernel calls: Note [Capture and replay] (ember_core/_tensor/graph.py).
 *
 * Each recorded call keeps its function pointer, the id of the trampoline for
 * its C signature and its arguments as 64-bit words.  A trampoline (generated
 * by csrc/graph_gen.py from the prototypes of ember_core.h, one per distinct
 * signature) casts the pointer to the exact function type and unpacks the
 * words, so every call is an ordinary, well-typed C call. */
#include <stdlib.h>
#include <string.h>

#include "ember_codes.h"
#include "graph_replay.h"

static inline double word_double(uint64_t w) {
    double d;
    memcpy(&d, &w, sizeof d);
    return d;
}

#define W_I(k) ((int)(int64_t)a[k])
#define W_L(k) ((int64_t)a[k])
#define W_P(k) ((void*)(uintptr_t)a[k])
#define W_D(k) word_double(a[k])

#include "_graph_trampolines.inc" /* graph_call(), graph_patterns[] */

struct ec_graph {
    int64_t n, cap;        /* calls */
    int64_t nwords, wcap;  /* argument words of every call, one array */
    uint64_t* fns;
    int32_t* sigs;
    int64_t* first_word;
    uint64_t* words;
};

int ec_graph_signature(const char* pattern) {
    for (int i = 0; i < (int)(sizeof graph_patterns / sizeof graph_patterns[0]); i++)
        if (!strcmp(graph_patterns[i], pattern)) return i;
    return -1;
}

ec_graph* ec_graph_new(void) { return calloc(1, sizeof(ec_graph)); }

void ec_graph_free(ec_graph* g) {
    if (!g) return;
    free(g->fns);
    free(g->sigs);
    free(g->first_word);
    free(g->words);
    free(g);
}

static int grow(void** p, int64_t* cap, int64_t need, size_t item) {
    if (need <= *cap) return 1;
    int64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void* q = realloc(*p, (size_t)c * item);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

int64_t ec_graph_append(ec_graph* g, uint64_t fn, int signature, int nargs, const uint64_t* words) {
    int64_t cap = g->cap;
    if (!grow((void**)&g->fns, &cap, g->n + 1, sizeof *g->fns)) return -1;
    cap = g->cap;
    if (!grow((void**)&g->sigs, &cap, g->n + 1, sizeof *g->sigs)) return -1;
    cap = g->cap;
    if (!grow((void**)&g->first_word, &cap, g->n + 1, sizeof *g->first_word)) return -1;
    g->cap = cap;
    if (!grow((void**)&g->words, &g->wcap, g->nwords + nargs + 1, sizeof *g->words)) return -1;
    g->fns[g->n] = fn;
    g->sigs[g->n] = signature;
    g->first_word[g->n] = g->nwords;
    if (nargs) memcpy(g->words + g->nwords, words, (size_t)nargs * sizeof *words);
    g->nwords += nargs;
    return g->n++;
}

int ec_graph_set_word(ec_graph* g, int64_t call, int arg, uint64_t word) {
    if (call < 0 || call >= g->n) return EC_ERR_VALUE;
    g->words[g->first_word[call] + arg] = word;
    return EC_OK;
}

int ec_graph_run(ec_graph* g, int64_t first, int64_t last, int64_t* failed) {
    for (int64_t i = first; i < last; i++) {
        int st = graph_call(g->sigs[i], (void*)(uintptr_t)g->fns[i], g->words + g->first_word[i]);
        if (st) {
            *failed = i;
            return st;
        }
    }
    return EC_OK;
}

int64_t ec_graph_size(ec_graph* g) { return g->n; }
