/* ember's CUDA kernel runtime: the driver loaded with dlopen, devices and their
 * primary contexts, per-thread current device and stream, streams and events,
 * copies, the table of loaded kernels, and launches.
 *
 * Note [CUDA contexts]
 * ember uses each device's primary context, the one the CUDA runtime (and so
 * ember_allocator's cudaMalloc, CuPy and PyTorch) uses too, so memory and
 * streams are shared with them.  A thread makes the current device's primary
 * context current before its first launch (ecu_ready); the current device and
 * the current stream per device are per thread, as in PyTorch.
 *
 * Note [CUDA after fork]
 * A CUDA context does not survive fork(): a child process of a process that
 * initialised CUDA gets a clear error instead of undefined behaviour.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

#define ECU_MAX_DEVICES 64

ecu_driver ecu_drv;

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    int loaded;     /* driver loaded and initialised */
    int forked;     /* this process is a fork() child of one that used CUDA */
    int count;      /* devices */
    int blocking;   /* EMBER_LAUNCH_BLOCKING */
    char why[400];  /* why CUDA is unavailable */
    ecu_CUcontext ctx[ECU_MAX_DEVICES];
    volatile int32_t* err_host[ECU_MAX_DEVICES]; /* device-side error words */
    ecu_CUdeviceptr err_dev[ECU_MAX_DEVICES];
} rt = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int tls_device = 0;
static _Thread_local ecu_CUcontext tls_ctx = NULL;
static _Thread_local uint64_t tls_stream[ECU_MAX_DEVICES];

/* ------------------------------------------------------------------ errors */

int ecu_check(ecu_CUresult r, const char* what) {
    if (r == ECU_CUDA_SUCCESS) return EC_OK;
    const char* name = "?";
    const char* text = "unknown error";
    if (ecu_drv.cuGetErrorName) ecu_drv.cuGetErrorName(r, &name);
    if (ecu_drv.cuGetErrorString) ecu_drv.cuGetErrorString(r, &text);
    return ec_fail(EC_ERR_CUDA, "CUDA error in %s: %s (%s, code %d)", what, text, name, r);
}

/* ------------------------------------------------------------------ loading */

static void mark_forked(void) {
    if (rt.loaded) rt.forked = 1;
    rt.loaded = 0;
}

#define SYM(field, name)                                                         \
    do {                                                                         \
        *(void**)(&ecu_drv.field) = dlsym(h, name);                              \
        if (!ecu_drv.field) {                                                    \
            snprintf(rt.why, sizeof rt.why, "the CUDA driver lacks %s", name);   \
            return;                                                              \
        }                                                                        \
    } while (0)

