/* A CPU emulation of the CUDA driver for ember's own kernels: test support,
 * never shipped.  Built as libcuda.so.1 (with the CUDA runtime's calls that
 * ember_allocator uses, from packages/allocator/tests/fake_cuda.c, in the same
 * library, also named libcudart.so, and the cuBLAS GEMMs ember calls, also named
 * libcublas.so.13: Note [Emulated cuBLAS]) and found first on LD_LIBRARY_PATH by
 * a test process, so ember_core's runtime (csrc/cuda/runtime.c), its cuBLAS
 * launcher and ember_allocator's CUDA pool run unchanged without a GPU.
 *
 * Note [CUDA emulation]
 * What is emulated, and how:
 * - Devices (EMBER_CUDA_EMU_DEVICES, default 1) with a compute capability
 *   (EMBER_CUDA_EMU_CC, default 90), memory size (EMBER_CUDA_EMU_MEMORY_MB,
 *   default 4096) and the hardware's launch limits.  Primary contexts; the
 *   current context is per thread and shared with the runtime calls
 *   (cudaSetDevice makes a primary context current, as the real runtime does).
 * - Device memory is host memory inside one PROT_NONE arena per device
 *   (mapped read/write while allocated, with an inaccessible page after every
 *   allocation and no access at all once freed), so device pointers are told
 *   apart from host pointers (cuPointerGetAttribute), copies and kernels that
 *   run past an allocation or use freed memory fault instead of reading
 *   something, and a fault in a kernel becomes CUDA_ERROR_ILLEGAL_ADDRESS as
 *   on a GPU: sticky, reported at the next synchronisation.  Pinned host memory
 *   (cuMemHostAlloc, cudaHostAlloc) is page-locked in name only and mapped
 *   into every device at the same address (unified addressing).
 * - Streams are queues that run lazily: work is queued at launch and runs when
 *   something waits for it -- a synchronisation, an event or stream query (each
 *   query that finds work queued runs it and answers "not ready", so polling
 *   loops end), a blocking copy to pageable memory, cudaFree.  Waiting for one
 *   stream runs only what that stream depends on (its own work, and the work
 *   before the events it waits for), so a missing wait_stream or record_stream
 *   shows up as wrong or stale data, as it can on a GPU, but every time.
 *   Kernel arguments are copied at launch, copies from pageable memory copy
 *   their source at the call (as the driver stages them), copies to pageable
 *   memory wait.  The legacy default stream (0) synchronises with blocking
 *   streams (and the per-thread default streams); streams created non-blocking
 *   (ember's) do not.  Events record when
 *   their stream reaches them (at once on an idle stream), with the host's
 *   clock for elapsed_time.
 * - Kernels: a module is a shared object the emulation compiler built with g++
 *   from the same kernel sources (ember_cuda_emu.py; device.h provides what
 *   NVRTC provides; the image handed to cuModuleLoadData names the file).
 *   cuModuleGetFunction takes the lowered (mangled) names, which g++ spells as
 *   NVRTC does.  A launch is checked as the hardware checks it (block size
 *   against 1024 and the kernel's __launch_bounds__, grid dimensions, shared
 *   memory against 48 KiB or the opt-in set with cuFuncSetAttribute), and its
 *   pointer arguments must be device memory of the launching device or mapped
 *   pinned memory (a host pointer passed to a kernel is an error here; on a GPU
 *   it is an illegal address when dereferenced).
 * - Blocks run one after another; the threads of a block are fibers (a
 *   hand-rolled context switch on x86-64, ucontext elsewhere) that run one at
 *   a time until they finish or wait: at __syncthreads, at a warp collective
 *   (shuffles, votes, match, reduce, __syncwarp: a barrier among the lanes of
 *   the mask, then the exchange), at __activemask (the lanes of the warp that
 *   reach it while the rest of the block cannot move), after an atomic exchange
 *   or CAS and in __nanosleep (so spin locks progress).  So kernels that depend
 *   on barriers and warp collectives compute what they compute on a GPU, and
 *   kernels that depend on warp lockstep without them (undefined since Volta)
 *   break here.  Undefined uses are errors (CUDA_ERROR_LAUNCH_FAILED with a
 *   message): a collective whose mask names a lane that has exited or is
 *   outside the block, lanes of one collective with different masks, reading a
 *   shuffle source outside the mask, barriers that can never complete
 *   (deadlock), integer division by zero (which traps on the host; garbage on
 *   a GPU).  Static __shared__ memory (function-scope statics of the module) and
 *   dynamic shared memory are filled with 0xff before every block.
 *
 * What it cannot catch: races between threads that the GPU runs concurrently
 * (here one thread runs at a time, so atomics are trivially atomic and a
 * missing __syncthreads between threads of different warps is only caught when
 * the order we pick exposes it), the memory model, real timing and occupancy,
 * register pressure, PTX-level behaviour (inline asm must have an
 * EMBER_CUDA_EMULATION branch; fp16/bf16 conversion and the fast-math
 * intrinsics are computed exactly, where the hardware may differ in the last
 * bit), the contention of real atomics, and host pointers hidden inside
 * structures passed to kernels.  See packages/tensor-core/README.md.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ember_cuda_emu.h"

/* Fibers: a hand-written switch on x86-64, ucontext elsewhere (or with
 * -DEMU_UCONTEXT: slower, a system call per switch). */
#if !defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_UCONTEXT 1
#endif
#ifdef EMU_UCONTEXT
#include <ucontext.h>
#endif

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------ result codes */

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999,
};

static const struct {
    int code;
    const char* name;
    const char* text;
} error_table[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* The detail of this thread's last error, handed out by cuGetErrorString for
 * that code (ember's runtime asks right after the failing call). */
static _Thread_local int last_code;
static _Thread_local char last_detail[1024];

static int fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char* fmt, ...) {
    const char* text = "unknown error";
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++)
        if (error_table[i].code == code) text = error_table[i].text;
    int n = snprintf(last_detail, sizeof last_detail, "%s [CUDA emulator: ", text);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof last_detail)
        n += vsnprintf(last_detail + n, sizeof last_detail - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof last_detail - 1) strcat(last_detail, "]");
    last_code = code;
    if (getenv("EMBER_CUDA_EMU_VERBOSE")) fprintf(stderr, "ember CUDA emulator: %s\n", last_detail);
    return code;
}

