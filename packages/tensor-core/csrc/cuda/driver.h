/* The part of the CUDA driver API ember's kernel runtime uses, declared here
 * with an ecu_ prefix so the package builds on machines without CUDA: libcuda
 * is opened with dlopen at first use (runtime.c) and every entry point is a
 * function pointer in `ecu_drv`.  Types and constants match cuda.h. */
#ifndef EMBER_CUDA_DRIVER_H
#define EMBER_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef int ecu_CUresult;
typedef int ecu_CUdevice;
typedef struct ecu_CUctx_st* ecu_CUcontext;
typedef struct ecu_CUmod_st* ecu_CUmodule;
typedef struct ecu_CUfunc_st* ecu_CUfunction;
typedef struct ecu_CUstream_st* ecu_CUstream;
typedef struct ecu_CUevent_st* ecu_CUevent;
typedef unsigned long long ecu_CUdeviceptr;

enum {
    ECU_CUDA_SUCCESS = 0,
    ECU_CUDA_ERROR_INVALID_VALUE = 1,
    ECU_CUDA_ERROR_OUT_OF_MEMORY = 2,
    ECU_CUDA_ERROR_NO_DEVICE = 100,
    ECU_CUDA_ERROR_NOT_FOUND = 500,
    ECU_CUDA_ERROR_NOT_READY = 600,
    ECU_CU_STREAM_NON_BLOCKING = 0x1,
    ECU_CU_EVENT_DISABLE_TIMING = 0x2,
    ECU_CU_MEMHOSTALLOC_PORTABLE = 0x1,
    ECU_CU_MEMHOSTALLOC_DEVICEMAP = 0x2,
    ECU_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    ECU_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    ECU_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    ECU_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    ECU_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    ECU_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

typedef struct ecu_driver {
    ecu_CUresult (*cuInit)(unsigned);
    ecu_CUresult (*cuDriverGetVersion)(int*);
    ecu_CUresult (*cuGetErrorName)(ecu_CUresult, const char**);
    ecu_CUresult (*cuGetErrorString)(ecu_CUresult, const char**);
    ecu_CUresult (*cuDeviceGetCount)(int*);
    ecu_CUresult (*cuDeviceGet)(ecu_CUdevice*, int);
    ecu_CUresult (*cuDeviceGetName)(char*, int, ecu_CUdevice);
    ecu_CUresult (*cuDeviceGetAttribute)(int*, int, ecu_CUdevice);
    ecu_CUresult (*cuDeviceTotalMem)(size_t*, ecu_CUdevice);
    ecu_CUresult (*cuDevicePrimaryCtxRetain)(ecu_CUcontext*, ecu_CUdevice);
    ecu_CUresult (*cuCtxSetCurrent)(ecu_CUcontext);
    ecu_CUresult (*cuCtxSynchronize)(void);
    ecu_CUresult (*cuCtxGetStreamPriorityRange)(int*, int*);
    ecu_CUresult (*cuMemGetInfo)(size_t*, size_t*);
    ecu_CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
    ecu_CUresult (*cuMemHostGetDevicePointer)(ecu_CUdeviceptr*, void*, unsigned);
    ecu_CUresult (*cuMemcpyAsync)(ecu_CUdeviceptr, ecu_CUdeviceptr, size_t, ecu_CUstream);
    ecu_CUresult (*cuMemsetD8Async)(ecu_CUdeviceptr, unsigned char, size_t, ecu_CUstream);
    ecu_CUresult (*cuPointerGetAttribute)(void*, int, ecu_CUdeviceptr);
    ecu_CUresult (*cuStreamCreateWithPriority)(ecu_CUstream*, unsigned, int);
    ecu_CUresult (*cuStreamDestroy)(ecu_CUstream);
    ecu_CUresult (*cuStreamSynchronize)(ecu_CUstream);
    ecu_CUresult (*cuStreamQuery)(ecu_CUstream);
    ecu_CUresult (*cuStreamWaitEvent)(ecu_CUstream, ecu_CUevent, unsigned);
    ecu_CUresult (*cuEventCreate)(ecu_CUevent*, unsigned);
    ecu_CUresult (*cuEventDestroy)(ecu_CUevent);
    ecu_CUresult (*cuEventRecord)(ecu_CUevent, ecu_CUstream);
    ecu_CUresult (*cuEventSynchronize)(ecu_CUevent);
    ecu_CUresult (*cuEventQuery)(ecu_CUevent);
    ecu_CUresult (*cuEventElapsedTime)(float*, ecu_CUevent, ecu_CUevent);
    ecu_CUresult (*cuModuleLoadData)(ecu_CUmodule*, const void*);
    ecu_CUresult (*cuModuleGetFunction)(ecu_CUfunction*, ecu_CUmodule, const char*);
    ecu_CUresult (*cuFuncSetAttribute)(ecu_CUfunction, int, int);
    ecu_CUresult (*cuLaunchKernel)(ecu_CUfunction, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, unsigned, ecu_CUstream, void**, void**);
} ecu_driver;

#endif
