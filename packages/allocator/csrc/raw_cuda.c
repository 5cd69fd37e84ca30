/* CUDA raw allocators: device memory (cudaMalloc, or the driver's virtual
 * memory calls for expandable segments) and pinned host memory (cudaHostAlloc).
 *
 * The CUDA runtime and driver are loaded with dlopen at first use, so the package
 * builds and runs on machines without CUDA; there these kinds fail with
 * EA_ERR_UNAVAILABLE and a message saying what was looked for.  Only the few
 * types and constants used are declared in cuda_decls.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_decls.h"
#include "ember_allocator.h"
#include "raw.h"

static struct {
    pthread_once_t once;
    int loaded;
    char why[256];
    ea_cudaError_t (*SetDevice)(int);
    ea_cudaError_t (*GetDevice)(int*);
    ea_cudaError_t (*GetDeviceCount)(int*);
    ea_cudaError_t (*Malloc)(void**, size_t);
    ea_cudaError_t (*Free)(void*);
    ea_cudaError_t (*HostAlloc)(void**, size_t, unsigned);
    ea_cudaError_t (*FreeHost)(void*);
    ea_cudaError_t (*EventCreateWithFlags)(ea_cudaEvent_t*, unsigned);
    ea_cudaError_t (*EventRecord)(ea_cudaEvent_t, ea_cudaStream_t);
    ea_cudaError_t (*EventQuery)(ea_cudaEvent_t);
    ea_cudaError_t (*EventDestroy)(ea_cudaEvent_t);
    ea_cudaError_t (*DeviceSynchronize)(void);
    ea_cudaError_t (*MemGetInfo)(size_t*, size_t*);
    ea_cudaError_t (*GetLastError)(void);
    const char* (*GetErrorString)(ea_cudaError_t);
    /* driver API, for expandable segments (optional) */
    int have_vmm;
    ea_CUresult (*cuInit)(unsigned);
    ea_CUresult (*cuMemGetAllocationGranularity)(size_t*, const ea_CUmemAllocationProp*, int);
    ea_CUresult (*cuMemAddressReserve)(ea_CUdeviceptr*, size_t, size_t, ea_CUdeviceptr, unsigned long long);
    ea_CUresult (*cuMemAddressFree)(ea_CUdeviceptr, size_t);
    ea_CUresult (*cuMemCreate)(ea_CUmemGenericAllocationHandle*, size_t, const ea_CUmemAllocationProp*,
                            unsigned long long);
    ea_CUresult (*cuMemRelease)(ea_CUmemGenericAllocationHandle);
    ea_CUresult (*cuMemMap)(ea_CUdeviceptr, size_t, size_t, ea_CUmemGenericAllocationHandle, unsigned long long);
    ea_CUresult (*cuMemUnmap)(ea_CUdeviceptr, size_t);
    ea_CUresult (*cuMemSetAccess)(ea_CUdeviceptr, size_t, const ea_CUmemAccessDesc*, size_t);
} cu = {.once = PTHREAD_ONCE_INIT};