EXPORT int cuGetErrorName(int code, const char** name) {
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++)
        if (error_table[i].code == code) {
            *name = error_table[i].name;
            return CUDA_SUCCESS;
        }
    *name = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT int cuGetErrorString(int code, const char** text) {
    if (code == last_code && code != CUDA_SUCCESS) {
        *text = last_detail;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++)
        if (error_table[i].code == code) {
            *text = error_table[i].text;
            return CUDA_SUCCESS;
        }
    *text = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* -------------------------------------------------------------- structures */

typedef struct emu_device emu_device;
typedef struct emu_stream emu_stream;
typedef struct emu_event emu_event;
typedef struct emu_module emu_module;
typedef struct emu_function emu_function;

typedef struct emu_ctx {
    emu_device* dev;
} emu_ctx;

/* A range of addresses the emulator knows: device memory (allocated or
 * mapped) or pinned host memory. */
enum { R_DEVICE = 1, R_PINNED = 2, R_RESERVED = 3 };
typedef struct range {
    uintptr_t base;
    size_t size;
    int kind;
    int device;
} range;

typedef struct free_range {
    uintptr_t base;
    size_t size;
} free_range;

struct emu_device {
    int ordinal;
    emu_ctx ctx;
    char* arena;
    size_t arena_size;
    free_range* free;    /* sorted free pieces of the arena */
    size_t nfree, capfree;
    size_t used;         /* bytes of device memory held (allocations and mappings) */
    emu_stream* legacy;  /* the NULL stream */
    int sticky;          /* a kernel fault: every later call fails with it */
    char sticky_msg[800];
};

enum { OP_KERNEL, OP_COPY, OP_MEMSET, OP_RECORD, OP_WAIT, OP_GEMM };

typedef struct emu_op {
    int kind;
    uint64_t seq;
    struct emu_op* next;
    union {
        struct {
            emu_function* fn;
            unsigned grid[3], block[3], smem;
            void** args;
            char* argbuf;
        } k;
        struct {
            char* dst;
            const char* src;
            size_t n;
            char* owned; /* a staged copy of pageable source memory */
        } c;
        struct {
            char* dst;
            unsigned char value;
            size_t n;
        } m;
        struct {
            emu_event* ev;
            uint64_t gen;
        } r;
        struct {
            emu_stream* s;
            uint64_t seq;
        } w;
        struct emu_gemm* g;
    } u;
} emu_op;

/* A cuBLAS GEMM queued on a stream (Note [Emulated cuBLAS]). */
typedef struct emu_gemm {
    int transa, transb, type, compute, tf32;
    long long m, n, k, lda, ldb, ldc, batch;
    long long stride_a, stride_b, stride_c;
    double alpha, beta;
    const char *a, *b;
    char* c;
} emu_gemm;

struct emu_stream {
    emu_device* dev;
    unsigned flags;
    int priority;
    int legacy;
    uint64_t enqueued, done;
    emu_op *head, *tail;
    emu_stream* next; /* all live streams */
};

struct emu_event {
    emu_device* dev;
    unsigned flags;
    emu_stream* stream; /* where it was last recorded */
    uint64_t seq, gen, completed_gen;
    double time_ms;
    emu_event* next;
};

struct emu_module {
    emu_device* dev;
    void* handle;
    const ember_emu_module* info;
    char path[4096];
    unsigned nshared;
    uintptr_t* shared_off; /* static __shared__ variables: offsets in the module */
    size_t* shared_size;
    size_t static_shared;  /* their total */
    uintptr_t base;        /* load address */
    emu_function* fns;
    emu_module* next;
};

struct emu_function {
    emu_module* mod;
    const ember_emu_kernel* k;
    const char* name;  /* lowered name */
    unsigned max_threads;
    int max_dynamic_shared;
};

/* ------------------------------------------------------------------ state */

static struct {
    pthread_once_t once;
    pthread_mutex_t lock; /* everything below, and execution */
    int initialised;
    int ndev;
    int cc;
    size_t total_memory;
    size_t stack_size;
    double timeout_s;
    emu_device dev[8];
    emu_stream* streams;
    emu_event* events;
    emu_module* modules;
    range* ranges; /* sorted by base */
    size_t nranges, capranges;
    size_t page;
} emu = {.once = PTHREAD_ONCE_INIT};

static _Thread_local emu_ctx* tls_ctx;

static void lock(void) { pthread_mutex_lock(&emu.lock); }
static void unlock(void) { pthread_mutex_unlock(&emu.lock); }

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static long env_long(const char* name, long dflt) {
    const char* v = getenv(name);
    if (!v || !*v) return dflt;
    char* end;
    long x = strtol(v, &end, 10);
    return *end ? dflt : x;
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* ------------------------------------------------------------------ ranges */

static size_t range_upper(uintptr_t p) { /* first range with base > p */
    size_t lo = 0, hi = emu.nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (emu.ranges[mid].base <= p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static range* range_find(uintptr_t p) {
    size_t i = range_upper(p);
    if (i == 0) return NULL;
    range* r = &emu.ranges[i - 1];
    return p < r->base + r->size ? r : NULL;
}

static int range_add(uintptr_t base, size_t size, int kind, int device) {
    if (emu.nranges == emu.capranges) {
        size_t cap = emu.capranges ? 2 * emu.capranges : 256;
        range* r = realloc(emu.ranges, cap * sizeof *r);
        if (!r) return -1;
        emu.ranges = r;
        emu.capranges = cap;
    }
    size_t i = range_upper(base);
    memmove(&emu.ranges[i + 1], &emu.ranges[i], (emu.nranges - i) * sizeof(range));
    emu.ranges[i] = (range){base, size, kind, device};
    emu.nranges++;
    return 0;
}

static void range_remove(uintptr_t base) {
    size_t i = range_upper(base);
    if (i == 0 || emu.ranges[i - 1].base != base) return;
    memmove(&emu.ranges[i - 1], &emu.ranges[i], (emu.nranges - i) * sizeof(range));
    emu.nranges--;
}

/* Whether [p, p + n) is inside one range of memory a device can use;
 * *device: the device of device memory, -1 for pinned memory. */
static int usable(uintptr_t p, size_t n, int* device) {
    range* r = range_find(p);
    if (!r || r->kind == R_RESERVED || p + n > r->base + r->size) return 0;
    *device = r->kind == R_DEVICE ? r->device : -1;
    return 1;
}

/* ------------------------------------------------------------- the arena */

static int arena_take(emu_device* d, size_t size, size_t align, uintptr_t* out) {
    for (size_t i = 0; i < d->nfree; i++) {
        free_range* f = &d->free[i];
        uintptr_t start = round_up(f->base, align);
        if (start + size > f->base + f->size) continue;
        uintptr_t end = start + size, fend = f->base + f->size;
        if (start > f->base) {
            /* keep the head piece, and the tail piece after it */
            if (end < fend) {
                if (d->nfree == d->capfree) {
                    size_t cap = d->capfree * 2;
                    free_range* nf = realloc(d->free, cap * sizeof *nf);
                    if (!nf) return -1;
                    d->free = nf;
                    d->capfree = cap;
                    f = &d->free[i];
                }
                memmove(&d->free[i + 2], &d->free[i + 1], (d->nfree - i - 1) * sizeof *f);
                d->free[i + 1] = (free_range){end, fend - end};
                d->nfree++;
            }
            f->size = start - f->base;
        } else if (end < fend) {
            f->base = end;
            f->size = fend - end;
        } else {
            memmove(&d->free[i], &d->free[i + 1], (d->nfree - i - 1) * sizeof *f);
            d->nfree--;
        }
        *out = start;
        return 0;
    }
    return -1;
}

static void arena_give(emu_device* d, uintptr_t base, size_t size) {
    size_t i = 0;
    while (i < d->nfree && d->free[i].base < base) i++;
    int merge_prev = i > 0 && d->free[i - 1].base + d->free[i - 1].size == base;
    int merge_next = i < d->nfree && base + size == d->free[i].base;
    if (merge_prev && merge_next) {
        d->free[i - 1].size += size + d->free[i].size;
        memmove(&d->free[i], &d->free[i + 1], (d->nfree - i - 1) * sizeof(free_range));
        d->nfree--;
    } else if (merge_prev) {
        d->free[i - 1].size += size;
    } else if (merge_next) {
        d->free[i].base = base;
        d->free[i].size += size;
    } else {
        if (d->nfree == d->capfree) {
            size_t cap = d->capfree * 2;
            free_range* nf = realloc(d->free, cap * sizeof *nf);
            if (!nf) return; /* leaks address space only */
            d->free = nf;
            d->capfree = cap;
        }
        memmove(&d->free[i + 1], &d->free[i], (d->nfree - i) * sizeof(free_range));
        d->free[i] = (free_range){base, size};
        d->nfree++;
    }
}

/* Make [p, p + n) of the arena inaccessible again and give its pages back. */
static void arena_unmap(uintptr_t p, size_t n) {
    mmap((void*)p, n, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

static int arena_map(uintptr_t p, size_t n) {
    void* r = mmap((void*)p, n, PROT_READ | PROT_WRITE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return r == MAP_FAILED ? -1 : 0;
}

/* Fill fresh memory with 0xff bytes (NaN for floats, -1 for integers), so
 * that reading what no kernel wrote does not read as zeros; not for big
 * blocks (whose pages would all be touched). */
static void poison(void* p, size_t n) {
    if (n <= (64u << 20)) memset(p, 0xff, n);
}

/* ------------------------------------------------------------------ init */

static void init_once(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&emu.lock, &a);
    emu.page = (size_t)sysconf(_SC_PAGESIZE);
    emu.ndev = (int)env_long("EMBER_CUDA_EMU_DEVICES", 1);
    if (emu.ndev < 0) emu.ndev = 0;
    if (emu.ndev > 8) emu.ndev = 8;
    emu.cc = (int)env_long("EMBER_CUDA_EMU_CC", 90);
    emu.total_memory = (size_t)env_long("EMBER_CUDA_EMU_MEMORY_MB", 4096) << 20;
    emu.stack_size = round_up((size_t)env_long("EMBER_CUDA_EMU_STACK_KB", 64) << 10, emu.page);
    emu.timeout_s = (double)env_long("EMBER_CUDA_EMU_TIMEOUT_S", 300);
    for (int i = 0; i < emu.ndev; i++) {
        emu_device* d = &emu.dev[i];
        d->ordinal = i;
        d->ctx.dev = d;
        /* address space for allocations and for expandable segments'
         * reservations (256 GiB each) */
        size_t sizes[] = {(size_t)1 << 40, (size_t)1 << 39, (size_t)1 << 37, (size_t)1 << 35};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && !d->arena; k++) {
            void* p = mmap(NULL, sizes[k], PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
            if (p != MAP_FAILED) {
                d->arena = p;
                d->arena_size = sizes[k];
            }
        }
        if (!d->arena) {
            emu.ndev = i;
            break;
        }
        d->capfree = 64;
        d->free = malloc(d->capfree * sizeof *d->free);
        /* keep the first page unused: no device pointer is the arena's start */
        d->free[0] = (free_range){(uintptr_t)d->arena + emu.page, d->arena_size - emu.page};
        d->nfree = 1;
        d->legacy = calloc(1, sizeof(emu_stream));
        d->legacy->dev = d;
        d->legacy->legacy = 1;
    }
}

static int ready(void) {
    if (!emu.initialised) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called");
    return CUDA_SUCCESS;
}

/* The current context's device, or an error. */
static int current(emu_device** d) {
    int st = ready();
    if (st) return st;
    if (!tls_ctx) return fail(CUDA_ERROR_INVALID_CONTEXT, "no context is current on this thread");
    *d = tls_ctx->dev;
    return CUDA_SUCCESS;
}

static int sticky(emu_device* d) {
    if (!d->sticky) return CUDA_SUCCESS;
    return fail(d->sticky, "%s", d->sticky_msg);
}

EXPORT int cuInit(unsigned flags) {
    if (flags) return fail(CUDA_ERROR_INVALID_VALUE, "cuInit flags must be 0");
    pthread_once(&emu.once, init_once);
    emu.initialised = 1;
    return emu.ndev > 0 ? CUDA_SUCCESS : fail(CUDA_ERROR_NO_DEVICE, "EMBER_CUDA_EMU_DEVICES=0");
}

EXPORT int cuDriverGetVersion(int* v) {
    *v = 13000;
    return CUDA_SUCCESS;
}

EXPORT int cuDeviceGetCount(int* n) {
    int st = ready();
    if (st) return st;
    *n = emu.ndev;
    return CUDA_SUCCESS;
}

EXPORT int cuDeviceGet(int* d, int ordinal) {
    int st = ready();
    if (st) return st;
    if (ordinal < 0 || ordinal >= emu.ndev)
        return fail(CUDA_ERROR_INVALID_DEVICE, "device %d of %d", ordinal, emu.ndev);
    *d = ordinal;
    return CUDA_SUCCESS;
}

static int device_of(int ordinal, emu_device** d) {
    int st = ready();
    if (st) return st;
    if (ordinal < 0 || ordinal >= emu.ndev)
        return fail(CUDA_ERROR_INVALID_DEVICE, "device %d of %d", ordinal, emu.ndev);
    *d = &emu.dev[ordinal];
    return CUDA_SUCCESS;
}

EXPORT int cuDeviceGetName(char* name, int len, int ordinal) {
    emu_device* d = NULL;
    int st = device_of(ordinal, &d);
    if (st) return st;
    snprintf(name, (size_t)len, "ember CUDA emulator (sm_%d, on the CPU)", emu.cc);
    return CUDA_SUCCESS;
}

static int optin_shared(void) { return emu.cc >= 90 ? 232448 : emu.cc >= 80 ? 166912 : 101376; }

EXPORT int cuDeviceGetAttribute(int* v, int attr, int ordinal) {
    emu_device* d = NULL;
    int st = device_of(ordinal, &d);
    if (st) return st;
    switch (attr) {
        case 1: *v = 1024; break;                 /* MAX_THREADS_PER_BLOCK */
        case 2: *v = 1024; break;                 /* MAX_BLOCK_DIM_X */
        case 3: *v = 1024; break;                 /* MAX_BLOCK_DIM_Y */
        case 4: *v = 64; break;                   /* MAX_BLOCK_DIM_Z */
        case 5: *v = 2147483647; break;           /* MAX_GRID_DIM_X */
        case 6: *v = 65535; break;                /* MAX_GRID_DIM_Y */
        case 7: *v = 65535; break;                /* MAX_GRID_DIM_Z */
        case 8: *v = 49152; break;                /* MAX_SHARED_MEMORY_PER_BLOCK */
        case 9: *v = 65536; break;                /* TOTAL_CONSTANT_MEMORY */
        case 10: *v = 32; break;                  /* WARP_SIZE */
        case 11: *v = 2147483647; break;          /* MAX_PITCH */
        case 12: *v = 65536; break;               /* MAX_REGISTERS_PER_BLOCK */
        case 13: *v = 1000000; break;             /* CLOCK_RATE (kHz) */
        case 14: *v = 512; break;                 /* TEXTURE_ALIGNMENT */
        case 15: *v = 1; break;                   /* GPU_OVERLAP */
        case 16: *v = 16; break;                  /* MULTIPROCESSOR_COUNT */
        case 17: *v = 0; break;                   /* KERNEL_EXEC_TIMEOUT */
        case 18: *v = 0; break;                   /* INTEGRATED */
        case 19: *v = 1; break;                   /* CAN_MAP_HOST_MEMORY */
        case 20: *v = 0; break;                   /* COMPUTE_MODE */
        case 31: *v = 1; break;                   /* CONCURRENT_KERNELS */
        case 32: *v = 0; break;                   /* ECC_ENABLED */
        case 33: *v = ordinal + 1; break;         /* PCI_BUS_ID */
        case 34: *v = 0; break;                   /* PCI_DEVICE_ID */
        case 36: *v = 1000000; break;             /* MEMORY_CLOCK_RATE */
        case 37: *v = 256; break;                 /* GLOBAL_MEMORY_BUS_WIDTH */
        case 38: *v = 4 << 20; break;             /* L2_CACHE_SIZE */
        case 39: *v = 2048; break;                /* MAX_THREADS_PER_MULTIPROCESSOR */
        case 40: *v = 2; break;                   /* ASYNC_ENGINE_COUNT */
        case 41: *v = 1; break;                   /* UNIFIED_ADDRESSING */
        case 50: *v = 0; break;                   /* PCI_DOMAIN_ID */
        case 75: *v = emu.cc / 10; break;         /* COMPUTE_CAPABILITY_MAJOR */
        case 76: *v = emu.cc % 10; break;         /* COMPUTE_CAPABILITY_MINOR */
        case 78: *v = 1; break;                   /* STREAM_PRIORITIES_SUPPORTED */
        case 81: *v = optin_shared() + 1024; break; /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
        case 82: *v = 65536; break;               /* MAX_REGISTERS_PER_MULTIPROCESSOR */
        case 83: *v = 0; break;                   /* MANAGED_MEMORY (not emulated) */
        case 95: *v = 0; break;                   /* COOPERATIVE_LAUNCH (not emulated) */
        case 97: *v = optin_shared(); break;      /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
        case 102: *v = 1; break;                  /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
        case 106: *v = 32; break;                 /* MAX_BLOCKS_PER_MULTIPROCESSOR */
        default:
            return fail(CUDA_ERROR_INVALID_VALUE, "device attribute %d is not emulated", attr);
    }
    return CUDA_SUCCESS;
}

EXPORT int cuDeviceTotalMem_v2(size_t* bytes, int ordinal) {
    emu_device* d = NULL;
    int st = device_of(ordinal, &d);
    if (st) return st;
    *bytes = emu.total_memory;
    return CUDA_SUCCESS;
}

EXPORT int cuDevicePrimaryCtxRetain(emu_ctx** c, int ordinal) {
    emu_device* d = NULL;
    int st = device_of(ordinal, &d);
    if (st) return st;
    *c = &d->ctx;
    return CUDA_SUCCESS;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int ordinal) {
    emu_device* d = NULL;
    return device_of(ordinal, &d);
}

static int valid_ctx(emu_ctx* c) {
    for (int i = 0; i < emu.ndev; i++)
        if (c == &emu.dev[i].ctx) return 1;
    return 0;
}

EXPORT int cuCtxSetCurrent(emu_ctx* c) {
    int st = ready();
    if (st) return st;
    if (c && !valid_ctx(c)) return fail(CUDA_ERROR_INVALID_CONTEXT, "not a context");
    tls_ctx = c;
    return CUDA_SUCCESS;
}

EXPORT int cuCtxGetCurrent(emu_ctx** c) {
    int st = ready();
    if (st) return st;
    *c = tls_ctx;
    return CUDA_SUCCESS;
}

EXPORT int cuCtxGetDevice(int* ordinal) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    *ordinal = d->ordinal;
    return CUDA_SUCCESS;
}

EXPORT int cuCtxGetStreamPriorityRange(int* least, int* greatest) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
}

EXPORT int cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    lock();
    *free_bytes = d->used < emu.total_memory ? emu.total_memory - d->used : 0;
    *total = emu.total_memory;
    unlock();
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------- device memory */

/* Allocate device memory on `d` (lock held): rounded to pages, followed by an
 * inaccessible page. */
static int device_alloc(emu_device* d, size_t size, void** out) {
    size_t n = round_up(size ? size : 1, emu.page);
    if (d->used + n > emu.total_memory)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuda:%d has %zu of %zu bytes in use; %zu more asked",
                    d->ordinal, d->used, emu.total_memory, size);
    uintptr_t p;
    if (arena_take(d, n + emu.page, 512, &p) != 0)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuda:%d: the emulator's address space is full",
                    d->ordinal);
    if (arena_map(p, n) != 0 || range_add(p, n, R_DEVICE, d->ordinal) != 0) {
        arena_unmap(p, n);
        arena_give(d, p, n + emu.page);
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
    }
    poison((void*)p, n);
    d->used += n;
    *out = (void*)p;
    return CUDA_SUCCESS;
}

static void drain_all(void);

static int device_free(void* ptr) {
    uintptr_t p = (uintptr_t)ptr;
    range* r = range_find(p);
    if (!r || r->kind != R_DEVICE || r->base != p)
        return fail(CUDA_ERROR_INVALID_VALUE, "freeing %p, which is not an allocation", ptr);
    drain_all(); /* cudaFree synchronises: queued work may still use it */
    emu_device* d = &emu.dev[r->device];
    size_t n = r->size;
    range_remove(p);
    arena_unmap(p, n);
    arena_give(d, p, n + emu.page);
    d->used -= n;
    return CUDA_SUCCESS;
}

EXPORT int cuMemAlloc_v2(unsigned long long* dptr, size_t size) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (!size) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc of 0 bytes");
    lock();
    void* p = NULL;
    st = device_alloc(d, size, &p);
    unlock();
    *dptr = (uintptr_t)p;
    return st;
}

EXPORT int cuMemFree_v2(unsigned long long dptr) {
    int st = ready();
    if (st) return st;
    lock();
    st = dptr ? device_free((void*)(uintptr_t)dptr) : CUDA_SUCCESS;
    unlock();
    return st;
}

/* Pinned host memory: page-aligned host memory every device can address. */
static int pinned_alloc(size_t size, void** out) {
    size_t n = round_up(size ? size : 1, emu.page);
    void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "pinned host memory of %zu bytes", size);
    if (range_add((uintptr_t)p, n, R_PINNED, tls_ctx ? tls_ctx->dev->ordinal : 0) != 0) {
        munmap(p, n);
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
    }
    poison(p, n);
    *out = p;
    return CUDA_SUCCESS;
}

