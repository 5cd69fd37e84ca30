/* CUDA raw allocators: device memory (cudaMalloc, or the driver's virtual
 * memory calls for expandable segments) and pinned host memory (cudaHostAlloc).
 *
 * The CUDA runtime and driver are loaded with dlopen at first use, so the package
 * builds and runs on machines without CUDA; there these kinds fail with
 * EA_ERR_UNAVAILABLE and a message saying what was looked for.  Only the few
 * types and constants used are declared here, matching cuda.h / cuda_runtime.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ember_allocator.h"
#include "raw.h"

typedef int cudaError_t;
typedef void* cudaStream_t;
typedef void* cudaEvent_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorNotReady = 600 };
enum { cudaEventDisableTiming = 2, cudaHostAllocDefault = 0 };

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
    int type;
    int requestedHandleTypes;
    CUmemLocation location;
    void* win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
enum { CU_MEM_ALLOCATION_TYPE_PINNED = 1, CU_MEM_LOCATION_TYPE_DEVICE = 1,
       CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3, CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
       CUDA_ERROR_OUT_OF_MEMORY = 2 };

static struct {
    pthread_once_t once;
    int loaded;
    char why[256];
    cudaError_t (*SetDevice)(int);
    cudaError_t (*GetDevice)(int*);
    cudaError_t (*Malloc)(void**, size_t);
    cudaError_t (*Free)(void*);
    cudaError_t (*HostAlloc)(void**, size_t, unsigned);
    cudaError_t (*FreeHost)(void*);
    cudaError_t (*EventCreateWithFlags)(cudaEvent_t*, unsigned);
    cudaError_t (*EventRecord)(cudaEvent_t, cudaStream_t);
    cudaError_t (*EventQuery)(cudaEvent_t);
    cudaError_t (*EventDestroy)(cudaEvent_t);
    cudaError_t (*DeviceSynchronize)(void);
    cudaError_t (*MemGetInfo)(size_t*, size_t*);
    cudaError_t (*GetLastError)(void);
    const char* (*GetErrorString)(cudaError_t);
    /* driver API, for expandable segments (optional) */
    int have_vmm;
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice*, int);
    CUresult (*cuMemGetAllocationGranularity)(size_t*, const CUmemAllocationProp*, int);
    CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
    CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                            unsigned long long);
    CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
    CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
    CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
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
    LOAD(drv, cuDeviceGet, "cuDeviceGet");
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

static int cuda_status(cudaError_t err, const char* what, size_t size) {
    cu.GetLastError(); /* clear the sticky-free error so later calls are unaffected */
    return ea_fail(err == cudaErrorMemoryAllocation ? EA_ERR_OOM : EA_ERR_SYSTEM,
                   "%s of %zu bytes failed: %s", what, size, cu.GetErrorString(err));
}

/* Reservations of expandable segments and the handle behind each mapped page. */
typedef struct reservation {
    CUdeviceptr base;
    size_t size;
    CUmemGenericAllocationHandle* handles; /* one per granule, 0 = unmapped */
    struct reservation* next;
} reservation;

typedef struct cuda_ctx {
    int device;
    reservation* reservations;
} cuda_ctx;

static int enter(cuda_ctx* c, int* prev) {
    cu.GetDevice(prev);
    if (*prev != c->device && cu.SetDevice(c->device) != cudaSuccess)
        return ea_fail(EA_ERR_SYSTEM, "cannot switch to CUDA device %d", c->device);
    return EA_OK;
}

static void leave(cuda_ctx* c, int prev) {
    if (prev != c->device) cu.SetDevice(prev);
}

static int dev_alloc(void* ctx, size_t size, void** ptr, int64_t* handle) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    cudaError_t err = cu.Malloc(ptr, size);
    leave(c, prev);
    *handle = -1;
    return err == cudaSuccess ? EA_OK : cuda_status(err, "cudaMalloc", size);
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
    cudaEvent_t ev = NULL;
    cudaError_t err = cu.EventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err == cudaSuccess) err = cu.EventRecord(ev, (cudaStream_t)(uintptr_t)stream);
    leave(c, prev);
    if (err != cudaSuccess) {
        if (ev) cu.EventDestroy(ev);
        return cuda_status(err, "recording an event", 0);
    }
    *event = ev;
    return EA_OK;
}

static int dev_query_event(void* ctx, void* event) {
    (void)ctx;
    cudaError_t err = cu.EventQuery((cudaEvent_t)event);
    if (err == cudaSuccess) return 1;
    if (err == cudaErrorNotReady) {
        cu.GetLastError();
        return 0;
    }
    return -1;
}

static void dev_destroy_event(void* ctx, void* event) {
    (void)ctx;
    cu.EventDestroy((cudaEvent_t)event);
}

static int dev_synchronize(void* ctx) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    cudaError_t err = cu.DeviceSynchronize();
    leave(c, prev);
    return err == cudaSuccess ? EA_OK : cuda_status(err, "cudaDeviceSynchronize", 0);
}