static void* open_first(const char* const* names) {
    for (int i = 0; names[i]; i++) {
        void* h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

#define LOAD(handle, field, sym)                                          \
    do {                                                                  \
        *(void**)(&cu.field) = dlsym(handle, sym);                        \
        if (!cu.field) ok = 0;                                            \
    } while (0)

static void load_cuda(void) {
    static const char* const rt_names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                           "libcudart.so.11.0", NULL};
    void* rt = open_first(rt_names);
    if (!rt) {
        strncpy(cu.why, "the CUDA runtime (libcudart.so) was not found", sizeof cu.why - 1);
        return;
    }
    int ok = 1;
    LOAD(rt, SetDevice, "cudaSetDevice");
    LOAD(rt, GetDevice, "cudaGetDevice");
    LOAD(rt, GetDeviceCount, "cudaGetDeviceCount");
    LOAD(rt, Malloc, "cudaMalloc");
    LOAD(rt, Free, "cudaFree");
    LOAD(rt, HostAlloc, "cudaHostAlloc");
    LOAD(rt, FreeHost, "cudaFreeHost");
    LOAD(rt, EventCreateWithFlags, "cudaEventCreateWithFlags");
    LOAD(rt, EventRecord, "cudaEventRecord");
    LOAD(rt, EventQuery, "cudaEventQuery");
    LOAD(rt, EventDestroy, "cudaEventDestroy");
    LOAD(rt, DeviceSynchronize, "cudaDeviceSynchronize");
    LOAD(rt, MemGetInfo, "cudaMemGetInfo");
    LOAD(rt, GetLastError, "cudaGetLastError");
    LOAD(rt, GetErrorString, "cudaGetErrorString");
    if (!ok) {
        strncpy(cu.why, "the CUDA runtime lacks a needed symbol", sizeof cu.why - 1);
        return;
    }
    cu.loaded = 1;
    static const char* const drv_names[] = {"libcuda.so.1", "libcuda.so", NULL};
    void* drv = open_first(drv_names);
    if (!drv) return;
    ok = 1;
    LOAD(drv, cuInit, "cuInit");
    LOAD(drv, cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
    LOAD(drv, cuMemAddressReserve, "cuMemAddressReserve");
    LOAD(drv, cuMemAddressFree, "cuMemAddressFree");
    LOAD(drv, cuMemCreate, "cuMemCreate");
    LOAD(drv, cuMemRelease, "cuMemRelease");
    LOAD(drv, cuMemMap, "cuMemMap");
    LOAD(drv, cuMemUnmap, "cuMemUnmap");
    LOAD(drv, cuMemSetAccess, "cuMemSetAccess");
    cu.have_vmm = ok && cu.cuInit(0) == 0;
}

static int cuda_available(void) {
    pthread_once(&cu.once, load_cuda);
    if (!cu.loaded) return ea_fail(EA_ERR_UNAVAILABLE, "%s", cu.why);
    return EA_OK;
}

static int cuda_status(ea_cudaError_t err, const char* what, size_t size) {
    cu.GetLastError(); /* clear the sticky-free error so later calls are unaffected */
    return ea_fail(err == EA_cudaErrorMemoryAllocation ? EA_ERR_OOM : EA_ERR_SYSTEM,
                   "%s of %zu bytes failed: %s", what, size, cu.GetErrorString(err));
}

/* Reservations of expandable segments and the handle behind each mapped page. */
typedef struct reservation {
    ea_CUdeviceptr base;
    size_t size;
    ea_CUmemGenericAllocationHandle* handles; /* one per granule, 0 = unmapped */
    struct reservation* next;
} reservation;

typedef struct cuda_ctx {
    int device;
    size_t granularity;         /* of device memory mappings (expandable segments) */
    reservation* reservations;
} cuda_ctx;

static int enter(cuda_ctx* c, int* prev) {
    cu.GetDevice(prev);
    if (*prev != c->device && cu.SetDevice(c->device) != EA_cudaSuccess)
        return ea_fail(EA_ERR_SYSTEM, "cannot switch to CUDA device %d", c->device);
    return EA_OK;
}

static void leave(cuda_ctx* c, int prev) {
    if (prev != c->device) cu.SetDevice(prev);
}

/* The driver's virtual memory calls need a current context: cudaFree(NULL) makes
 * the runtime create the device's primary context and make it current. */
static int vmm_enter(cuda_ctx* c, int* prev) {
    if (enter(c, prev) != EA_OK) return EA_ERR_SYSTEM;
    ea_cudaError_t err = cu.Free(NULL);
    if (err != EA_cudaSuccess) {
        leave(c, *prev);
        return cuda_status(err, "initialising the CUDA context", 0);
    }
    return EA_OK;
}

static int dev_alloc(void* ctx, size_t size, void** ptr, int64_t* handle) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    ea_cudaError_t err = cu.Malloc(ptr, size);
    leave(c, prev);
    *handle = -1;
    return err == EA_cudaSuccess ? EA_OK : cuda_status(err, "cudaMalloc", size);
}

static void dev_free(void* ctx, void* ptr, size_t size, int64_t handle) {
    (void)size;
    (void)handle;
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return;
    cu.Free(ptr);
    leave(c, prev);
}

static int dev_record_event(void* ctx, uint64_t stream, void** event) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    ea_cudaEvent_t ev = NULL;
    ea_cudaError_t err = cu.EventCreateWithFlags(&ev, EA_cudaEventDisableTiming);
    if (err == EA_cudaSuccess) err = cu.EventRecord(ev, (ea_cudaStream_t)(uintptr_t)stream);
    leave(c, prev);
    if (err != EA_cudaSuccess) {
        if (ev) cu.EventDestroy(ev);
        return cuda_status(err, "recording an event", 0);
    }
    *event = ev;
    return EA_OK;
}