static int pinned_free(void* ptr) {
    range* r = range_find((uintptr_t)ptr);
    if (!r || r->kind != R_PINNED || r->base != (uintptr_t)ptr)
        return fail(CUDA_ERROR_INVALID_VALUE, "freeing %p, which is not pinned memory", ptr);
    drain_all(); /* cudaFreeHost synchronises */
    size_t n = r->size;
    range_remove((uintptr_t)ptr);
    munmap(ptr, n);
    return CUDA_SUCCESS;
}

EXPORT int cuMemHostAlloc(void** p, size_t size, unsigned flags) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (flags & ~7u) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc flags %#x", flags);
    lock();
    st = pinned_alloc(size, p);
    unlock();
    return st;
}

EXPORT int cuMemFreeHost(void* p) {
    int st = ready();
    if (st) return st;
    lock();
    st = pinned_free(p);
    unlock();
    return st;
}

EXPORT int cuMemHostGetDevicePointer_v2(unsigned long long* dptr, void* p, unsigned flags) {
    int st = ready();
    if (st) return st;
    if (flags) return fail(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    lock();
    range* r = range_find((uintptr_t)p);
    int ok = r && r->kind == R_PINNED;
    unlock();
    if (!ok) return fail(CUDA_ERROR_INVALID_VALUE, "%p is not pinned host memory", p);
    *dptr = (uintptr_t)p; /* unified addressing: the same address */
    return CUDA_SUCCESS;
}

EXPORT int cuPointerGetAttribute(void* data, int attr, unsigned long long ptr) {
    int st = ready();
    if (st) return st;
    lock();
    range* r = range_find((uintptr_t)ptr);
    range copy = r ? *r : (range){0};
    unlock();
    if (!r || copy.kind == R_RESERVED)
        return fail(CUDA_ERROR_INVALID_VALUE, "%#llx is not memory the driver knows", ptr);
    switch (attr) {
        case 2: /* MEMORY_TYPE */
            *(unsigned*)data = copy.kind == R_DEVICE ? 2u : 1u;
            return CUDA_SUCCESS;
        case 9: /* DEVICE_ORDINAL */
            *(int*)data = copy.device;
            return CUDA_SUCCESS;
        case 3: /* DEVICE_POINTER */
            *(unsigned long long*)data = ptr;
            return CUDA_SUCCESS;
        case 4: /* HOST_POINTER */
            if (copy.kind == R_DEVICE) return fail(CUDA_ERROR_INVALID_VALUE, "device memory");
            *(void**)data = (void*)(uintptr_t)ptr;
            return CUDA_SUCCESS;
        case 12: /* RANGE_START_ADDR */
            *(unsigned long long*)data = copy.base;
            return CUDA_SUCCESS;
        case 13: /* RANGE_SIZE */
            *(size_t*)data = copy.size;
            return CUDA_SUCCESS;
        default:
            return fail(CUDA_ERROR_INVALID_VALUE, "pointer attribute %d is not emulated", attr);
    }
}

/* ------------------------------------------------------- streams and work */

static int valid_stream(emu_stream* s) {
    for (emu_stream* t = emu.streams; t; t = t->next)
        if (t == s) return 1;
    return 0;
}

/* This thread's per-thread default stream of each device (made at first use;
 * it synchronises with the legacy stream, as a blocking stream does). */
static _Thread_local emu_stream* tls_per_thread[8];

/* The stream a handle names on device d (lock held): 0 and
 * CU_STREAM_LEGACY are d's legacy stream, CU_STREAM_PER_THREAD this thread's. */
static int stream_of(void* h, emu_device* d, emu_stream** s) {
    if (!h || h == (void*)1) {
        *s = d->legacy;
        return CUDA_SUCCESS;
    }
    if (h == (void*)2) {
        emu_stream* t = tls_per_thread[d->ordinal];
        if (!t) {
            t = calloc(1, sizeof *t);
            if (!t) return fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
            t->dev = d;
            t->next = emu.streams;
            emu.streams = t;
            tls_per_thread[d->ordinal] = t;
        }
        *s = t;
        return CUDA_SUCCESS;
    }
    emu_stream* t = h;
    if (!valid_stream(t)) return fail(CUDA_ERROR_INVALID_HANDLE, "stream %p does not exist", h);
    *s = t;
    return CUDA_SUCCESS;
}

static emu_op* new_op(int kind) {
    emu_op* op = calloc(1, sizeof *op);
    if (op) op->kind = kind;
    return op;
}

static void push(emu_stream* s, emu_op* op) {
    op->seq = ++s->enqueued;
    if (s->tail) s->tail->next = op;
    else s->head = op;
    s->tail = op;
}

static void push_wait(emu_stream* s, emu_stream* on, uint64_t seq) {
    emu_op* w = new_op(OP_WAIT);
    if (!w) return;
    w->u.w.s = on;
    w->u.w.seq = seq;
    push(s, w);
}

/* Queue `op` on s, after what the legacy stream's rules order it after. */
static void enqueue(emu_stream* s, emu_op* op) {
    emu_device* d = s->dev;
    if (s->legacy) {
        for (emu_stream* t = emu.streams; t; t = t->next)
            if (t->dev == d && !(t->flags & 1u) && t->done < t->enqueued)
                push_wait(s, t, t->enqueued);
    } else if (!(s->flags & 1u) && d->legacy->done < d->legacy->enqueued) {
        push_wait(s, d->legacy, d->legacy->enqueued);
    }
    push(s, op);
}

static void run_op(emu_stream* s, emu_op* op);

/* Run s's queued work up to `seq` (and what it waits for). */
static void run_until(emu_stream* s, uint64_t seq) {
    while (s->done < seq && s->head) {
        emu_op* op = s->head;
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        run_op(s, op);
        s->done = op->seq;
        free(op);
    }
}

static void drain(emu_stream* s) { run_until(s, s->enqueued); }

static void drain_device(emu_device* d) {
    for (emu_stream* t = emu.streams; t; t = t->next)
        if (t->dev == d) drain(t);
    drain(d->legacy);
}

static void drain_all(void) {
    for (int i = 0; i < emu.ndev; i++) drain_device(&emu.dev[i]);
}

EXPORT int cuStreamCreateWithPriority(emu_stream** out, unsigned flags, int priority) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (flags & ~1u) return fail(CUDA_ERROR_INVALID_VALUE, "stream flags %#x", flags);
    emu_stream* s = calloc(1, sizeof *s);
    if (!s) return fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
    s->dev = d;
    s->flags = flags;
    s->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    lock();
    s->next = emu.streams;
    emu.streams = s;
    unlock();
    *out = s;
    return CUDA_SUCCESS;
}

EXPORT int cuStreamCreate(emu_stream** out, unsigned flags) {
    return cuStreamCreateWithPriority(out, flags, 0);
}

EXPORT int cuStreamDestroy_v2(emu_stream* s) {
    int st = ready();
    if (st) return st;
    lock();
    if (!s || !valid_stream(s)) {
        unlock();
        return fail(CUDA_ERROR_INVALID_HANDLE, "destroying stream %p, which does not exist",
                    (void*)s);
    }
    drain(s); /* its work still completes */
    for (emu_stream** p = &emu.streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    /* waits on it are satisfied now */
    for (int i = 0; i < emu.ndev; i++)
        for (emu_op* op = emu.dev[i].legacy->head; op; op = op->next)
            if (op->kind == OP_WAIT && op->u.w.s == s) op->u.w.s = NULL;
    for (emu_stream* t = emu.streams; t; t = t->next)
        for (emu_op* op = t->head; op; op = op->next)
            if (op->kind == OP_WAIT && op->u.w.s == s) op->u.w.s = NULL;
    for (emu_event* e = emu.events; e; e = e->next)
        if (e->stream == s) e->stream = NULL;
    free(s);
    unlock();
    return CUDA_SUCCESS;
}

/* After a wait: the device's sticky error, if a kernel failed. */
static int after_wait(emu_device* d) { return sticky(d); }

EXPORT int cuStreamSynchronize(emu_stream* h) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    lock();
    emu_stream* s;
    st = stream_of(h, d, &s);
    if (!st) {
        drain(s);
        st = after_wait(s->dev);
    }
    unlock();
    return st;
}

EXPORT int cuStreamQuery(emu_stream* h) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    lock();
    emu_stream* s;
    st = stream_of(h, d, &s);
    if (!st) {
        if (s->done < s->enqueued) {
            drain(s); /* progress: the next query finds it done */
            st = s->dev->sticky ? sticky(s->dev) : CUDA_ERROR_NOT_READY;
        } else {
            st = after_wait(s->dev);
        }
    }
    unlock();
    return st;
}

