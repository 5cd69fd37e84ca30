/* The interface between the CUDA emulator's driver (driver.c, the fake
 * libcuda.so.1) and the modules it loads (kernel groups compiled by g++ with
 * device.h and entry.h; see Note [CUDA emulation] in driver.c).
 *
 * Compiled as C (the driver) and as C++ (every module, which includes no system
 * header, as NVRTC does not): only built-in types here. */
#ifndef EMBER_CUDA_EMU_ABI_H
#define EMBER_CUDA_EMU_ABI_H

#define EMBER_EMU_ABI 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ember_emu_u3 {
    unsigned x, y, z;
} ember_emu_u3;

/* What device code sees of the thread it runs as (threadIdx, blockIdx, ...);
 * the driver keeps more per thread after these fields. */
typedef struct ember_emu_thread {
    ember_emu_u3 thread_idx, block_idx, block_dim, grid_dim;
    unsigned linear; /* x + y * block_dim.x + z * block_dim.x * block_dim.y */
    unsigned lane;   /* linear % 32 */
} ember_emu_thread;

/* Collective operations device code asks the driver's scheduler for. */
enum {
    EMBER_EMU_WARP_SYNC = 0,   /* __syncwarp */
    EMBER_EMU_WARP_SHFL = 1,   /* __shfl*_sync */
    EMBER_EMU_WARP_VOTE = 2,   /* __ballot_sync, __any_sync, __all_sync */
    EMBER_EMU_WARP_MATCH = 3,  /* __match_*_sync */
    EMBER_EMU_WARP_REDUCE = 4, /* __reduce_*_sync */
    EMBER_EMU_BLOCK_COUNT = 0, /* __syncthreads_count */
    EMBER_EMU_BLOCK_AND = 1,   /* __syncthreads_and */
    EMBER_EMU_BLOCK_OR = 2     /* __syncthreads_or */
};

/* The driver's services, handed to each module when it is loaded. */
typedef struct ember_emu_api {
    int abi;
    /* __syncthreads and its counting forms (op: EMBER_EMU_BLOCK_*; returns the
     * count, or the and/or of the predicates) */
    void (*syncthreads)(void);
    int (*syncthreads_reduce)(int op, int pred);
    /* A collective among the lanes of `mask` in the caller's warp: waits until
     * every lane of the mask has called it with the same mask and kind, then
     * fills out[lane] with each lane's value (lanes outside the mask: 0). */
    void (*warp_collective)(unsigned mask, int kind, unsigned long long value,
                            unsigned long long* out);
    /* The lanes of the caller's warp that reach __activemask together. */
    unsigned (*activemask)(void);
    /* Let the other threads of the block run (spin loops, __nanosleep). */
    void (*yield)(void);
    /* Abort the launch with a message (__trap, misuse the module detects). */
    void (*trap)(const char* why);
    long long (*clock)(void);
} ember_emu_api;

/* One kernel of a module: the name expression it was built for, the kernel
 * function itself (its symbol is the lowered name; the section it sits in
 * carries __launch_bounds__), and a launcher that unpacks cuLaunchKernel's
 * argument pointers into the kernel's parameters. */
typedef struct ember_emu_kernel {
    const char* expr;
    const void* fn;
    void (*run)(void** args);
    unsigned nparams;
    const unsigned* sizes;       /* of each parameter */
    const unsigned* aligns;      /* alignof each parameter */
    const unsigned char* is_ptr; /* 1: a pointer parameter (checked at launch) */
    unsigned max_threads;        /* from __launch_bounds__, 0: none */
} ember_emu_kernel;

typedef struct ember_emu_module {
    int abi;
    unsigned nkernels;
    const ember_emu_kernel* kernels;
    /* extern __shared__ arrays all start here */
    char* dynamic_shared;
    unsigned long long dynamic_shared_cap;
    /* the module's current thread (set by the driver at every switch) and its
     * pointer to the driver's services (set at load) */
    const ember_emu_thread** current;
    const ember_emu_api** api;
} ember_emu_module;

/* Every module exports this. */
typedef const ember_emu_module* (*ember_emu_module_info_fn)(void);
#define EMBER_EMU_MODULE_INFO "ember_emu_module_info"

/* A module's image, as cuModuleLoadData receives it: this prefix, then the
 * absolute path of the shared object, then lines of metadata:
 * "shared=OFF:SIZE,..." lists the static __shared__ variables (hex offset in
 * the module, size in bytes); NUL-terminated. */
#define EMBER_EMU_IMAGE_PREFIX "ember-cuda-emulation-module:"

/* Bytes of the dynamic shared memory buffer of each module (the largest
 * opt-in any emulated device allows). */
#define EMBER_EMU_MAX_DYNAMIC_SHARED (228u * 1024u)

#ifdef __cplusplus
}
#endif

#endif