static void load_driver(void) {
    pthread_atfork(NULL, NULL, mark_forked);
    const char* env = getenv("EMBER_LAUNCH_BLOCKING");
    rt.blocking = env && env[0] && strcmp(env, "0") != 0;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(rt.why, sizeof rt.why,
                 "the NVIDIA driver library libcuda.so.1 was not found (no NVIDIA driver is "
                 "installed, or it is not on the library path): %s", dlerror());
        return;
    }
    SYM(cuInit, "cuInit");
    SYM(cuDriverGetVersion, "cuDriverGetVersion");
    SYM(cuGetErrorName, "cuGetErrorName");
    SYM(cuGetErrorString, "cuGetErrorString");
    SYM(cuDeviceGetCount, "cuDeviceGetCount");
    SYM(cuDeviceGet, "cuDeviceGet");
    SYM(cuDeviceGetName, "cuDeviceGetName");
    SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
    SYM(cuCtxSynchronize, "cuCtxSynchronize");
    SYM(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange");
    SYM(cuMemGetInfo, "cuMemGetInfo_v2");
    SYM(cuMemHostAlloc, "cuMemHostAlloc");
    SYM(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
    SYM(cuMemcpyAsync, "cuMemcpyAsync");
    SYM(cuMemsetD8Async, "cuMemsetD8Async");
    SYM(cuPointerGetAttribute, "cuPointerGetAttribute");
    SYM(cuStreamCreateWithPriority, "cuStreamCreateWithPriority");
    SYM(cuStreamDestroy, "cuStreamDestroy_v2");
    SYM(cuStreamSynchronize, "cuStreamSynchronize");
    SYM(cuStreamQuery, "cuStreamQuery");
    SYM(cuStreamWaitEvent, "cuStreamWaitEvent");
    SYM(cuEventCreate, "cuEventCreate");
    SYM(cuEventDestroy, "cuEventDestroy_v2");
    SYM(cuEventRecord, "cuEventRecord");
    SYM(cuEventSynchronize, "cuEventSynchronize");
    SYM(cuEventQuery, "cuEventQuery");
    *(void**)(&ecu_drv.cuEventElapsedTime) = dlsym(h, "cuEventElapsedTime_v2");
    if (!ecu_drv.cuEventElapsedTime) SYM(cuEventElapsedTime, "cuEventElapsedTime");
    SYM(cuModuleLoadData, "cuModuleLoadData");
    SYM(cuModuleGetFunction, "cuModuleGetFunction");
    SYM(cuFuncSetAttribute, "cuFuncSetAttribute");
    SYM(cuLaunchKernel, "cuLaunchKernel");
    ecu_CUresult r = ecu_drv.cuInit(0);
    if (r != ECU_CUDA_SUCCESS) {
        const char* text = "unknown error";
        ecu_drv.cuGetErrorString(r, &text);
        snprintf(rt.why, sizeof rt.why, "the CUDA driver failed to initialise: %s (code %d)",
                 text, r);
        return;
    }
    int n = 0;
    r = ecu_drv.cuDeviceGetCount(&n);
    if (r != ECU_CUDA_SUCCESS || n <= 0) {
        snprintf(rt.why, sizeof rt.why, "the CUDA driver found no GPU");
        return;
    }
    rt.count = n > ECU_MAX_DEVICES ? ECU_MAX_DEVICES : n;
    rt.loaded = 1;
}

int ecu_init(void) {
    pthread_once(&rt.once, load_driver);
    if (rt.forked)
        return ec_fail(EC_ERR_CUDA_UNAVAILABLE,
                       "Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                       "multiprocessing, you must use the 'spawn' start method");
    if (!rt.loaded) return ec_fail(EC_ERR_CUDA_UNAVAILABLE, "%s", rt.why);
    return EC_OK;
}

static int make_current(int dev) {
    if (dev < 0 || dev >= rt.count)
        return ec_fail(EC_ERR_INVALID, "CUDA device %d does not exist (%d device%s)", dev,
                       rt.count, rt.count == 1 ? "" : "s");
    if (!rt.ctx[dev]) {
        pthread_mutex_lock(&rt.lock);
        int st = EC_OK;
        if (!rt.ctx[dev]) {
            ecu_CUdevice d;
            ecu_CUcontext c = NULL;
            st = ecu_check(ecu_drv.cuDeviceGet(&d, dev), "cuDeviceGet");
            if (st == EC_OK) st = ecu_check(ecu_drv.cuDevicePrimaryCtxRetain(&c, d), "cuDevicePrimaryCtxRetain");
            if (st == EC_OK) rt.ctx[dev] = c;
        }
        pthread_mutex_unlock(&rt.lock);
        if (st != EC_OK) return st;
    }
    if (tls_ctx != rt.ctx[dev]) {
        int st = ecu_check(ecu_drv.cuCtxSetCurrent(rt.ctx[dev]), "cuCtxSetCurrent");
        if (st != EC_OK) return st;
        tls_ctx = rt.ctx[dev];
    }
    return EC_OK;
}

int ecu_ready(void) {
    if (__builtin_expect(tls_ctx != NULL && tls_ctx == rt.ctx[tls_device] && rt.loaded, 1))
        return EC_OK;
    int st = ecu_init();
    if (st != EC_OK) return st;
    return make_current(tls_device);
}

/* ------------------------------------------------------------------ devices */

int ecu_driver_version(int* version) {
    int st = ecu_init();
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuDriverGetVersion(version), "cuDriverGetVersion");
}

int ecu_device_count(int* count) {
    *count = 0;
    int st = ecu_init();
    if (st != EC_OK) return st;
    *count = rt.count;
    return EC_OK;
}

int ecu_set_device(int device) {
    int st = ecu_init();
    if (st != EC_OK) return st;
    st = make_current(device);
    if (st == EC_OK) tls_device = device;
    return st;
}

int ecu_get_device(void) { return tls_device; }
int ecu_device(void) { return tls_device; }

static int device_handle(int device, ecu_CUdevice* d) {
    int st = ecu_init();
    if (st != EC_OK) return st;
    if (device < 0 || device >= rt.count)
        return ec_fail(EC_ERR_INVALID, "CUDA device %d does not exist (%d device%s)", device,
                       rt.count, rt.count == 1 ? "" : "s");
    return ecu_check(ecu_drv.cuDeviceGet(d, device), "cuDeviceGet");
}

int ecu_device_name(int device, char* name, int len) {
    ecu_CUdevice d;
    int st = device_handle(device, &d);
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuDeviceGetName(name, len, d), "cuDeviceGetName");
}

