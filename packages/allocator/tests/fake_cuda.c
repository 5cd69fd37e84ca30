/* A stand-in for the CUDA runtime and driver, built by test_cuda_fake.py as
 * libcudart.so and libcuda.so.1 and found first through LD_LIBRARY_PATH, so
 * raw_cuda.c's code (dlopen, device switching, events, pinned memory, the
 * virtual memory calls of expandable segments) runs on a machine without a GPU.
 *
 * "Device memory" is host memory; a device has FAKE_TOTAL bytes.  Events
 * complete only on cudaDeviceSynchronize or fake_complete(stream), like work
 * still queued on a stream.  Physical allocations (cuMemCreate) are counted so
 * the test can check that every one is released.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FAKE_TOTAL (256ull << 20)
#define MAX_STREAMS 64

static int current_device, device_count = 2, last_error;
static size_t used;
static int64_t live_handles, maps, unmaps, syncs, set_device_calls;

/* ------------------------------------------------------------- runtime */

#ifdef FAKE_CUDA_EMULATOR
int ember_emu_rt_get_device(void);
int ember_emu_rt_set_device(int);
int ember_emu_rt_device_count(void);
int ember_emu_rt_malloc(void**, size_t);
int ember_emu_rt_free(void*);
int ember_emu_rt_host_alloc(void**, size_t);
int ember_emu_rt_free_host(void*);
int ember_emu_rt_mem_info(size_t*, size_t*);
int ember_emu_rt_synchronize(void);
int ember_emu_rt_event_create(void**);
int ember_emu_rt_event_record(void*, void*);
int ember_emu_rt_event_query(void*);
int ember_emu_rt_event_destroy(void*);
int ember_emu_rt_reserve(unsigned long long*, size_t, size_t);
int ember_emu_rt_address_free(unsigned long long, size_t);
int ember_emu_rt_map(unsigned long long, size_t);
int ember_emu_rt_unmap(unsigned long long, size_t);
#endif

int cudaGetDeviceCount(int* n) {
#ifdef FAKE_CUDA_EMULATOR
    device_count = ember_emu_rt_device_count();
#endif
    *n = device_count;
    return 0;
}
int cudaGetDevice(int* d) {
#ifdef FAKE_CUDA_EMULATOR
    current_device = ember_emu_rt_get_device();
#endif
    *d = current_device;
    return 0;
}
int cudaSetDevice(int d) {
#ifdef FAKE_CUDA_EMULATOR
    device_count = ember_emu_rt_device_count();
#endif
    if (d < 0 || d >= device_count) return last_error = 101; /* invalid device */
    set_device_calls++;
    current_device = d;
#ifdef FAKE_CUDA_EMULATOR
    ember_emu_rt_set_device(d); /* the device's primary context becomes current */
#endif
    return 0;
}
int cudaGetLastError(void) { int e = last_error; last_error = 0; return e; }
const char* cudaGetErrorString(int e) {
    return e == 2 ? "out of memory" : e == 600 ? "device not ready" : "fake error";
}

typedef struct { size_t size; } header;

int cudaMalloc(void** p, size_t size) {
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_malloc(p, size) ? (last_error = 2) : 0;
#endif
    if (used + size > FAKE_TOTAL) return last_error = 2;
    header* h = malloc(sizeof(header) + size + 512);
    if (!h) return last_error = 2;
    h->size = size;
    used += size;
    /* keep a pointer to the header just before a 512-aligned address */
    uintptr_t a = ((uintptr_t)(h + 1) + sizeof(void*) + 511) & ~(uintptr_t)511;
    ((void**)a)[-1] = h;
    *p = (void*)a;
    return 0;
}

int cudaFree(void* p) {
#ifdef FAKE_CUDA_EMULATOR
    if (!p) return ember_emu_rt_set_device(ember_emu_rt_get_device()); /* initialise */
    return ember_emu_rt_free(p) ? (last_error = 1) : 0;
#endif
    if (!p) return 0; /* cudaFree(NULL) initialises the context */
    header* h = ((void**)p)[-1];
    used -= h->size;
    free(h);
    return 0;
}

int cudaHostAlloc(void** p, size_t size, unsigned flags) {
    (void)flags;
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_host_alloc(p, size) ? (last_error = 2) : 0;
#endif
    return cudaMalloc(p, size);
}
int cudaFreeHost(void* p) {
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_free_host(p) ? (last_error = 1) : 0;
#endif
    return cudaFree(p);
}

int cudaMemGetInfo(size_t* free_bytes, size_t* total) {
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_mem_info(free_bytes, total);
#endif
    *free_bytes = FAKE_TOTAL - used;
    *total = FAKE_TOTAL;
    return 0;
}

static uint64_t stream_id[MAX_STREAMS], recorded[MAX_STREAMS], completed[MAX_STREAMS];
static int n_streams;

static int slot(uint64_t stream) {
    for (int i = 0; i < n_streams; i++)
        if (stream_id[i] == stream) return i;
    stream_id[n_streams] = stream;
    return n_streams++;
}