EXPORT int cuCtxSynchronize(void) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    lock();
    drain_device(d);
    st = after_wait(d);
    unlock();
    return st;
}

/* ------------------------------------------------------------------ events */

static int valid_event(emu_event* e) {
    for (emu_event* t = emu.events; t; t = t->next)
        if (t == e) return 1;
    return 0;
}

EXPORT int cuEventCreate(emu_event** out, unsigned flags) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (flags & ~7u) return fail(CUDA_ERROR_INVALID_VALUE, "event flags %#x", flags);
    emu_event* e = calloc(1, sizeof *e);
    if (!e) return fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
    e->dev = d;
    e->flags = flags;
    lock();
    e->next = emu.events;
    emu.events = e;
    unlock();
    *out = e;
    return CUDA_SUCCESS;
}

EXPORT int cuEventDestroy_v2(emu_event* e) {
    int st = ready();
    if (st) return st;
    lock();
    if (!e || !valid_event(e)) {
        unlock();
        return fail(CUDA_ERROR_INVALID_HANDLE, "destroying event %p, which does not exist",
                    (void*)e);
    }
    /* a record still queued finds the event gone (gen 0 never matches) */
    for (emu_event** p = &emu.events; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            break;
        }
    for (int i = 0; i < emu.ndev; i++)
        for (emu_op* op = emu.dev[i].legacy->head; op; op = op->next)
            if (op->kind == OP_RECORD && op->u.r.ev == e) op->u.r.ev = NULL;
    for (emu_stream* t = emu.streams; t; t = t->next)
        for (emu_op* op = t->head; op; op = op->next)
            if (op->kind == OP_RECORD && op->u.r.ev == e) op->u.r.ev = NULL;
    free(e);
    unlock();
    return CUDA_SUCCESS;
}

EXPORT int cuEventRecord(emu_event* e, emu_stream* h) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    lock();
    emu_stream* s = NULL;
    if (!e || !valid_event(e))
        st = fail(CUDA_ERROR_INVALID_HANDLE, "event %p does not exist", (void*)e);
    if (!st) st = stream_of(h, d, &s);
    if (!st && s->dev != e->dev)
        st = fail(CUDA_ERROR_INVALID_HANDLE,
                  "recording an event of cuda:%d on a stream of cuda:%d (they must share a "
                  "context)", e->dev->ordinal, s->dev->ordinal);
    if (!st) {
        emu_op* op = new_op(OP_RECORD);
        if (!op) {
            st = fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
        } else {
            op->u.r.ev = e;
            op->u.r.gen = ++e->gen;
            enqueue(s, op);
            e->stream = s;
            e->seq = op->seq;
            /* nothing queued before it: an idle stream reaches it at once */
            if (s->head == op) drain(s);
        }
    }
    unlock();
    return st;
}

static int event_done(emu_event* e) { return e->gen == 0 || e->completed_gen == e->gen; }

EXPORT int cuEventQuery(emu_event* e) {
    int st = ready();
    if (st) return st;
    lock();
    if (!e || !valid_event(e)) {
        st = fail(CUDA_ERROR_INVALID_HANDLE, "event %p does not exist", (void*)e);
    } else if (event_done(e)) {
        st = after_wait(e->dev);
    } else {
        if (e->stream) run_until(e->stream, e->seq); /* progress */
        st = e->dev->sticky ? sticky(e->dev) : CUDA_ERROR_NOT_READY;
    }
    unlock();
    return st;
}

EXPORT int cuEventSynchronize(emu_event* e) {
    int st = ready();
    if (st) return st;
    lock();
    if (!e || !valid_event(e)) {
        st = fail(CUDA_ERROR_INVALID_HANDLE, "event %p does not exist", (void*)e);
    } else {
        if (!event_done(e) && e->stream) run_until(e->stream, e->seq);
        st = after_wait(e->dev);
    }
    unlock();
    return st;
}

EXPORT int cuStreamWaitEvent(emu_stream* h, emu_event* e, unsigned flags) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (flags) return fail(CUDA_ERROR_INVALID_VALUE, "cuStreamWaitEvent flags must be 0");
    lock();
    emu_stream* s;
    st = stream_of(h, d, &s);
    if (!st && (!e || !valid_event(e)))
        st = fail(CUDA_ERROR_INVALID_HANDLE, "event %p does not exist", (void*)e);
    if (!st && !event_done(e) && e->stream && e->stream != s) {
        /* an event of another device may be waited for (no context check) */
        push_wait(s, e->stream, e->seq);
    }
    unlock();
    return st;
}

static int elapsed(float* ms, emu_event* a, emu_event* b) {
    if (!a || !b || !valid_event(a) || !valid_event(b))
        return fail(CUDA_ERROR_INVALID_HANDLE, "event does not exist");
    if ((a->flags | b->flags) & 2u)
        return fail(CUDA_ERROR_INVALID_HANDLE, "an event was created with timing disabled");
    if (a->gen == 0 || b->gen == 0)
        return fail(CUDA_ERROR_INVALID_HANDLE, "an event has not been recorded");
    if (!event_done(a) || !event_done(b))
        return fail(CUDA_ERROR_NOT_READY, "an event has not completed yet");
    *ms = (float)(b->time_ms - a->time_ms);
    return CUDA_SUCCESS;
}

EXPORT int cuEventElapsedTime_v2(float* ms, emu_event* a, emu_event* b) {
    int st = ready();
    if (st) return st;
    lock();
    st = elapsed(ms, a, b);
    unlock();
    return st;
}

EXPORT int cuEventElapsedTime(float* ms, emu_event* a, emu_event* b) {
    return cuEventElapsedTime_v2(ms, a, b);
}

/* ------------------------------------------------------------------ copies */

enum { MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE };

/* What kind of memory [p, p + n) is; device memory must lie inside one
 * allocation. */
static int classify(uintptr_t p, size_t n, int* kind, const char* what) {
    range* r = range_find(p);
    if (!r) {
        /* an address in an arena that is not allocated memory */
        for (int i = 0; i < emu.ndev; i++) {
            uintptr_t a = (uintptr_t)emu.dev[i].arena;
            if (p >= a && p < a + emu.dev[i].arena_size)
                return fail(CUDA_ERROR_INVALID_VALUE,
                            "%s %#lx is device address space of cuda:%d that is not allocated "
                            "(freed, or never allocated)", what, (unsigned long)p, i);
        }
        *kind = MEM_PAGEABLE;
        return CUDA_SUCCESS;
    }
    if (r->kind == R_RESERVED)
        return fail(CUDA_ERROR_INVALID_VALUE, "%s %#lx is reserved but not mapped", what,
                    (unsigned long)p);
    if (p + n > r->base + r->size)
        return fail(CUDA_ERROR_INVALID_VALUE,
                    "%s [%#lx, +%zu) runs %zu bytes past the end of its allocation of %zu bytes",
                    what, (unsigned long)p, n, (size_t)(p + n - r->base - r->size), r->size);
    *kind = r->kind == R_DEVICE ? MEM_DEVICE : MEM_PINNED;
    return CUDA_SUCCESS;
}

EXPORT int cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t n, emu_stream* h) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (!n) return CUDA_SUCCESS;
    lock();
    emu_stream* s;
    int dk, sk;
    st = stream_of(h, d, &s);
    if (!st) st = sticky(s->dev);
    if (!st) st = classify((uintptr_t)dst, n, &dk, "copy destination");
    if (!st) st = classify((uintptr_t)src, n, &sk, "copy source");
    if (!st) {
        char* dp = (char*)(uintptr_t)dst;
        const char* sp = (const char*)(uintptr_t)src;
        if (dk == MEM_PAGEABLE) {
            /* to pageable memory: returns when the copy is done */
            drain(s);
            st = sticky(s->dev);
            if (!st) memmove(dp, sp, n);
        } else {
            emu_op* op = new_op(OP_COPY);
            char* owned = NULL;
            if (op && sk == MEM_PAGEABLE) { /* staged: the source may change at once */
                owned = malloc(n);
                if (owned) memcpy(owned, sp, n);
            }
            if (!op || (sk == MEM_PAGEABLE && !owned)) {
                free(op);
                st = fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory for a copy of %zu bytes", n);
            } else {
                op->u.c.dst = dp;
                op->u.c.src = owned ? owned : sp;
                op->u.c.owned = owned;
                op->u.c.n = n;
                enqueue(s, op);
            }
        }
    }
    unlock();
    return st;
}

EXPORT int cuMemsetD8Async(unsigned long long dst, unsigned char v, size_t n, emu_stream* h) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    if (!n) return CUDA_SUCCESS;
    lock();
    emu_stream* s;
    int dk;
    st = stream_of(h, d, &s);
    if (!st) st = sticky(s->dev);
    if (!st) st = classify((uintptr_t)dst, n, &dk, "memset destination");
    if (!st && dk == MEM_PAGEABLE)
        st = fail(CUDA_ERROR_INVALID_VALUE, "memset of pageable host memory %#llx", dst);
    if (!st) {
        emu_op* op = new_op(OP_MEMSET);
        if (!op) {
            st = fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
        } else {
            op->u.m.dst = (char*)(uintptr_t)dst;
            op->u.m.value = v;
            op->u.m.n = n;
            enqueue(s, op);
        }
    }
    unlock();
    return st;
}

/* Synchronous copies (the legacy stream, waiting), for tools and tests. */
EXPORT int cuMemcpy(unsigned long long dst, unsigned long long src, size_t n) {
    int st = cuMemcpyAsync(dst, src, n, NULL);
    return st ? st : cuStreamSynchronize(NULL);
}
EXPORT int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t n) {
    return cuMemcpy(dst, (uintptr_t)src, n);
}
EXPORT int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t n) {
    return cuMemcpy((uintptr_t)dst, src, n);
}
EXPORT int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t n) {
    return cuMemcpy(dst, src, n);
}

/* ----------------------------------------------------------------- modules */

static void parse_metadata(emu_module* m, const char* meta) {
    /* "shared=OFF:SIZE,OFF:SIZE,..." (hex offsets in the module) */
    const char* p = strstr(meta, "shared=");
    if (!p) return;
    p += 7;
    unsigned cap = 0;
    while (*p && *p != '\n') {
        char* end;
        unsigned long long off = strtoull(p, &end, 16);
        if (*end != ':') break;
        unsigned long long size = strtoull(end + 1, &end, 10);
        if (m->nshared == cap) {
            cap = cap ? 2 * cap : 8;
            m->shared_off = realloc(m->shared_off, cap * sizeof *m->shared_off);
            m->shared_size = realloc(m->shared_size, cap * sizeof *m->shared_size);
        }
        m->shared_off[m->nshared] = (uintptr_t)off;
        m->shared_size[m->nshared] = (size_t)size;
        m->nshared++;
        m->static_shared += (size_t)size;
        p = *end == ',' ? end + 1 : end;
    }
}

static const ember_emu_api the_api;

EXPORT int cuModuleLoadData(emu_module** out, const void* image) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    const char* text = image;
    size_t plen = strlen(EMBER_EMU_IMAGE_PREFIX);
    if (!text || strncmp(text, EMBER_EMU_IMAGE_PREFIX, plen) != 0)
        return fail(CUDA_ERROR_INVALID_IMAGE,
                    "the emulated driver loads only modules built by the emulation compiler "
                    "(EMBER_CUDA_EMULATE=1), not cubins or PTX");
    emu_module* m = calloc(1, sizeof *m);
    if (!m) return fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
    const char* path = text + plen;
    size_t n = strcspn(path, "\n");
    if (n >= sizeof m->path) n = sizeof m->path - 1;
    memcpy(m->path, path, n);
    m->path[n] = 0;
    parse_metadata(m, path + n);
    m->dev = d;
    m->handle = dlopen(m->path, RTLD_NOW | RTLD_LOCAL);
    if (!m->handle) {
        free(m);
        return fail(CUDA_ERROR_INVALID_IMAGE, "cannot load %s: %s", path, dlerror());
    }
    ember_emu_module_info_fn info =
        (ember_emu_module_info_fn)dlsym(m->handle, EMBER_EMU_MODULE_INFO);
    m->info = info ? info() : NULL;
    if (!m->info || m->info->abi != EMBER_EMU_ABI) {
        free(m);
        return fail(CUDA_ERROR_INVALID_IMAGE, "%s is not a module of this emulator (ABI %d)", path,
                    EMBER_EMU_ABI);
    }
    *m->info->api = &the_api;
    m->fns = calloc(m->info->nkernels ? m->info->nkernels : 1, sizeof *m->fns);
    Dl_info dl;
    if (dladdr((const void*)info, &dl)) m->base = (uintptr_t)dl.dli_fbase;
    for (unsigned i = 0; i < m->info->nkernels; i++) {
        emu_function* f = &m->fns[i];
        f->mod = m;
        f->k = &m->info->kernels[i];
        f->name = dladdr(f->k->fn, &dl) && dl.dli_sname ? dl.dli_sname : f->k->expr;
        f->max_threads = f->k->max_threads ? f->k->max_threads : 1024;
        f->max_dynamic_shared = 49152 - (int)m->static_shared;
    }
    lock();
    m->next = emu.modules;
    emu.modules = m;
    unlock();
    *out = m;
    return CUDA_SUCCESS;
}