int ecu_device_attribute(int device, int attribute, int* value) {
    ecu_CUdevice d;
    int st = device_handle(device, &d);
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuDeviceGetAttribute(value, attribute, d), "cuDeviceGetAttribute");
}

int ecu_device_total_memory(int device, uint64_t* bytes) {
    ecu_CUdevice d;
    int st = device_handle(device, &d);
    if (st != EC_OK) return st;
    size_t b = 0;
    st = ecu_check(ecu_drv.cuDeviceTotalMem(&b, d), "cuDeviceTotalMem");
    *bytes = b;
    return st;
}

/* Make `device` current on this thread for a call on its behalf; `leave`
 * restores the thread's own device (and keeps the first error). */
static int enter(int device, int* prev) {
    int st = ecu_init();
    if (st != EC_OK) return st;
    *prev = tls_device;
    st = make_current(device);
    if (st == EC_OK) tls_device = device;
    return st;
}

static int leave(int prev, int st) {
    tls_device = prev;
    int st2 = make_current(prev);
    return st != EC_OK ? st : st2;
}

int ecu_mem_get_info(int device, uint64_t* free_bytes, uint64_t* total_bytes) {
    int prev;
    int st = enter(device, &prev);
    if (st != EC_OK) return st;
    size_t f = 0, t = 0;
    st = ecu_check(ecu_drv.cuMemGetInfo(&f, &t), "cuMemGetInfo");
    *free_bytes = f;
    *total_bytes = t;
    return leave(prev, st);
}

/* --------------------------------------------------- device-side errors */

/* Note [Device-side errors]
 * Kernels that can find bad input (an index out of range) get the address of
 * the device's error word: four int32 (code, then details) in pinned host memory
 * mapped into the device.  The first failing thread claims it with atomicCAS on
 * the code; the host reads it at the next synchronisation (ecu_check_errors),
 * raises, and clears it. */
ecu_CUdeviceptr ecu_error_word(void) {
    int dev = tls_device;
    if (!rt.err_host[dev]) {
        void* host = NULL;
        ecu_CUdeviceptr d = 0;
        if (ecu_drv.cuMemHostAlloc(&host, 64, ECU_CU_MEMHOSTALLOC_PORTABLE | ECU_CU_MEMHOSTALLOC_DEVICEMAP) !=
            ECU_CUDA_SUCCESS)
            return 0;
        memset(host, 0, 64);
        if (ecu_drv.cuMemHostGetDevicePointer(&d, host, 0) != ECU_CUDA_SUCCESS) return 0;
        rt.err_dev[dev] = d;
        rt.err_host[dev] = (volatile int32_t*)host;
    }
    return rt.err_dev[dev];
}

