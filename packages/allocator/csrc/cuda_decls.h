/* The few CUDA runtime and driver types and constants raw_cuda.c uses.
 *
 * They are declared here, with an ea_ prefix, instead of including cuda.h and
 * cuda_runtime_api.h, so the package builds on machines without CUDA (the
 * libraries are dlopen'ed at run time).  tests/test_cuda.py compiles this header
 * next to the real CUDA headers, where they exist, and checks that every size,
 * field offset and constant matches them.
 */
#ifndef EMBER_ALLOCATOR_CUDA_DECLS_H
#define EMBER_ALLOCATOR_CUDA_DECLS_H

#include <stddef.h>

/* runtime API */
typedef int ea_cudaError_t;  /* enum cudaError */
typedef void* ea_cudaStream_t;
typedef void* ea_cudaEvent_t;
enum {
    EA_cudaSuccess = 0,
    EA_cudaErrorMemoryAllocation = 2,
    EA_cudaErrorInsufficientDriver = 35,
    EA_cudaErrorNoDevice = 100,
    EA_cudaErrorNotReady = 600,
};
enum { EA_cudaEventDisableTiming = 2, EA_cudaHostAllocDefault = 0 };

/* driver API: virtual memory management (expandable segments) */
typedef int ea_CUresult;     /* enum cudaError_enum */
typedef int ea_CUdevice;
typedef unsigned long long ea_CUdeviceptr;
typedef unsigned long long ea_CUmemGenericAllocationHandle;
typedef struct {
    int type;                /* CUmemLocationType */
    int id;
} ea_CUmemLocation;
typedef struct {
    int type;                /* CUmemAllocationType */
    int requestedHandleTypes;
    ea_CUmemLocation location;
    void* win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} ea_CUmemAllocationProp;
typedef struct {
    ea_CUmemLocation location;
    int flags;               /* CUmemAccess_flags */
} ea_CUmemAccessDesc;
enum {
    EA_CUDA_SUCCESS = 0,
    EA_CUDA_ERROR_OUT_OF_MEMORY = 2,
    EA_CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    EA_CU_MEM_LOCATION_TYPE_DEVICE = 1,
    EA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    EA_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
};

#endif