static int valid_module(emu_module* m) {
    for (emu_module* t = emu.modules; t; t = t->next)
        if (t == m) return 1;
    return 0;
}

EXPORT int cuModuleGetFunction(emu_function** out, emu_module* m, const char* name) {
    int st = ready();
    if (st) return st;
    lock();
    int ok = m && valid_module(m);
    unlock();
    if (!ok) return fail(CUDA_ERROR_INVALID_HANDLE, "module %p does not exist", (void*)m);
    for (unsigned i = 0; i < m->info->nkernels; i++)
        if (strcmp(m->fns[i].name, name) == 0) {
            *out = &m->fns[i];
            return CUDA_SUCCESS;
        }
    return fail(CUDA_ERROR_NOT_FOUND, "no kernel %s in %s", name, m->path);
}

static int valid_function(emu_function* f) {
    for (emu_module* m = emu.modules; m; m = m->next)
        if (f >= m->fns && f < m->fns + m->info->nkernels) return 1;
    return 0;
}

EXPORT int cuFuncSetAttribute(emu_function* f, int attr, int value) {
    int st = ready();
    if (st) return st;
    lock();
    int ok = f && valid_function(f);
    unlock();
    if (!ok) return fail(CUDA_ERROR_INVALID_HANDLE, "function %p does not exist", (void*)f);
    switch (attr) {
        case 8: /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
            if (value < 0 || (size_t)value + f->mod->static_shared > (size_t)optin_shared())
                return fail(CUDA_ERROR_INVALID_VALUE,
                            "%d bytes of dynamic shared memory (+%zu static) exceed the %d bytes "
                            "a block may opt in to on sm_%d",
                            value, f->mod->static_shared, optin_shared(), emu.cc);
            f->max_dynamic_shared = value;
            return CUDA_SUCCESS;
        case 9: /* PREFERRED_SHARED_MEMORY_CARVEOUT */
            return value >= -1 && value <= 100
                       ? CUDA_SUCCESS
                       : fail(CUDA_ERROR_INVALID_VALUE, "carveout %d", value);
        default:
            return fail(CUDA_ERROR_INVALID_VALUE, "function attribute %d cannot be set", attr);
    }
}

EXPORT int cuFuncGetAttribute(int* v, int attr, emu_function* f) {
    int st = ready();
    if (st) return st;
    lock();
    int ok = f && valid_function(f);
    unlock();
    if (!ok) return fail(CUDA_ERROR_INVALID_HANDLE, "function %p does not exist", (void*)f);
    switch (attr) {
        case 0: *v = (int)f->max_threads; break;          /* MAX_THREADS_PER_BLOCK */
        case 1: *v = (int)f->mod->static_shared; break;   /* SHARED_SIZE_BYTES */
        case 2: *v = 0; break;                            /* CONST_SIZE_BYTES */
        case 3: *v = 0; break;                            /* LOCAL_SIZE_BYTES */
        case 4: *v = 32; break;                           /* NUM_REGS */
        case 5: case 6: *v = emu.cc; break;               /* PTX_VERSION, BINARY_VERSION */
        case 8: *v = f->max_dynamic_shared; break;        /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
        default: return fail(CUDA_ERROR_INVALID_VALUE, "function attribute %d", attr);
    }
    return CUDA_SUCCESS;
}

/* ----------------------------------------------------------------- launch */

EXPORT int cuLaunchKernel(emu_function* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned smem, emu_stream* h, void** params,
                          void** extra) {
    emu_device* d = NULL;
    int st = current(&d);
    if (st) return st;
    lock();
    emu_stream* s = NULL;
    if (!f || !valid_function(f)) st = fail(CUDA_ERROR_INVALID_HANDLE, "function %p", (void*)f);
    if (!st) st = stream_of(h, d, &s);
    if (!st) st = sticky(d);
    if (!st && f->mod->dev != d)
        st = fail(CUDA_ERROR_INVALID_HANDLE,
                  "%s was loaded on cuda:%d but cuda:%d's context is current", f->k->expr,
                  f->mod->dev->ordinal, d->ordinal);
    if (!st && s->dev != d)
        st = fail(CUDA_ERROR_INVALID_HANDLE,
                  "launch on a stream of cuda:%d while cuda:%d is current", s->dev->ordinal,
                  d->ordinal);
    if (!st && extra)
        st = fail(CUDA_ERROR_NOT_SUPPORTED, "launch parameters through `extra` are not emulated");
    if (!st && (!gx || !gy || !gz || !bx || !by || !bz))
        st = fail(CUDA_ERROR_INVALID_VALUE, "%s: a zero grid (%u,%u,%u) or block (%u,%u,%u) dim",
                  f->k->expr, gx, gy, gz, bx, by, bz);
    if (!st && (gx > 2147483647u || gy > 65535u || gz > 65535u))
        st = fail(CUDA_ERROR_INVALID_VALUE, "%s: grid (%u,%u,%u) exceeds (2^31-1, 65535, 65535)",
                  f->k->expr, gx, gy, gz);
    if (!st && (bx > 1024u || by > 1024u || bz > 64u || (unsigned long long)bx * by * bz > 1024u))
        st = fail(CUDA_ERROR_INVALID_VALUE,
                  "%s: block (%u,%u,%u) exceeds 1024 threads or (1024, 1024, 64)", f->k->expr, bx,
                  by, bz);
    if (!st && (unsigned long long)bx * by * bz > f->max_threads)
        st = fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                  "%s: block of %llu threads, but its __launch_bounds__ allow %u", f->k->expr,
                  (unsigned long long)bx * by * bz, f->max_threads);
    if (!st && (int)smem > f->max_dynamic_shared)
        st = fail(CUDA_ERROR_INVALID_VALUE,
                  "%s: %u bytes of dynamic shared memory, but %d are allowed (%zu static; more "
                  "needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES))",
                  f->k->expr, smem, f->max_dynamic_shared, f->mod->static_shared);
    const ember_emu_kernel* k = st ? NULL : f->k;
    if (!st && k->nparams && !params)
        st = fail(CUDA_ERROR_INVALID_VALUE, "%s takes %u parameters; kernelParams is NULL",
                  k->expr, k->nparams);
    /* pointer parameters: device memory of this device, pinned memory, or null */
    for (unsigned i = 0; !st && i < (k ? k->nparams : 0); i++) {
        if (!k->is_ptr[i]) continue;
        uintptr_t p;
        memcpy(&p, params[i], sizeof p);
        int dev;
        if (!p) continue;
        if (!usable(p, 1, &dev)) {
            int kind = MEM_PAGEABLE;
            int cst = classify(p, 1, &kind, "pointer");
            char why[sizeof last_detail];
            snprintf(why, sizeof why, "%s", last_detail);
            if (cst) st = fail(CUDA_ERROR_ILLEGAL_ADDRESS, "%s: parameter %u: %s", k->expr, i, why);
            else
                st = fail(CUDA_ERROR_ILLEGAL_ADDRESS,
                          "%s: parameter %u is %#lx, host memory a GPU cannot address (a CPU "
                          "tensor's data passed to a CUDA kernel?)", k->expr, i, (unsigned long)p);
        } else if (dev >= 0 && dev != d->ordinal) {
            st = fail(CUDA_ERROR_ILLEGAL_ADDRESS,
                      "%s: parameter %u is memory of cuda:%d, launched on cuda:%d (no peer access)",
                      k->expr, i, dev, d->ordinal);
        }
    }
    if (!st) {
        size_t total = 0;
        for (unsigned i = 0; i < k->nparams; i++)
            total = round_up(total, k->aligns[i]) + k->sizes[i];
        emu_op* op = new_op(OP_KERNEL);
        char* buf = malloc(total + 16);
        void** args = malloc((k->nparams + 1) * sizeof(void*));
        if (!op || !buf || !args) {
            free(op);
            free(buf);
            free(args);
            st = fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
        } else {
            size_t off = 0;
            char* base = (char*)round_up((uintptr_t)buf, 16);
            for (unsigned i = 0; i < k->nparams; i++) {
                off = round_up(off, k->aligns[i]);
                memcpy(base + off, params[i], k->sizes[i]);
                args[i] = base + off;
                off += k->sizes[i];
            }
            op->u.k.fn = f;
            op->u.k.grid[0] = gx, op->u.k.grid[1] = gy, op->u.k.grid[2] = gz;
            op->u.k.block[0] = bx, op->u.k.block[1] = by, op->u.k.block[2] = bz;
            op->u.k.smem = smem;
            op->u.k.args = args;
            op->u.k.argbuf = buf;
            enqueue(s, op);
        }
    }
    unlock();
    return st;
}

/* ----------------------------------------------------------------- fibers */

#ifndef EMU_UCONTEXT
/* Save the callee-saved registers and the FP control words on the current
 * stack, store its pointer in *save, switch to `to` and restore there. */
void ember_emu_switch(void** save, void* to);
__asm__(".text\n"
        ".p2align 4\n"
        ".type ember_emu_switch,@function\n"
        "ember_emu_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size ember_emu_switch, .-ember_emu_switch\n");
#endif

typedef struct stack {
    char* base; /* lowest address: a guard page, then the stack */
    size_t size;
    struct stack* next;
} stack;

enum { T_NEW, T_READY, T_WAIT_BAR, T_WAIT_WARP, T_WAIT_ACTIVE, T_DONE };

typedef struct thread {
    ember_emu_thread pub; /* first: what the module sees */
    int state;
    uint64_t wait_gen;
    int coll_done;
    unsigned long long* out;
    unsigned active;
    stack* stk;
#ifdef EMU_UCONTEXT
    ucontext_t uc;
#else
    void* sp;
#endif
} thread;

typedef struct warp {
    unsigned arrived, exited, exists;
    unsigned mask_of[32];
    int kind_of[32];
    unsigned long long val[32];
} warp;

/* The launch being run (one at a time, under the lock). */
static struct exec {
    emu_function* fn;
    emu_device* dev;
    const ember_emu_kernel* k;
    void** args;
    unsigned n; /* threads per block */
    unsigned bdim[3], gdim[3], bidx[3];
    thread* threads;
    unsigned nthreads_cap;
    warp* warps;
    thread* cur;
    uint64_t bar_gen;
    unsigned bar_arrived, exited;
    int bar_acc, bar_result, bar_op;
    int error;
    char msg[700];
    double deadline;
    stack* free_stacks;
    int running;
#ifdef EMU_UCONTEXT
    ucontext_t sched;
#else
    void* sched_sp;
#endif
    sigjmp_buf recover;
    pthread_t executor;
} X;

static stack* stack_get(void) {
    stack* s = X.free_stacks;
    if (s) {
        X.free_stacks = s->next;
        return s;
    }
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->size = emu.stack_size + emu.page;
    s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                   -1, 0);
    if (s->base == MAP_FAILED) {
        free(s);
        return NULL;
    }
    mprotect(s->base, emu.page, PROT_NONE); /* overflow faults */
    return s;
}

static void stack_put(stack* s) {
    s->next = X.free_stacks;
    X.free_stacks = s;
}

static void to_scheduler(thread* t) {
#ifdef EMU_UCONTEXT
    swapcontext(&t->uc, &X.sched);
#else
    ember_emu_switch(&t->sp, X.sched_sp);
#endif
}