static int device_errors(int dev) {
    volatile int32_t* w = rt.err_host[dev];
    if (!w || w[0] == 0) return EC_OK;
    int code = w[0];
    long long a = (long long)w[2] | ((long long)w[3] << 32);
    long long b = (long long)w[4] | ((long long)w[5] << 32);
    w[0] = 0;
    /* Python raises it as a DeviceIndexError: an IndexError and a RuntimeError
     * (as PyTorch's device-side asserts are); the message prefix tells it apart */
    if (code == EC_ERR_INDEX)
        return ec_fail(EC_ERR_INDEX,
                       "CUDA kernel error (reported at this synchronisation, by a kernel queued "
                       "earlier): index %lld is out of bounds for a dimension of size %lld", a, b);
    if (code == EC_ERR_VALUE) /* e.g. multinomial's weights (detail: the row) */
        return ec_fail(EC_ERR_CUDA,
                       "CUDA kernel error (reported at this synchronisation, by a kernel queued "
                       "earlier): invalid input values (multinomial: weights must be finite, "
                       "non-negative and have a positive sum, and enough non-zero categories "
                       "without replacement; row %lld)", a);
    return ec_fail(EC_ERR_CUDA, "CUDA kernel error (reported at this synchronisation, by a "
                                "kernel queued earlier): code %d (%lld, %lld)", code, a, b);
}

int ecu_check_errors(void) { return device_errors(tls_device); }

int ecu_synchronize(int device) {
    int prev;
    int st = enter(device, &prev);
    if (st != EC_OK) return st;
    st = ecu_check(ecu_drv.cuCtxSynchronize(), "synchronize");
    if (st == EC_OK) st = device_errors(device);
    return leave(prev, st);
}

void ecu_set_launch_blocking(int on) { rt.blocking = on; }
int ecu_launch_is_blocking(void) { return rt.blocking; }

/* ------------------------------------------------------- streams, events */

int ecu_stream_create(int device, int priority, uint64_t* stream) {
    int prev;
    int st = enter(device, &prev);
    if (st != EC_OK) return st;
    ecu_CUstream s = NULL;
    st = ecu_check(ecu_drv.cuStreamCreateWithPriority(&s, ECU_CU_STREAM_NON_BLOCKING, priority),
                   "cuStreamCreateWithPriority");
    *stream = (uint64_t)(uintptr_t)s;
    return leave(prev, st);
}

int ecu_stream_destroy(uint64_t stream) {
    int st = ecu_ready();
    if (st != EC_OK || !stream) return st;
    return ecu_check(ecu_drv.cuStreamDestroy((ecu_CUstream)(uintptr_t)stream), "cuStreamDestroy");
}

int ecu_stream_synchronize(uint64_t stream) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    st = ecu_check(ecu_drv.cuStreamSynchronize((ecu_CUstream)(uintptr_t)stream), "stream synchronize");
    return st == EC_OK ? device_errors(tls_device) : st;
}

int ecu_stream_query(uint64_t stream, int* done) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_CUresult r = ecu_drv.cuStreamQuery((ecu_CUstream)(uintptr_t)stream);
    *done = r == ECU_CUDA_SUCCESS;
    return r == ECU_CUDA_ERROR_NOT_READY ? EC_OK : ecu_check(r, "stream query");
}

int ecu_stream_wait_event(uint64_t stream, uint64_t event) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuStreamWaitEvent((ecu_CUstream)(uintptr_t)stream,
                                               (ecu_CUevent)(uintptr_t)event, 0),
                     "stream wait event");
}

int ecu_stream_priority_range(int* least, int* greatest) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuCtxGetStreamPriorityRange(least, greatest), "stream priority range");
}

void ecu_set_stream(int device, uint64_t stream) {
    if (device >= 0 && device < ECU_MAX_DEVICES) tls_stream[device] = stream;
}

