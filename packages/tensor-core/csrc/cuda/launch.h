/* The CUDA runtime's internal interface for the launchers (the cuda/ *_launch.c files):
 * the loaded driver, the current device and stream, kernel lookup, geometry and
 * launch.  Not part of the cffi API (see ember_cuda.h for that). */
#ifndef EMBER_CUDA_LAUNCH_H
#define EMBER_CUDA_LAUNCH_H

#include "../core.h"
#include "../ember_cuda.h"
#include "driver.h"

extern ecu_driver ecu_drv;

/* Note [CUDA geometry] (prelude.cuh): the host twin of struct ecu_geo. */
#define ECU_MAX_DIMS 25
#define ECU_MAX_OPERANDS 4
#define ECU_BLOCK 128
#define ECU_VEC 4

typedef struct ecu_div {
    uint32_t d, magic, shift, pad;
} ecu_div;

typedef struct ecu_geo {
    int32_t ndim, nops;
    int64_t numel;
    int64_t size[ECU_MAX_DIMS];
    ecu_div div[ECU_MAX_DIMS];
    int64_t stride[ECU_MAX_OPERANDS][ECU_MAX_DIMS]; /* bytes */
} ecu_geo;

/* The fast 32-bit divisor of d (used by the geometry helpers). */
void ecu_make_divisor(ecu_div* v, uint32_t d);

/* Build the geometry of an ember layout (shape, then each operand's element
 * strides): size-1 dims dropped, contiguous neighbours merged.  Sets *i32 when
 * 32-bit index math covers it. */
int ecu_geometry(int nops, int ndim, const int64_t* layout, const int* itemsizes, ecu_geo* g,
                 int* i32);

/* The kernel for (family, op, dtype, dtype2, variant) on the current device,
 * compiled and loaded at first use (through the Python side's compiler). */
int ecu_get_function(int family, int op, int dtype, int dtype2, int variant, ecu_CUfunction* f);

/* Launch over `work` elements (ECU_BLOCK threads, ECU_VEC elements per thread)
 * on the current stream. */
int ecu_launch_elements(ecu_CUfunction f, int64_t work, void** args);

/* Launch with an explicit configuration on the current stream. */
int ecu_launch(ecu_CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
               unsigned bz, unsigned smem, void** args);

/* The current device's current stream, and its device-side error word. */
ecu_CUstream ecu_stream(void);
int ecu_device(void);
ecu_CUdeviceptr ecu_error_word(void);

/* The workspace Python set for this thread's next launch (Note [Reduction
 * workspace]); taking it clears the slot.  For launchers outside reduce_launch.c. */
void ecu_take_workspace(char** ws, uint64_t* nbytes);

/* Whether every launch waits for its work (EMBER_LAUNCH_BLOCKING=1). */
int ecu_launch_is_blocking(void);

/* Turn a driver result into a status (with a message) */
int ecu_check(ecu_CUresult r, const char* what);

/* Make sure the driver is loaded and the current device's context is current
 * on this thread; every launcher calls it first. */
int ecu_ready(void);

/* Whether every pointer is aligned to `bytes`. */
static inline int ecu_aligned(uintptr_t p, int bytes) { return (p % (uintptr_t)bytes) == 0; }

#endif