static void resume(thread* t) {
    X.cur = t;
    *X.fn->mod->info->current = &t->pub;
#ifdef EMU_UCONTEXT
    swapcontext(&X.sched, &t->uc);
#else
    ember_emu_switch(&X.sched_sp, t->sp);
#endif
}

static void kernel_error(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void kernel_error(int code, const char* fmt, ...) {
    if (X.error) return;
    X.error = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(X.msg, sizeof X.msg, fmt, ap);
    va_end(ap);
}

static void thread_exit(thread* t);

static void fiber_main(void) {
    thread* t = X.cur;
    t->state = T_READY;
    X.k->run(X.args);
    thread_exit(t);
    to_scheduler(t); /* never resumed */
    abort();
}

static int start(thread* t) {
    t->stk = stack_get();
    if (!t->stk) return -1;
    char* top = t->stk->base + t->stk->size;
#ifdef EMU_UCONTEXT
    getcontext(&t->uc);
    t->uc.uc_stack.ss_sp = t->stk->base + emu.page;
    t->uc.uc_stack.ss_size = emu.stack_size;
    t->uc.uc_link = NULL;
    makecontext(&t->uc, fiber_main, 0);
    (void)top;
#else
    uint64_t* sp = (uint64_t*)((uintptr_t)top & ~(uintptr_t)15);
    *--sp = 0;                         /* the fake return address of fiber_main */
    *--sp = (uint64_t)(uintptr_t)fiber_main; /* ret goes there */
    for (int i = 0; i < 6; i++) *--sp = 0; /* rbp rbx r12 r13 r14 r15 */
    uint32_t mxcsr;
    uint16_t cw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    *--sp = (uint64_t)mxcsr | ((uint64_t)cw << 32);
    t->sp = sp;
#endif
    return 0;
}

/* ------------------------------------------------- the driver's services */

static thread* self(void) { return X.cur; }

static void trap_now(thread* t) {
    t->state = T_DONE;
    to_scheduler(t);
    abort(); /* never resumed */
}

static void api_trap(const char* why) {
    thread* t = self();
    kernel_error(CUDA_ERROR_LAUNCH_FAILED, "%s", why);
    trap_now(t);
}

static void barrier_complete(void) {
    X.bar_gen++;
    X.bar_arrived = 0;
    X.bar_result = X.bar_acc;
}

static void barrier_wait(thread* t) {
    X.bar_arrived++;
    if (X.bar_arrived + X.exited == X.n) {
        barrier_complete();
        return;
    }
    t->wait_gen = X.bar_gen;
    t->state = T_WAIT_BAR;
    to_scheduler(t);
}

static void api_syncthreads(void) {
    thread* t = self();
    if (X.bar_arrived == 0) X.bar_op = -1, X.bar_acc = 0;
    barrier_wait(t);
}

static int api_syncthreads_reduce(int op, int pred) {
    thread* t = self();
    if (X.bar_arrived == 0) {
        X.bar_op = op;
        X.bar_acc = op == EMBER_EMU_BLOCK_AND ? 1 : 0;
    } else if (X.bar_op != op) {
        kernel_error(CUDA_ERROR_LAUNCH_FAILED,
                     "thread (%u,%u,%u) called a different __syncthreads_* than the threads "
                     "already waiting", t->pub.thread_idx.x, t->pub.thread_idx.y,
                     t->pub.thread_idx.z);
        trap_now(t);
    }
    if (op == EMBER_EMU_BLOCK_COUNT) X.bar_acc += pred != 0;
    else if (op == EMBER_EMU_BLOCK_AND) X.bar_acc = X.bar_acc && pred;
    else X.bar_acc = X.bar_acc || pred;
    barrier_wait(t);
    return X.bar_result;
}

static const char* kind_name(int kind) {
    switch (kind) {
        case EMBER_EMU_WARP_SYNC: return "__syncwarp";
        case EMBER_EMU_WARP_SHFL: return "__shfl*_sync";
        case EMBER_EMU_WARP_VOTE: return "a vote (__ballot/__any/__all_sync)";
        case EMBER_EMU_WARP_MATCH: return "__match_*_sync";
        default: return "__reduce_*_sync";
    }
}

static void collective_fail(thread* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void collective_fail(thread* t, const char* fmt, ...) {
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    kernel_error(CUDA_ERROR_LAUNCH_FAILED, "warp %u lane %u (thread (%u,%u,%u)): %s",
                 t->pub.linear / 32, t->pub.lane, t->pub.thread_idx.x, t->pub.thread_idx.y,
                 t->pub.thread_idx.z, buf);
    trap_now(t);
}

static void api_warp_collective(unsigned mask, int kind, unsigned long long value,
                                unsigned long long* out) {
    thread* t = self();
    unsigned lane = t->pub.lane;
    warp* w = &X.warps[t->pub.linear / 32];
    if (!((mask >> lane) & 1u))
        collective_fail(t, "%s with mask %#x, which leaves out the calling lane", kind_name(kind),
                        mask);
    if (mask & ~w->exists)
        collective_fail(t, "%s with mask %#x names lanes that are not in the block (%#x exist)",
                        kind_name(kind), mask, w->exists);
    if (mask & w->exited)
        collective_fail(t, "%s with mask %#x names lanes that have exited (%#x)", kind_name(kind),
                        mask, mask & w->exited);
    for (unsigned j = 0; j < 32; j++)
        if (((w->arrived & mask) >> j) & 1u)
            if (w->mask_of[j] != mask || w->kind_of[j] != kind)
                collective_fail(t,
                                "%s with mask %#x while lane %u waits in %s with mask %#x (lanes "
                                "of one collective must agree)",
                                kind_name(kind), mask, j, kind_name(w->kind_of[j]), w->mask_of[j]);
    w->val[lane] = value;
    w->mask_of[lane] = mask;
    w->kind_of[lane] = kind;
    w->arrived |= 1u << lane;
    t->out = out;
    t->coll_done = 0;
    if ((w->arrived & mask) == mask) {
        unsigned base = t->pub.linear - lane;
        for (unsigned j = 0; j < 32; j++) {
            if (!((mask >> j) & 1u)) continue;
            unsigned long long* o = X.threads[base + j].out;
            for (unsigned i = 0; i < 32; i++) o[i] = ((mask >> i) & 1u) ? w->val[i] : 0;
            X.threads[base + j].coll_done = 1;
        }
        w->arrived &= ~mask;
        return;
    }
    t->state = T_WAIT_WARP;
    to_scheduler(t);
}

static unsigned api_activemask(void) {
    thread* t = self();
    t->state = T_WAIT_ACTIVE;
    to_scheduler(t);
    return t->active;
}

static void api_yield(void) {
    thread* t = self();
    t->state = T_READY;
    to_scheduler(t);
}

static long long api_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const ember_emu_api the_api = {
    EMBER_EMU_ABI,  api_syncthreads, api_syncthreads_reduce, api_warp_collective,
    api_activemask, api_yield,       api_trap,               api_clock,
};

static void thread_exit(thread* t) {
    t->state = T_DONE;
    X.exited++;
    warp* w = &X.warps[t->pub.linear / 32];
    w->exited |= 1u << t->pub.lane;
    for (unsigned j = 0; j < 32; j++)
        if (((w->arrived >> j) & 1u) && ((w->mask_of[j] >> t->pub.lane) & 1u)) {
            kernel_error(CUDA_ERROR_LAUNCH_FAILED,
                         "warp %u lane %u exited while lane %u waits for it in %s (mask %#x)",
                         t->pub.linear / 32, t->pub.lane, j, kind_name(w->kind_of[j]),
                         w->mask_of[j]);
            return;
        }
    if (X.bar_arrived && X.bar_arrived + X.exited == X.n) barrier_complete();
}

/* ----------------------------------------------------------- faults */

static struct sigaction old_actions[NSIG];
static volatile sig_atomic_t handlers_installed;
static _Thread_local int altstack_set;

static void on_fault(int sig, siginfo_t* info, void* uctx) {
    if (X.running && pthread_equal(pthread_self(), X.executor)) {
        thread* t = X.cur;
        const char* what = sig == SIGFPE ? "an arithmetic trap (integer division by zero or "
                                           "INT_MIN / -1: undefined on a GPU, a trap on the host)"
                           : sig == SIGILL ? "an illegal instruction"
                                           : "an access to memory it may not use";
        int code = sig == SIGFPE || sig == SIGILL ? CUDA_ERROR_LAUNCH_FAILED
                                                  : CUDA_ERROR_ILLEGAL_ADDRESS;
        uintptr_t a = (uintptr_t)info->si_addr;
        const char* where = "";
        if (t && t->stk && a >= (uintptr_t)t->stk->base && a < (uintptr_t)t->stk->base + emu.page)
            where = " (the emulated thread's stack overflowed: raise EMBER_CUDA_EMU_STACK_KB)";
        kernel_error(code, "thread (%u,%u,%u) of block (%u,%u,%u): %s at %#lx%s",
                     t ? t->pub.thread_idx.x : 0, t ? t->pub.thread_idx.y : 0,
                     t ? t->pub.thread_idx.z : 0, X.bidx[0], X.bidx[1], X.bidx[2], what,
                     (unsigned long)a, where);
        siglongjmp(X.recover, 1);
    }
    /* not ours: the previous handler, or the default action */
    struct sigaction* old = &old_actions[sig];
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) {
            old->sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(void) {
    if (!altstack_set) {
        stack_t ss;
        ss.ss_size = 1 << 16;
        ss.ss_sp = malloc(ss.ss_size);
        ss.ss_flags = 0;
        stack_t old;
        /* keep an alternate stack the process already has (Python's faulthandler) */
        if (ss.ss_sp && sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE))
            sigaltstack(&ss, NULL);
        else
            free(ss.ss_sp);
        altstack_set = 1;
    }
    if (handlers_installed) return;
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, &old_actions[sigs[i]]);
    }
    handlers_installed = 1;
}

/* ------------------------------------------------------------ the scheduler */

static const char* state_name(int s) {
    switch (s) {
        case T_WAIT_BAR: return "__syncthreads";
        case T_WAIT_WARP: return "a warp collective";
        case T_WAIT_ACTIVE: return "__activemask";
        default: return "?";
    }
}

static void describe_deadlock(void) {
    char buf[600];
    size_t n = 0;
    unsigned shown = 0;
    for (unsigned i = 0; i < X.n && shown < 6; i++) {
        thread* t = &X.threads[i];
        if (t->state == T_DONE) continue;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s thread %u waits in %s", shown ? ";" : "",
                              i, state_name(t->state));
        if (n >= sizeof buf) break;
        shown++;
    }
    kernel_error(CUDA_ERROR_LAUNCH_FAILED,
                 "block (%u,%u,%u) deadlocked (a barrier or collective that not all the threads "
                 "it needs reach, e.g. __syncthreads in divergent code): %s%s",
                 X.bidx[0], X.bidx[1], X.bidx[2], buf, shown >= 6 ? "; ..." : "");
}