uint64_t ecu_current_stream(int device) {
    return (device >= 0 && device < ECU_MAX_DEVICES) ? tls_stream[device] : 0;
}

ecu_CUstream ecu_stream(void) { return (ecu_CUstream)(uintptr_t)tls_stream[tls_device]; }

int ecu_event_create(int timing, uint64_t* event) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_CUevent e = NULL;
    st = ecu_check(ecu_drv.cuEventCreate(&e, timing ? 0 : ECU_CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    *event = (uint64_t)(uintptr_t)e;
    return st;
}

int ecu_event_destroy(uint64_t event) {
    int st = ecu_ready();
    if (st != EC_OK || !event) return st;
    return ecu_check(ecu_drv.cuEventDestroy((ecu_CUevent)(uintptr_t)event), "cuEventDestroy");
}

int ecu_event_record(uint64_t event, uint64_t stream) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuEventRecord((ecu_CUevent)(uintptr_t)event, (ecu_CUstream)(uintptr_t)stream),
                     "event record");
}

int ecu_event_synchronize(uint64_t event) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    st = ecu_check(ecu_drv.cuEventSynchronize((ecu_CUevent)(uintptr_t)event), "event synchronize");
    return st == EC_OK ? device_errors(tls_device) : st;
}

int ecu_event_query(uint64_t event, int* done) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_CUresult r = ecu_drv.cuEventQuery((ecu_CUevent)(uintptr_t)event);
    *done = r == ECU_CUDA_SUCCESS;
    return r == ECU_CUDA_ERROR_NOT_READY ? EC_OK : ecu_check(r, "event query");
}

int ecu_event_elapsed(uint64_t start, uint64_t end, float* ms) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuEventElapsedTime(ms, (ecu_CUevent)(uintptr_t)start,
                                                (ecu_CUevent)(uintptr_t)end),
                     "event elapsed time");
}

/* ----------------------------------------------------------------- memory */

int ecu_memcpy(ec_ptr dst, ec_ptr src, uint64_t nbytes, int blocking) {
    if (!nbytes) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_CUstream s = ecu_stream();
    st = ecu_check(ecu_drv.cuMemcpyAsync((ecu_CUdeviceptr)dst, (ecu_CUdeviceptr)src, nbytes, s),
                   "copy");
    if (st != EC_OK) return st;
    if (blocking || rt.blocking) {
        st = ecu_check(ecu_drv.cuStreamSynchronize(s), "copy (synchronize)");
        if (st == EC_OK) st = device_errors(tls_device);
    }
    return st;
}

int ecu_memset(ec_ptr dst, int value, uint64_t nbytes) {
    if (!nbytes) return EC_OK;
    int st = ecu_ready();
    if (st != EC_OK) return st;
    return ecu_check(ecu_drv.cuMemsetD8Async((ecu_CUdeviceptr)dst, (unsigned char)value, nbytes,
                                             ecu_stream()),
                     "memset");
}

int ecu_pointer_device(ec_ptr ptr, int* device) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    unsigned int type = 0;
    ecu_CUresult r = ecu_drv.cuPointerGetAttribute(&type, ECU_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                   (ecu_CUdeviceptr)ptr);
    if (r != ECU_CUDA_SUCCESS || type != 2 /* CU_MEMORYTYPE_DEVICE */) {
        *device = -1;
        return EC_OK;
    }
    int ordinal = -1;
    r = ecu_drv.cuPointerGetAttribute(&ordinal, ECU_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      (ecu_CUdeviceptr)ptr);
    *device = r == ECU_CUDA_SUCCESS ? ordinal : -1;
    return EC_OK;
}

/* ---------------------------------------------------------- kernel table */

/* Note [Kernel table]
 * Loaded kernels are found by a 64-bit key (family, op, dtype, dtype2,
 * variant) in one open-addressing table per device.  A miss asks the Python
 * side to compile that kernel of its (family, op, dtypes) group and register
 * it (only the variants a program uses get compiled: a strided variant costs
 * ptxas several times a contiguous one); the lock covers the table because
 * compiling releases the GIL. */
