/* Replay of recorded kernel calls (Note [Capture and replay] in
 * ember_core/_tensor/graph.py): a graph is a list of (function pointer, trampoline,
 * argument words) that ec_graph_replay runs in order with no Python between
 * the calls.  Read by csrc/build.py as part of the cffi cdef. */
#ifndef EMBER_GRAPH_REPLAY_H
#define EMBER_GRAPH_REPLAY_H

#include <stdint.h>

/* cdef:begin */

typedef struct ec_graph ec_graph;

/* The trampoline id for a kernel signature written as one letter per
 * parameter (i: 32-bit int, l: 64-bit int, p: pointer, d: double), or -1 when
 * no kernel of ember_core has that signature (the caller replays that call
 * from Python). */
int ec_graph_signature(const char* pattern);

ec_graph* ec_graph_new(void);
void ec_graph_free(ec_graph* g);
/* Append a call; `words` (one uint64 per parameter; doubles as their bits) is
 * copied.  Returns the call's index, or -1 when out of memory. */
int64_t ec_graph_append(ec_graph* g, uint64_t fn, int signature, int nargs, const uint64_t* words);
/* Change one argument word of a recorded call (random-number offsets). */
int ec_graph_set_word(ec_graph* g, int64_t call, int arg, uint64_t word);
/* Run calls [first, last) in order; on a non-zero status stop and store the
 * failing call's index in *failed. */
int ec_graph_run(ec_graph* g, int64_t first, int64_t last, int64_t* failed);
int64_t ec_graph_size(ec_graph* g);

/* cdef:end */

#endif