static void run_block(void) {
    unsigned n = X.n;
    X.bar_gen = 0;
    X.bar_arrived = X.exited = 0;
    memset(X.warps, 0, sizeof(warp) * ((n + 31) / 32));
    for (unsigned i = 0; i < n; i++) {
        thread* t = &X.threads[i];
        memset(t, 0, sizeof *t);
        t->pub.thread_idx.x = i % X.bdim[0];
        t->pub.thread_idx.y = (i / X.bdim[0]) % X.bdim[1];
        t->pub.thread_idx.z = i / (X.bdim[0] * X.bdim[1]);
        t->pub.block_idx = (ember_emu_u3){X.bidx[0], X.bidx[1], X.bidx[2]};
        t->pub.block_dim = (ember_emu_u3){X.bdim[0], X.bdim[1], X.bdim[2]};
        t->pub.grid_dim = (ember_emu_u3){X.gdim[0], X.gdim[1], X.gdim[2]};
        t->pub.linear = i;
        t->pub.lane = i % 32;
        X.warps[i / 32].exists |= 1u << (i % 32);
        t->state = T_NEW;
    }
    /* shared memory starts undefined */
    const emu_module* m = X.fn->mod;
    for (unsigned i = 0; i < m->nshared; i++)
        memset((char*)(m->base + m->shared_off[i]), 0xff, m->shared_size[i]);
    unsigned long spins = 0;
    for (;;) {
        int progress = 0, waiting = 0, ready_only = 1;
        for (unsigned i = 0; i < n && !X.error; i++) {
            thread* t = &X.threads[i];
            int go = 0;
            switch (t->state) {
                case T_NEW:
                    if (start(t) != 0) {
                        kernel_error(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                     "no memory for the stack of emulated thread %u", i);
                        break;
                    }
                    go = 1;
                    ready_only = 0;
                    break;
                case T_READY: go = 1; break;
                case T_WAIT_BAR:
                    go = X.bar_gen != t->wait_gen;
                    ready_only &= !go;
                    break;
                case T_WAIT_WARP:
                    go = t->coll_done;
                    ready_only &= !go;
                    break;
                case T_WAIT_ACTIVE: waiting = 1; break;
                default: break;
            }
            if (!go) continue;
            if (t->state != T_NEW) t->state = T_READY;
            progress = 1;
            resume(t);
            if (t->state == T_DONE && t->stk) {
                stack_put(t->stk);
                t->stk = NULL;
            }
        }
        if (X.error) return;
        if (X.exited == n) return;
        if (progress) {
            /* only threads that yield (spin) run: give up some time */
            if (ready_only && ++spins % 4096 == 0 && now_ms() > X.deadline) {
                kernel_error(CUDA_ERROR_LAUNCH_TIMEOUT,
                             "block (%u,%u,%u) still spins after EMBER_CUDA_EMU_TIMEOUT_S=%g s",
                             X.bidx[0], X.bidx[1], X.bidx[2], emu.timeout_s);
                return;
            }
            continue;
        }
        if (waiting) {
            /* __activemask: the lanes of each warp that reached it together */
            for (unsigned i = 0; i < n; i++)
                if (X.threads[i].state == T_WAIT_ACTIVE) {
                    unsigned base = i - i % 32, mask = 0;
                    for (unsigned j = 0; j < 32 && base + j < n; j++)
                        mask |= (X.threads[base + j].state == T_WAIT_ACTIVE ? 1u : 0u) << j;
                    for (unsigned j = 0; j < 32 && base + j < n; j++)
                        if (X.threads[base + j].state == T_WAIT_ACTIVE) {
                            X.threads[base + j].active = mask;
                            X.threads[base + j].state = T_READY;
                        }
                }
            continue;
        }
        describe_deadlock();
        return;
    }
}

static void release_block_stacks(void) {
    for (unsigned i = 0; i < X.n; i++)
        if (X.threads[i].stk) {
            stack_put(X.threads[i].stk);
            X.threads[i].stk = NULL;
        }
}

/* A fault in a kernel comes back here (on_fault) and ends the block. */
static void run_block_guarded(void) {
    if (sigsetjmp(X.recover, 1) == 0) run_block();
    release_block_stacks();
}

static void run_kernel(emu_device* d, emu_op* op) {
    emu_function* f = op->u.k.fn;
    unsigned* g = op->u.k.grid;
    unsigned* b = op->u.k.block;
    unsigned n = b[0] * b[1] * b[2];
    if (X.nthreads_cap < n) {
        free(X.threads);
        free(X.warps);
        X.threads = calloc(1024, sizeof(thread));
        X.warps = calloc(32, sizeof(warp));
        X.nthreads_cap = 1024;
    }
    X.fn = f;
    X.dev = d;
    X.k = f->k;
    X.args = op->u.k.args;
    X.n = n;
    memcpy(X.bdim, b, sizeof X.bdim);
    memcpy(X.gdim, g, sizeof X.gdim);
    X.error = 0;
    X.msg[0] = 0;
    X.deadline = now_ms() + emu.timeout_s * 1e3;
    X.executor = pthread_self();
    install_handlers();
    X.running = 1;
    for (unsigned z = 0; z < g[2] && !X.error; z++)
        for (unsigned y = 0; y < g[1] && !X.error; y++)
            for (unsigned x = 0; x < g[0] && !X.error; x++) {
                X.bidx[0] = x, X.bidx[1] = y, X.bidx[2] = z;
                if (op->u.k.smem) memset(f->mod->info->dynamic_shared, 0xff, op->u.k.smem);
                run_block_guarded();
            }
    X.running = 0;
    X.cur = NULL;
    if (X.error) {
        d->sticky = X.error;
        snprintf(d->sticky_msg, sizeof d->sticky_msg,
                 "kernel %s, grid (%u,%u,%u), block (%u,%u,%u): %s", f->k->expr, g[0], g[1], g[2],
                 b[0], b[1], b[2], X.msg);
        fprintf(stderr, "ember CUDA emulator: cuda:%d: %s\n", d->ordinal, d->sticky_msg);
    }
}

static void run_gemm(const emu_gemm* g);

static void run_op(emu_stream* s, emu_op* op) {
    emu_device* d = s->dev;
    switch (op->kind) {
        case OP_KERNEL:
            if (!d->sticky) run_kernel(d, op);
            free(op->u.k.args);
            free(op->u.k.argbuf);
            break;
        case OP_COPY:
            if (!d->sticky) memmove(op->u.c.dst, op->u.c.src, op->u.c.n);
            free(op->u.c.owned);
            break;
        case OP_MEMSET:
            if (!d->sticky) memset(op->u.m.dst, op->u.m.value, op->u.m.n);
            break;
        case OP_RECORD: {
            emu_event* e = op->u.r.ev;
            if (e && e->gen == op->u.r.gen) {
                e->completed_gen = op->u.r.gen;
                e->time_ms = now_ms();
            }
            break;
        }
        case OP_WAIT:
            if (op->u.w.s) run_until(op->u.w.s, op->u.w.seq);
            break;
        case OP_GEMM:
            if (!d->sticky) run_gemm(op->u.g);
            free(op->u.g);
            break;
    }
}

/* ------------------------------------------------------------------ cuBLAS */

/* Note [Emulated cuBLAS]
 * The library ember's matrix products call (csrc/cuda/blas_launch.c), emulated
 * for what ember uses: handles, streams, workspaces, math modes, GemmEx and
 * GemmStridedBatchedEx in float32 (TF32 rounds the inputs to 10 mantissa bits,
 * as tensor cores do), float64, float16 and bfloat16 (float32 accumulation).
 * The same library is found as libcublas.so.13.  A GEMM is queued on the
 * handle's stream like a kernel; it checks its arguments as cuBLAS does (leading
 * dimensions, types) and, unlike cuBLAS, that every element it reads or writes
 * lies in one allocation of the handle's device: a wrong leading dimension or
 * batch stride in ember's plan (Note [GEMM plan]) is reported at the call,
 * where a GPU would compute with other memory.  Sums run in double precision in
 * a fixed order, so results differ from a GPU's in the last bits. */

enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum { R_32F = 0, R_64F = 1, R_16F = 2, R_16BF = 14 };
enum { COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77, COMPUTE_64F = 70 };

typedef struct emu_blas {
    int magic;
    emu_device* dev;
    void* stream; /* a stream handle (0: the legacy stream) */
    uintptr_t ws;
    size_t wsize;
    int math;
} emu_blas;

#define BLAS_MAGIC 0x626c6173