static int dev_memory_info(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes) {
    cuda_ctx* c = ctx;
    int prev;
    if (enter(c, &prev) != EA_OK) return EA_ERR_SYSTEM;
    size_t f = 0, t = 0;
    cudaError_t err = cu.MemGetInfo(&f, &t);
    leave(c, prev);
    *free_bytes = f;
    *total_bytes = t;
    return err == cudaSuccess ? EA_OK : cuda_status(err, "cudaMemGetInfo", 0);
}

static CUmemAllocationProp device_prop(int device) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

static size_t vmm_granularity(int device) {
    CUmemAllocationProp prop = device_prop(device);
    size_t g = 0;
    if (cu.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != 0 || !g)
        g = 2u << 20;
    return g < (2u << 20) ? (2u << 20) : g;
}

static reservation* find_reservation(cuda_ctx* c, CUdeviceptr addr) {
    for (reservation* r = c->reservations; r; r = r->next)
        if (addr >= r->base && addr < r->base + r->size) return r;
    return NULL;
}

static int dev_reserve(void* ctx, size_t size, void** base) {
    cuda_ctx* c = ctx;
    size_t gran = vmm_granularity(c->device);
    reservation* r = calloc(1, sizeof *r);
    if (!r) return ea_fail(EA_ERR_OOM, "no host memory for a reservation");
    r->handles = calloc(size / gran + 1, sizeof *r->handles);
    CUdeviceptr p = 0;
    if (!r->handles || cu.cuMemAddressReserve(&p, size, 0, 0, 0) != 0) {
        free(r->handles);
        free(r);
        return ea_fail(EA_ERR_OOM, "cuMemAddressReserve of %zu bytes failed", size);
    }
    r->base = p;
    r->size = size;
    r->next = c->reservations;
    c->reservations = r;
    *base = (void*)(uintptr_t)p;
    return EA_OK;
}

static int dev_unmap(void* ctx, void* addr, size_t size);

static int dev_map(void* ctx, void* addr, size_t size) {
    cuda_ctx* c = ctx;
    size_t gran = vmm_granularity(c->device);
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)addr;
    reservation* r = find_reservation(c, a);
    if (!r) return ea_fail(EA_ERR_INVALID, "map outside any reservation");
    CUmemAllocationProp prop = device_prop(c->device);
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, c->device}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (size_t off = 0; off < size; off += gran) {
        size_t page = (a + off - r->base) / gran;
        CUmemGenericAllocationHandle h = 0;
        CUresult res = cu.cuMemCreate(&h, gran, &prop, 0);
        if (res == 0) res = cu.cuMemMap(a + off, gran, 0, h, 0);
        if (res == 0) res = cu.cuMemSetAccess(a + off, gran, &access, 1);
        if (res != 0) {
            if (h) cu.cuMemRelease(h);
            if (off) dev_unmap(ctx, addr, off);
            return ea_fail(res == CUDA_ERROR_OUT_OF_MEMORY ? EA_ERR_OOM : EA_ERR_SYSTEM,
                           "mapping %zu bytes of device memory failed (CUresult %d)", size, res);
        }
        r->handles[page] = h;
    }
    return EA_OK;
}

static int dev_unmap(void* ctx, void* addr, size_t size) {
    cuda_ctx* c = ctx;
    size_t gran = vmm_granularity(c->device);
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)addr;
    reservation* r = find_reservation(c, a);
    if (!r) return ea_fail(EA_ERR_INVALID, "unmap outside any reservation");
    dev_synchronize(ctx); /* memory may still be in use by queued kernels */
    for (size_t off = 0; off < size; off += gran) {
        size_t page = (a + off - r->base) / gran;
        if (!r->handles[page]) continue;
        cu.cuMemUnmap(a + off, gran);
        cu.cuMemRelease(r->handles[page]);
        r->handles[page] = 0;
    }
    return EA_OK;
}

static void dev_release(void* ctx, void* base, size_t size) {
    cuda_ctx* c = ctx;
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)base;
    dev_unmap(ctx, base, size);
    reservation** pr = &c->reservations;
    while (*pr && (*pr)->base != a) pr = &(*pr)->next;
    if (*pr) {
        reservation* r = *pr;
        *pr = r->next;
        cu.cuMemAddressFree(r->base, r->size);
        free(r->handles);
        free(r);
    }
}

static void dev_destroy(void* ctx) { free(ctx); }

int ea_raw_cuda_init(ea_raw* raw, int device) {
    int st = cuda_available();
    if (st != EA_OK) return st;
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
        raw->granularity = vmm_granularity(device);
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
    cudaError_t err = cu.HostAlloc(ptr, size, cudaHostAllocDefault);
    leave(c, prev);
    *handle = -1;
    return err == cudaSuccess ? EA_OK : cuda_status(err, "cudaHostAlloc", size);
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