static int dev_query_event(void* ctx, void* event) {
    (void)ctx;
    ea_cudaError_t err = cu.EventQuery((ea_cudaEvent_t)event);
    if (err == EA_cudaSuccess) return 1;
    if (err == EA_cudaErrorNotReady) {
        cu.GetLastError();
        return 0;
    }
    return -1;
}

static void dev_destroy_event(void* ctx, void* event) {
    (void)ctx;
    cu.EventDestroy((ea_cudaEvent_t)event);
}

static int dev_synchronize(void* ctx) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    ea_cudaError_t err = cu.DeviceSynchronize();
    leave(c, prev);
    return err == EA_cudaSuccess ? EA_OK : cuda_status(err, "cudaDeviceSynchronize", 0);
}

static int dev_memory_info(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    size_t f = 0, t = 0;
    ea_cudaError_t err = cu.MemGetInfo(&f, &t);
    leave(c, prev);
    *free_bytes = f;
    *total_bytes = t;
    return err == EA_cudaSuccess ? EA_OK : cuda_status(err, "cudaMemGetInfo", 0);
}

static ea_CUmemAllocationProp device_prop(int device) {
    ea_CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = EA_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = EA_CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

static size_t vmm_granularity(int device) {
    ea_CUmemAllocationProp prop = device_prop(device);
    /* never below 2 MiB, the host granularity, so policies agree across kinds */
    size_t g = 0;
    if (cu.cuMemGetAllocationGranularity(&g, &prop, EA_CU_MEM_ALLOC_GRANULARITY_MINIMUM) != 0 || !g)
        g = 2u << 20;
    return g < (2u << 20) ? (2u << 20) : g;
}

static reservation* find_reservation(cuda_ctx* c, ea_CUdeviceptr addr) {
    for (reservation* r = c->reservations; r; r = r->next)
        if (addr >= r->base && addr < r->base + r->size) return r;
    return NULL;
}

static int dev_reserve(void* ctx, size_t size, void** base) {
    cuda_ctx* c = ctx;
    size_t gran = c->granularity;
    reservation* r = calloc(1, sizeof *r);
    if (!r) return ea_fail(EA_ERR_OOM, "no host memory for a reservation");
    r->handles = calloc(size / gran + 1, sizeof *r->handles);
    ea_CUdeviceptr p = 0;
    int prev;
    ea_CUresult res = -1;
    if (r->handles && vmm_enter(c, &prev) == EA_OK) {
        res = cu.cuMemAddressReserve(&p, size, gran, 0, 0);
        leave(c, prev);
    }
    if (res != EA_CUDA_SUCCESS) {
        free(r->handles);
        free(r);
        return ea_fail(EA_ERR_OOM, "cuMemAddressReserve of %zu bytes failed (CUresult %d)", size,
                       res);
    }
    r->base = p;
    r->size = size;
    r->next = c->reservations;
    c->reservations = r;
    *base = (void*)(uintptr_t)p;
    return EA_OK;
}

static int dev_unmap(void* ctx, void* addr, size_t size);

/* One physical allocation per granule, so any granule can be unmapped alone. */
static int dev_map(void* ctx, void* addr, size_t size) {
    cuda_ctx* c = ctx;
    size_t gran = c->granularity;
    ea_CUdeviceptr a = (ea_CUdeviceptr)(uintptr_t)addr;
    reservation* r = find_reservation(c, a);
    if (!r) return ea_fail(EA_ERR_INVALID, "map outside any reservation");
    int prev;
    if (vmm_enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    ea_CUmemAllocationProp prop = device_prop(c->device);
    ea_CUmemAccessDesc access = {{EA_CU_MEM_LOCATION_TYPE_DEVICE, c->device},
                                 EA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (size_t off = 0; off < size; off += gran) {
        size_t page = (a + off - r->base) / gran;
        ea_CUmemGenericAllocationHandle h = 0;
        int mapped = 0;
        ea_CUresult res = cu.cuMemCreate(&h, gran, &prop, 0);
        if (res == EA_CUDA_SUCCESS) res = cu.cuMemMap(a + off, gran, 0, h, 0);
        if (res == EA_CUDA_SUCCESS) {
            mapped = 1;
            res = cu.cuMemSetAccess(a + off, gran, &access, 1);
        }
        if (res != EA_CUDA_SUCCESS) {
            if (mapped) cu.cuMemUnmap(a + off, gran);
            if (h) cu.cuMemRelease(h);
            leave(c, prev);
            if (off) dev_unmap(ctx, addr, off);
            return ea_fail(res == EA_CUDA_ERROR_OUT_OF_MEMORY ? EA_ERR_OOM : EA_ERR_SYSTEM,
                           "mapping %zu bytes of device memory failed (CUresult %d)", size, res);
        }
        r->handles[page] = h;
    }
    leave(c, prev);
    return EA_OK;
}

static int dev_unmap(void* ctx, void* addr, size_t size) {
    cuda_ctx* c = ctx;
    size_t gran = c->granularity;
    ea_CUdeviceptr a = (ea_CUdeviceptr)(uintptr_t)addr;
    reservation* r = find_reservation(c, a);
    if (!r) return ea_fail(EA_ERR_INVALID, "unmap outside any reservation");
    int st = dev_synchronize(ctx); /* queued kernels may still use the memory */
    if (st != EA_OK) return st;
    int prev;
    if (vmm_enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    for (size_t off = 0; off < size; off += gran) {
        size_t page = (a + off - r->base) / gran;
        if (!r->handles[page]) continue;
        cu.cuMemUnmap(a + off, gran);
        cu.cuMemRelease(r->handles[page]);
        r->handles[page] = 0;
    }
    leave(c, prev);
    return EA_OK;
}

static void dev_release(void* ctx, void* base, size_t size) {
    cuda_ctx* c = ctx;
    ea_CUdeviceptr a = (ea_CUdeviceptr)(uintptr_t)base;
    dev_unmap(ctx, base, size);
    reservation** pr = &c->reservations;
    while (*pr && (*pr)->base != a) pr = &(*pr)->next;
    if (*pr) {
        reservation* r = *pr;
        *pr = r->next;
        int prev;
        if (vmm_enter(c, &prev) == EA_OK) {
            cu.cuMemAddressFree(r->base, r->size);
            leave(c, prev);
        }
        free(r->handles);
        free(r);
    }
}

static void dev_destroy(void* ctx) { free(ctx); }

int ea_raw_cuda_init(ea_raw* raw, int device) {
    int st = cuda_available();
    if (st != EA_OK) return st;
    int count = 0;
    ea_cudaError_t err = cu.GetDeviceCount(&count);
    if (err != EA_cudaSuccess) {
        cu.GetLastError();
        return ea_fail(EA_ERR_UNAVAILABLE, "no usable CUDA device: cudaGetDeviceCount: %s",
                       cu.GetErrorString(err));
    }
    if (count == 0) return ea_fail(EA_ERR_UNAVAILABLE, "no CUDA device found");
    if (device < 0 || device >= count)
        return ea_fail(EA_ERR_INVALID, "CUDA device %d does not exist (this machine has %d)", device,
                       count);
    cuda_ctx* c = calloc(1, sizeof *c);
    if (!c) return ea_fail(EA_ERR_OOM, "no host memory");
    c->device = device;
    memset(raw, 0, sizeof *raw);
    raw->name = "cuda";
    raw->ctx = c;
    raw->has_streams = 1;
    raw->alloc = dev_alloc;
    raw->free = dev_free;
    raw->record_event = dev_record_event;
    raw->query_event = dev_query_event;
    raw->destroy_event = dev_destroy_event;
    raw->synchronize = dev_synchronize;
    raw->memory_info = dev_memory_info;
    raw->destroy = dev_destroy;
    if (cu.have_vmm) {
        c->granularity = raw->granularity = vmm_granularity(device);
        raw->reserve = dev_reserve;
        raw->map = dev_map;
        raw->unmap = dev_unmap;
        raw->release = dev_release;
    }
    return EA_OK;
}

/* --------------------------------------------------------------- pinned */

static int pinned_alloc(void* ctx, size_t size, void** ptr, int64_t* handle) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    ea_cudaError_t err = cu.HostAlloc(ptr, size, EA_cudaHostAllocDefault);
    leave(c, prev);
    *handle = -1;
    return err == EA_cudaSuccess ? EA_OK : cuda_status(err, "cudaHostAlloc", size);
}

static void pinned_free(void* ctx, void* ptr, size_t size, int64_t handle) {
    (void)ctx;
    (void)size;
    (void)handle;
    cu.FreeHost(ptr);
}

int ea_raw_pinned_init(ea_raw* raw, int device) {
    int st = ea_raw_cuda_init(raw, device);
    if (st != EA_OK) return st;
    raw->name = "pinned";
    raw->alloc = pinned_alloc;
    raw->free = pinned_free;
    raw->memory_info = NULL;
    raw->granularity = 0;
    raw->reserve = NULL;
    raw->map = NULL;
    raw->unmap = NULL;
    raw->release = NULL;
    return EA_OK;
}