typedef struct {
    uint64_t* keys;
    ecu_CUfunction* fns;
    size_t cap, used;
} kernel_table;

static kernel_table tables[ECU_MAX_DEVICES];

static uint64_t make_key(int family, int op, int dtype, int dtype2, int variant) {
    return (1ull << 63) | ((uint64_t)(family & 0xff) << 40) | ((uint64_t)(op & 0xffff) << 24) |
           ((uint64_t)(dtype & 0xff) << 16) | ((uint64_t)(dtype2 & 0xff) << 8) |
           (uint64_t)(variant & 0xff);
}

static size_t slot_of(uint64_t key, size_t cap) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static ecu_CUfunction table_find(kernel_table* t, uint64_t key) {
    if (!t->cap) return NULL;
    for (size_t i = slot_of(key, t->cap);; i = (i + 1) & (t->cap - 1)) {
        if (t->keys[i] == key) return t->fns[i];
        if (t->keys[i] == 0) return NULL;
    }
}

static int table_put(kernel_table* t, uint64_t key, ecu_CUfunction fn) {
    if (2 * (t->used + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        uint64_t* keys = calloc(cap, sizeof *keys);
        ecu_CUfunction* fns = calloc(cap, sizeof *fns);
        if (!keys || !fns) {
            free(keys);
            free(fns);
            return ec_fail(EC_ERR_NOMEM, "CUDA kernel table: out of host memory");
        }
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->keys[i]) continue;
            size_t j = slot_of(t->keys[i], cap);
            while (keys[j]) j = (j + 1) & (cap - 1);
            keys[j] = t->keys[i];
            fns[j] = t->fns[i];
        }
        free(t->keys);
        free(t->fns);
        t->keys = keys;
        t->fns = fns;
        t->cap = cap;
    }
    size_t i = slot_of(key, t->cap);
    while (t->keys[i] && t->keys[i] != key) i = (i + 1) & (t->cap - 1);
    if (!t->keys[i]) t->used++;
    t->keys[i] = key;
    t->fns[i] = fn;
    return EC_OK;
}

int ecu_module_load(const void* image, uint64_t* module) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_CUmodule m = NULL;
    st = ecu_check(ecu_drv.cuModuleLoadData(&m, image), "cuModuleLoadData");
    *module = (uint64_t)(uintptr_t)m;
    return st;
}

int ecu_register(int family, int op, int dtype, int dtype2, int variant, uint64_t module,
                 const char* name) {
    int st = ecu_ready();
    if (st != EC_OK) return st;
    ecu_CUfunction f = NULL;
    st = ecu_check(ecu_drv.cuModuleGetFunction(&f, (ecu_CUmodule)(uintptr_t)module, name),
                   "cuModuleGetFunction");
    if (st != EC_OK) return st;
    pthread_mutex_lock(&rt.lock);
    st = table_put(&tables[tls_device], make_key(family, op, dtype, dtype2, variant), f);
    pthread_mutex_unlock(&rt.lock);
    return st;
}

int ecu_get_function(int family, int op, int dtype, int dtype2, int variant, ecu_CUfunction* f) {
    uint64_t key = make_key(family, op, dtype, dtype2, variant);
    int dev = tls_device;
    pthread_mutex_lock(&rt.lock);
    *f = table_find(&tables[dev], key);
    pthread_mutex_unlock(&rt.lock);
    if (*f) return EC_OK;
    int st = ecu_py_compile(dev, family, op, dtype, dtype2, variant);
    if (st != EC_OK) return st;
    pthread_mutex_lock(&rt.lock);
    *f = table_find(&tables[dev], key);
    pthread_mutex_unlock(&rt.lock);
    if (*f) return EC_OK;
    return ec_fail(EC_ERR_DTYPE, "no CUDA kernel for family %d op %d dtypes %d/%d variant %d",
                   family, op, dtype, dtype2, variant);
}