typedef struct { int slot; uint64_t seq; } event;

int cudaEventCreateWithFlags(void** e, unsigned flags) {
    (void)flags;
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_event_create(e);
#endif
    *e = calloc(1, sizeof(event));
    return *e ? 0 : 2;
}
int cudaEventRecord(void* e, void* stream) {
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_event_record(e, stream);
#endif
    event* ev = e;
    ev->slot = slot((uint64_t)(uintptr_t)stream);
    ev->seq = ++recorded[ev->slot];
    return 0;
}
int cudaEventQuery(void* e) {
#ifdef FAKE_CUDA_EMULATOR
    int r = ember_emu_rt_event_query(e);
    return r ? (last_error = r) : 0;
#endif
    event* ev = e;
    return completed[ev->slot] >= ev->seq ? 0 : (last_error = 600);
}
int cudaEventDestroy(void* e) {
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_event_destroy(e);
#endif
    free(e);
    return 0;
}
int cudaDeviceSynchronize(void) {
#ifdef FAKE_CUDA_EMULATOR
    syncs++;
    return ember_emu_rt_synchronize();
#endif
    for (int i = 0; i < n_streams; i++) completed[i] = recorded[i];
    syncs++;
    return 0;
}

/* test hooks */
void fake_complete(uint64_t stream) { int i = slot(stream); completed[i] = recorded[i]; }
int64_t fake_counter(const char* name) {
    if (!strcmp(name, "used")) return (int64_t)used;
    if (!strcmp(name, "live_handles")) return live_handles;
    if (!strcmp(name, "maps")) return maps;
    if (!strcmp(name, "unmaps")) return unmaps;
    if (!strcmp(name, "syncs")) return syncs;
    if (!strcmp(name, "set_device_calls")) return set_device_calls;
    if (!strcmp(name, "current_device")) return current_device;
    return -1;
}

/* -------------------------------------------------------------- driver */

#define GRANULE (2ull << 20)

typedef struct { int type; int id; } location;
typedef struct { int type; int handle_types; location loc; void* win32; unsigned char flags[8]; } prop;

#ifndef FAKE_CUDA_EMULATOR
int cuInit(unsigned flags) { (void)flags; return 0; }
#endif
int cuMemGetAllocationGranularity(size_t* g, const prop* p, int option) {
    (void)p;
    (void)option;
    *g = GRANULE;
    return 0;
}
int cuMemAddressReserve(unsigned long long* ptr, size_t size, size_t align, unsigned long long addr,
                        unsigned long long flags) {
    (void)align; (void)addr; (void)flags;
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_reserve(ptr, size, align);
#endif
    void* p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 2;
    *ptr = (uintptr_t)p;
    return 0;
}
int cuMemAddressFree(unsigned long long ptr, size_t size) {
#ifdef FAKE_CUDA_EMULATOR
    return ember_emu_rt_address_free(ptr, size);
#endif
    return munmap((void*)(uintptr_t)ptr, size);
}
int cuMemCreate(unsigned long long* h, size_t size, const prop* p, unsigned long long flags) {
    (void)flags;
    if (size != GRANULE || p->type != 1 || p->loc.type != 1) return 1; /* invalid value */
#ifdef FAKE_CUDA_EMULATOR
    size_t free_bytes = 0, total = 0; /* the emulated device's memory */
    ember_emu_rt_mem_info(&free_bytes, &total);
    if (size > free_bytes) return 2;
#else
    if (used + size > FAKE_TOTAL) return 2;
#endif
    used += size;
    live_handles++;
    *h = (unsigned long long)live_handles + 1000;
    return 0;
}
int cuMemRelease(unsigned long long h) {
    (void)h;
    used -= GRANULE;
    live_handles--;
    return 0;
}
int cuMemMap(unsigned long long ptr, size_t size, size_t offset, unsigned long long h,
             unsigned long long flags) {
    (void)offset; (void)h; (void)flags;
#ifdef FAKE_CUDA_EMULATOR
    if (ember_emu_rt_map(ptr, size)) return 1;
    maps++;
    return 0;
#endif
    void* p = mmap((void*)(uintptr_t)ptr, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) return 1;
    maps++;
    return 0;
}
int cuMemSetAccess(unsigned long long ptr, size_t size, const void* desc, size_t count) {
    const int* d = desc; /* {location {type, id}, flags} */
    if (count != 1 || d[0] != 1 || d[2] != 3) return 1;
#ifdef FAKE_CUDA_EMULATOR
    return 0; /* mapped read/write already */
#endif
    return mprotect((void*)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) ? 1 : 0;
}
int cuMemUnmap(unsigned long long ptr, size_t size) {
#ifdef FAKE_CUDA_EMULATOR
    if (ember_emu_rt_unmap(ptr, size)) return 1;
    unmaps++;
    return 0;
#endif
    void* p = mmap((void*)(uintptr_t)ptr, size, PROT_NONE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 1;
    unmaps++;
    return 0;
}