static int blas_fail(int status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int blas_fail(int status, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ember CUDA emulator: cuBLAS: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return status;
}

EXPORT int cublasCreate_v2(emu_blas** out) {
    emu_device* d = NULL;
    if (current(&d)) return blas_fail(CUBLAS_STATUS_NOT_INITIALIZED, "no current context");
    emu_blas* h = calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->magic = BLAS_MAGIC;
    h->dev = d;
    *out = h;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT int cublasDestroy_v2(emu_blas* h) {
    if (!h || h->magic != BLAS_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->magic = 0;
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT int cublasSetStream_v2(emu_blas* h, void* stream) {
    if (!h || h->magic != BLAS_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    lock();
    emu_stream* s;
    int st = stream_of(stream, h->dev, &s);
    int ok = !st && s->dev == h->dev;
    unlock();
    if (!ok)
        return blas_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasSetStream: stream %p is not a stream "
                         "of the handle's device cuda:%d", stream, h->dev->ordinal);
    h->stream = stream;
    h->ws = 0; /* binding a stream resets the workspace to cuBLAS's own */
    h->wsize = 0;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT int cublasSetWorkspace_v2(emu_blas* h, void* ws, size_t size) {
    if (!h || h->magic != BLAS_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    int dev = -1;
    lock();
    int ok = !size || (usable((uintptr_t)ws, size, &dev) && dev == h->dev->ordinal);
    unlock();
    if (!ok)
        return blas_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasSetWorkspace: [%p, +%zu) is not "
                         "device memory of cuda:%d", ws, size, h->dev->ordinal);
    h->ws = (uintptr_t)ws;
    h->wsize = size;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT int cublasSetMathMode(emu_blas* h, int mode) {
    if (!h || h->magic != BLAS_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT int cublasGetVersion_v2(emu_blas* h, int* v) {
    if (!h || h->magic != BLAS_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    *v = 130000;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT const char* cublasGetStatusString(int status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

static int type_size(int t) {
    return t == R_64F ? 8 : t == R_32F ? 4 : (t == R_16F || t == R_16BF) ? 2 : 0;
}

/* Whether the elements of a column-major rows x cols operand (leading
 * dimension ld) of `batch` matrices `stride` elements apart lie in one
 * allocation of device `dev`. */
static int operand_ok(const char* p, long long rows, long long cols, long long ld,
                      long long batch, long long stride, int isz, int dev, const char* what) {
    if (rows == 0 || cols == 0) return 1;
    long long lo = 0, hi = (cols - 1) * ld + rows - 1;
    if (batch > 1) {
        long long span = (batch - 1) * stride;
        if (span < 0) lo += span;
        else hi += span;
    }
    uintptr_t a = (uintptr_t)(p + lo * isz);
    size_t n = (size_t)(hi - lo + 1) * (size_t)isz;
    int d = -1;
    if (usable(a, n, &d) && d == dev) return 1;
    range* r = range_find((uintptr_t)p);
    blas_fail(CUBLAS_STATUS_INVALID_VALUE,
              "operand %s (%lld x %lld, ld %lld, batch %lld stride %lld) spans [%#lx, +%zu), "
              "which is not inside one allocation of cuda:%d (%s)", what, rows, cols, ld, batch,
              stride, (unsigned long)a, n, dev,
              r ? (r->kind == R_DEVICE ? "it runs past its allocation" : "host memory")
                : "its start is not device memory");
    return 0;
}

static int gemm_enqueue(emu_blas* h, int transa, int transb, long long m, long long n,
                        long long k, const void* alpha, const void* A, int Atype, long long lda,
                        long long sa, const void* B, int Btype, long long ldb, long long sb,
                        const void* beta, void* C, int Ctype, long long ldc, long long sc,
                        long long batch, int compute) {
    if (!h || h->magic != BLAS_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (transa < 0 || transa > 1 || transb < 0 || transb > 1)
        return blas_fail(CUBLAS_STATUS_INVALID_VALUE, "transpose op %d/%d", transa, transb);
    if (m < 0 || n < 0 || k < 0 || batch < 0)
        return blas_fail(CUBLAS_STATUS_INVALID_VALUE, "negative size");
    long long arows = transa ? k : m, brows = transb ? n : k;
    if (lda < (arows > 1 ? arows : 1) || ldb < (brows > 1 ? brows : 1) || ldc < (m > 1 ? m : 1))
        return blas_fail(CUBLAS_STATUS_INVALID_VALUE,
                         "leading dimensions lda %lld ldb %lld ldc %lld too small for %c%c m=%lld "
                         "n=%lld k=%lld", lda, ldb, ldc, transa ? 'T' : 'N', transb ? 'T' : 'N',
                         m, n, k);
    if (Atype != Btype || Atype != Ctype || !type_size(Atype))
        return blas_fail(CUBLAS_STATUS_NOT_SUPPORTED, "types %d/%d/%d", Atype, Btype, Ctype);
    int want = Atype == R_64F ? COMPUTE_64F : COMPUTE_32F;
    if (!(compute == want || (Atype == R_32F && compute == COMPUTE_32F_FAST_TF32)))
        return blas_fail(CUBLAS_STATUS_NOT_SUPPORTED, "compute type %d for data type %d",
                         compute, Atype);
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    int isz = type_size(Atype), dev = h->dev->ordinal;
    lock();
    emu_stream* s = NULL;
    int st = stream_of(h->stream, h->dev, &s) ? CUBLAS_STATUS_INVALID_VALUE : 0;
    if (!st && h->dev->sticky) st = CUBLAS_STATUS_EXECUTION_FAILED;
    if (!st && k > 0 &&
        (!operand_ok(A, arows, transa ? m : k, lda, batch, sa, isz, dev, "A") ||
         !operand_ok(B, brows, transb ? k : n, ldb, batch, sb, isz, dev, "B")))
        st = CUBLAS_STATUS_INVALID_VALUE;
    if (!st && !operand_ok(C, m, n, ldc, batch, sc, isz, dev, "C"))
        st = CUBLAS_STATUS_INVALID_VALUE;
    emu_gemm* g = st ? NULL : calloc(1, sizeof *g);
    emu_op* op = g ? new_op(OP_GEMM) : NULL;
    if (!st && (!g || !op)) {
        free(g);
        st = CUBLAS_STATUS_ALLOC_FAILED;
    }
    if (!st) {
        *g = (emu_gemm){transa, transb, Atype, compute, compute == COMPUTE_32F_FAST_TF32,
                        m, n, k, lda, ldb, ldc, batch, sa, sb, sc, 0, 0, A, B, C};
        g->alpha = Atype == R_64F ? *(const double*)alpha : *(const float*)alpha;
        g->beta = Atype == R_64F ? *(const double*)beta : *(const float*)beta;
        op->u.g = g;
        enqueue(s, op);
    }
    unlock();
    return st;
}

EXPORT int cublasGemmEx(emu_blas* h, int transa, int transb, int m, int n, int k,
                        const void* alpha, const void* A, int Atype, int lda, const void* B,
                        int Btype, int ldb, const void* beta, void* C, int Ctype, int ldc,
                        int compute, int algo) {
    (void)algo;
    return gemm_enqueue(h, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0,
                        beta, C, Ctype, ldc, 0, 1, compute);
}

EXPORT int cublasGemmStridedBatchedEx(emu_blas* h, int transa, int transb, int m, int n, int k,
                                      const void* alpha, const void* A, int Atype, int lda,
                                      long long sa, const void* B, int Btype, int ldb,
                                      long long sb, const void* beta, void* C, int Ctype,
                                      int ldc, long long sc, int batch, int compute, int algo) {
    (void)algo;
    return gemm_enqueue(h, transa, transb, m, n, k, alpha, A, Atype, lda, sa, B, Btype, ldb, sb,
                        beta, C, Ctype, ldc, sc, batch, compute);
}

static float f16_to_float(uint16_t h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t u;
    if (e == 31) u = sign | 0x7f800000u | (m << 13);
    else if (e == 0) {
        float v = (float)m * 5.9604644775390625e-08f;
        return sign ? -v : v;
    } else u = sign | ((e + 112u) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t float_to_f16(float f) { /* round to nearest even (device.h's algorithm) */
    double d = f;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    uint64_t a = u & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) return 0x7fffu;
    if (a >= 0x40effe0000000000ull) return sign | 0x7c00u;
    if (a <= 0x3e60000000000000ull) return sign;
    int e = (int)(a >> 52) - 1023;
    uint64_t m = (a & 0xfffffffffffffull) | (1ull << 52);
    int shift = e >= -14 ? 42 : 42 + (-14 - e);
    uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    uint64_t h = e >= -14 ? ((uint64_t)(e + 15) << 10) + q - 1024 : q;
    return (uint16_t)(sign | h);
}

static float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t float_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double tf32(double x) { /* float32 rounded to 10 mantissa bits (nearest, ties away) */
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double load(const char* p, int type, long long i) {
    switch (type) {
        case R_64F: return ((const double*)p)[i];
        case R_32F: return ((const float*)p)[i];
        case R_16F: return f16_to_float(((const uint16_t*)p)[i]);
        default: return bf16_to_float(((const uint16_t*)p)[i]);
    }
}

static void store(char* p, int type, long long i, double v) {
    switch (type) {
        case R_64F: ((double*)p)[i] = v; break;
        case R_32F: ((float*)p)[i] = (float)v; break;
        case R_16F: ((uint16_t*)p)[i] = float_to_f16((float)v); break;
        default: ((uint16_t*)p)[i] = float_to_bf16((float)v); break;
    }
}

static void run_gemm(const emu_gemm* g) {
    for (long long b = 0; b < g->batch; b++) {
        const char* A = g->a + b * g->stride_a * type_size(g->type);
        const char* B = g->b + b * g->stride_b * type_size(g->type);
        char* C = g->c + b * g->stride_c * type_size(g->type);
        for (long long j = 0; j < g->n; j++)
            for (long long i = 0; i < g->m; i++) {
                double acc = 0;
                for (long long l = 0; l < g->k; l++) {
                    double x = load(A, g->type, g->transa ? l + i * g->lda : i + l * g->lda);
                    double y = load(B, g->type, g->transb ? j + l * g->ldb : l + j * g->ldb);
                    if (g->tf32) x = tf32(x), y = tf32(y);
                    acc += x * y;
                }
                if (g->type != R_64F) acc = (float)acc; /* float32 accumulation's result */
                double v = g->alpha * acc;
                /* beta == 0: C is not read (it may hold anything, NaN included) */
                if (g->beta != 0) v += g->beta * load(C, g->type, i + j * g->ldc);
                store(C, g->type, i + j * g->ldc, v);
            }
    }
}

/* ------------------------------------------------ for the runtime (fake_cuda.c) */

/* The runtime's view: the current device is the current context's. */
int ember_emu_rt_get_device(void) { return tls_ctx ? tls_ctx->dev->ordinal : 0; }

int ember_emu_rt_set_device(int ordinal) {
    pthread_once(&emu.once, init_once);
    emu.initialised = 1;
    if (ordinal < 0 || ordinal >= emu.ndev) return CUDA_ERROR_INVALID_DEVICE;
    tls_ctx = &emu.dev[ordinal].ctx;
    return CUDA_SUCCESS;
}

int ember_emu_rt_device_count(void) {
    pthread_once(&emu.once, init_once);
    emu.initialised = 1;
    return emu.ndev;
}

static emu_device* rt_device(void) {
    ember_emu_rt_set_device(ember_emu_rt_get_device()); /* the runtime makes it current */
    return tls_ctx->dev;
}

int ember_emu_rt_malloc(void** p, size_t size) {
    emu_device* d = rt_device();
    lock();
    int st = device_alloc(d, size, p);
    unlock();
    return st;
}

int ember_emu_rt_free(void* p) {
    lock();
    int st = device_free(p);
    unlock();
    return st;
}

int ember_emu_rt_host_alloc(void** p, size_t size) {
    rt_device();
    lock();
    int st = pinned_alloc(size, p);
    unlock();
    return st;
}

int ember_emu_rt_free_host(void* p) {
    lock();
    int st = pinned_free(p);
    unlock();
    return st;
}

int ember_emu_rt_mem_info(size_t* free_bytes, size_t* total) {
    rt_device();
    return cuMemGetInfo_v2(free_bytes, total);
}

int ember_emu_rt_synchronize(void) {
    rt_device();
    return cuCtxSynchronize();
}

int ember_emu_rt_event_create(void** e) {
    rt_device();
    return cuEventCreate((emu_event**)e, 2u);
}
int ember_emu_rt_event_record(void* e, void* stream) {
    rt_device();
    return cuEventRecord(e, stream);
}
int ember_emu_rt_event_query(void* e) { return cuEventQuery(e); }
int ember_emu_rt_event_destroy(void* e) { return cuEventDestroy_v2(e); }

/* Virtual memory (expandable segments): reservations are address space of
 * the current device's arena; a mapping makes a granule device memory. */
int ember_emu_rt_reserve(unsigned long long* out, size_t size, size_t align) {
    emu_device* d = rt_device();
    lock();
    uintptr_t p;
    int st = CUDA_SUCCESS;
    if (arena_take(d, size + emu.page, align ? align : emu.page, &p) != 0)
        st = fail(CUDA_ERROR_OUT_OF_MEMORY, "address space of %zu bytes", size);
    else if (range_add(p, size, R_RESERVED, d->ordinal) != 0)
        st = fail(CUDA_ERROR_OUT_OF_MEMORY, "host memory");
    else
        *out = p;
    unlock();
    return st;
}

int ember_emu_rt_address_free(unsigned long long p, size_t size) {
    lock();
    range* r = range_find((uintptr_t)p);
    int st = CUDA_SUCCESS;
    if (!r || r->kind != R_RESERVED || r->base != p) {
        st = fail(CUDA_ERROR_INVALID_VALUE, "%#llx is not a reservation", p);
    } else {
        int dev = r->device;
        range_remove((uintptr_t)p);
        arena_give(&emu.dev[dev], (uintptr_t)p, size + emu.page);
    }
    unlock();
    return st;
}

/* Map [p, p + size) of a reservation as device memory (physical memory
 * counted by the caller's handles). */
int ember_emu_rt_map(unsigned long long p, size_t size) {
    lock();
    range* r = range_find((uintptr_t)p);
    int st = CUDA_SUCCESS;
    if (!r || r->kind != R_RESERVED || p + size > r->base + r->size) {
        st = fail(CUDA_ERROR_INVALID_VALUE, "mapping outside a reservation");
    } else {
        /* split the reservation around the mapped piece */
        range res = *r;
        range_remove(res.base);
        if (p > res.base) range_add(res.base, (size_t)(p - res.base), R_RESERVED, res.device);
        if (p + size < res.base + res.size)
            range_add((uintptr_t)(p + size), (size_t)(res.base + res.size - p - size), R_RESERVED,
                      res.device);
        range_add((uintptr_t)p, size, R_DEVICE, res.device);
        arena_map((uintptr_t)p, size);
        poison((void*)(uintptr_t)p, size);
        emu.dev[res.device].used += size;
    }
    unlock();
    return st;
}

int ember_emu_rt_unmap(unsigned long long p, size_t size) {
    lock();
    drain_all(); /* work still queued may use it */
    int st = CUDA_SUCCESS;
    for (uintptr_t a = (uintptr_t)p; a < p + size;) {
        range* r = range_find(a);
        if (!r || r->kind != R_DEVICE) {
            st = fail(CUDA_ERROR_INVALID_VALUE, "unmapping %#lx, which is not mapped",
                      (unsigned long)a);
            break;
        }
        range m = *r;
        range_remove(m.base);
        arena_unmap(m.base, m.size);
        emu.dev[m.device].used -= m.size;
        range_add(m.base, m.size, R_RESERVED, m.device);
        a = m.base + m.size;
    }
    /* merge reservation pieces back */
    for (size_t i = 0; i + 1 < emu.nranges;) {
        range* a = &emu.ranges[i];
        range* b = &emu.ranges[i + 1];
        if (a->kind == R_RESERVED && b->kind == R_RESERVED && a->base + a->size == b->base &&
            a->device == b->device) {
            a->size += b->size;
            memmove(b, b + 1, (emu.nranges - i - 2) * sizeof(range));
            emu.nranges--;
        } else {
            i++;
        }
    }
    unlock();
    return st;
}

/* --------------------------------------------------------- test hooks */

/* Counters for the emulator's own tests. */
EXPORT long long ember_emu_counter(const char* name) {
    lock();
    long long v = -1;
    if (!strcmp(name, "streams")) {
        v = 0;
        for (emu_stream* s = emu.streams; s; s = s->next) v++;
    } else if (!strcmp(name, "queued")) {
        v = 0;
        for (int i = 0; i < emu.ndev; i++)
            v += (long long)(emu.dev[i].legacy->enqueued - emu.dev[i].legacy->done);
        for (emu_stream* s = emu.streams; s; s = s->next) v += (long long)(s->enqueued - s->done);
    } else if (!strncmp(name, "used", 4)) {
        v = (long long)emu.dev[atoi(name + 4)].used;
    } else if (!strcmp(name, "modules")) {
        v = 0;
        for (emu_module* m = emu.modules; m; m = m->next) v++;
    }
    unlock();
    return v;
}