/* ---------------------------------------------------------------- launch */

int ecu_launch(ecu_CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
               unsigned bz, unsigned smem, void** args) {
    ecu_CUstream s = ecu_stream();
    int st = ecu_check(ecu_drv.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, args, NULL),
                       "kernel launch");
    if (st != EC_OK || !rt.blocking) return st;
    st = ecu_check(ecu_drv.cuStreamSynchronize(s), "kernel (EMBER_LAUNCH_BLOCKING)");
    return st == EC_OK ? device_errors(tls_device) : st;
}

int ecu_launch_elements(ecu_CUfunction f, int64_t work, void** args) {
    int64_t per_block = (int64_t)ECU_BLOCK * ECU_VEC;
    int64_t blocks = (work + per_block - 1) / per_block;
    if (blocks > 0x7fffffffLL)
        return ec_fail(EC_ERR_INVALID, "CUDA launch: %lld elements are too many for one launch",
                       (long long)work);
    return ecu_launch(f, (unsigned)blocks, 1, 1, ECU_BLOCK, 1, 1, 0, args);
}

/* -------------------------------------------------------------- geometry */

void ecu_make_divisor(ecu_div* v, uint32_t d) {
    uint32_t shift = 0;
    while (shift < 32 && (1ull << shift) < d) shift++;
    uint64_t one = 1;
    v->d = d;
    v->shift = shift;
    v->magic = (uint32_t)(((one << 32) * ((one << shift) - d)) / d + 1);
    v->pad = 0;
}

int ecu_geometry(int nops, int ndim, const int64_t* layout, const int* itemsizes, ecu_geo* g,
                 int* i32) {
    if (ndim < 0 || ndim > EC_MAX_DIMS || nops > ECU_MAX_OPERANDS)
        return ec_fail(EC_ERR_INVALID, "CUDA iterator: %d dims", ndim);
    int64_t shape[EC_MAX_DIMS], st[ECU_MAX_OPERANDS][EC_MAX_DIMS];
    int nd = 0;
    g->numel = 1;
    for (int d = 0; d < ndim; d++) {
        int64_t s = layout[d];
        if (s < 0) return ec_fail(EC_ERR_INVALID, "CUDA iterator: negative size %lld", (long long)s);
        g->numel *= s;
        if (s == 1) continue;
        shape[nd] = s;
        for (int k = 0; k < nops; k++) st[k][nd] = layout[ndim * (1 + k) + d] * itemsizes[k];
        nd++;
    }
    g->nops = nops;
    if (g->numel == 0) {
        g->ndim = 0;
        *i32 = 1;
        return EC_OK;
    }
    /* merge dim d into its outer neighbour when contiguous for every operand */
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (m > 0) {
            int mergeable = 1;
            for (int k = 0; k < nops; k++) mergeable &= st[k][m - 1] == st[k][d] * shape[d];
            if (mergeable) {
                shape[m - 1] *= shape[d];
                for (int k = 0; k < nops; k++) st[k][m - 1] = st[k][d];
                continue;
            }
        }
        shape[m] = shape[d];
        for (int k = 0; k < nops; k++) st[k][m] = st[k][d];
        m++;
    }
    if (m > ECU_MAX_DIMS)
        return ec_fail(EC_ERR_INVALID,
                       "CUDA kernels take at most %d dims that cannot be merged; this operand "
                       "layout has %d (make the tensors contiguous first)", ECU_MAX_DIMS, m);
    g->ndim = m;
    *i32 = g->numel < (1ll << 31);
    for (int d = 0; d < m; d++) {
        g->size[d] = shape[d];
        ecu_make_divisor(&g->div[d], shape[d] < (1ll << 31) ? (uint32_t)shape[d] : 1u);
        for (int k = 0; k < nops; k++) g->stride[k][d] = st[k][d];
    }
    return EC_OK;
}
