/* Statistics: resetting.  Updates go through ea_stat_update (internal.h), the
 * only code that changes a counter. */
#include <string.h>

#include "internal.h"

#define EA_FOR_EACH_STAT(s, X)                                                  \
    X(s->allocation) X(s->segment) X(s->active) X(s->inactive_split)            \
    X(s->allocated_bytes) X(s->reserved_bytes) X(s->active_bytes)               \
    X(s->inactive_split_bytes) X(s->requested_bytes)

void ea_stats_reset_peak(ea_stats* s) {
#define RESET_PEAK(arr) for (int i = 0; i < 3; i++) arr[i].peak = arr[i].current;
    EA_FOR_EACH_STAT(s, RESET_PEAK)
#undef RESET_PEAK
    s->oversize_allocations.peak = s->oversize_allocations.current;
    s->oversize_segments.peak = s->oversize_segments.current;
}

void ea_stats_reset_accumulated(ea_stats* s) {
#define RESET_ACC(arr) for (int i = 0; i < 3; i++) { arr[i].allocated = 0; arr[i].freed = 0; }
    EA_FOR_EACH_STAT(s, RESET_ACC)
#undef RESET_ACC
    s->oversize_allocations.allocated = s->oversize_allocations.freed = 0;
    s->oversize_segments.allocated = s->oversize_segments.freed = 0;
    s->num_alloc_retries = 0;
    s->num_ooms = 0;
    s->num_sync_all_streams = 0;
    s->num_device_alloc = 0;
    s->num_device_free = 0;
    s->num_maps = 0;
    s->num_unmaps = 0;
    s->cache_hits = 0;
    s->cache_misses = 0;
}
