/* The part of cuBLAS ember's matrix products use, declared here with an ecu_
 * prefix so the package builds on machines without CUDA: libcublas is opened
 * with dlopen at first use (blas_launch.c, Note [cuBLAS]) and every entry point
 * is a function pointer.  Types and values match cublas_api.h and
 * library_types.h of CUDA 12/13 (checked against the nvidia-cublas 13 wheel's
 * headers); the entry points are the exported names (cublasCreate_v2, ...),
 * not the macros of cublas_v2.h. */
#ifndef EMBER_CUDA_CUBLAS_H
#define EMBER_CUDA_CUBLAS_H

#include <stddef.h>
#include <stdint.h>

typedef int ecu_cublasStatus_t;
typedef struct ecu_cublasContext* ecu_cublasHandle_t;
typedef struct ecu_CUstream_st* ecu_cudaStream_t; /* the same object as a driver CUstream */

enum {
    /* cublasStatus_t */
    ECU_CUBLAS_STATUS_SUCCESS = 0,
    ECU_CUBLAS_STATUS_NOT_INITIALIZED = 1,
    ECU_CUBLAS_STATUS_ALLOC_FAILED = 3,
    ECU_CUBLAS_STATUS_INVALID_VALUE = 7,
    ECU_CUBLAS_STATUS_ARCH_MISMATCH = 8,
    ECU_CUBLAS_STATUS_EXECUTION_FAILED = 13,
    ECU_CUBLAS_STATUS_NOT_SUPPORTED = 15,
    /* cublasOperation_t */
    ECU_CUBLAS_OP_N = 0,
    ECU_CUBLAS_OP_T = 1,
    /* cublasGemmAlgo_t */
    ECU_CUBLAS_GEMM_DEFAULT = -1,
    /* cublasMath_t (a mode, or'ed with the flag) */
    ECU_CUBLAS_DEFAULT_MATH = 0,
    ECU_CUBLAS_TF32_TENSOR_OP_MATH = 3,
    ECU_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16,
    /* cublasComputeType_t */
    ECU_CUBLAS_COMPUTE_32F = 68,
    ECU_CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    ECU_CUBLAS_COMPUTE_64F = 70,
    /* cudaDataType (library_types.h) */
    ECU_CUDA_R_32F = 0,
    ECU_CUDA_R_64F = 1,
    ECU_CUDA_R_16F = 2,
    ECU_CUDA_R_16BF = 14,
};

typedef struct ecu_cublas {
    ecu_cublasStatus_t (*Create)(ecu_cublasHandle_t*);
    ecu_cublasStatus_t (*SetStream)(ecu_cublasHandle_t, ecu_cudaStream_t);
    ecu_cublasStatus_t (*SetWorkspace)(ecu_cublasHandle_t, void*, size_t);
    ecu_cublasStatus_t (*SetMathMode)(ecu_cublasHandle_t, int);
    ecu_cublasStatus_t (*GetVersion)(ecu_cublasHandle_t, int*);
    const char* (*GetStatusString)(ecu_cublasStatus_t); /* optional */
    ecu_cublasStatus_t (*GemmEx)(ecu_cublasHandle_t handle, int transa, int transb, int m, int n,
                                 int k, const void* alpha, const void* A, int Atype, int lda,
                                 const void* B, int Btype, int ldb, const void* beta, void* C,
                                 int Ctype, int ldc, int computeType, int algo);
    ecu_cublasStatus_t (*GemmStridedBatchedEx)(ecu_cublasHandle_t handle, int transa, int transb,
                                               int m, int n, int k, const void* alpha,
                                               const void* A, int Atype, int lda,
                                               long long strideA, const void* B, int Btype,
                                               int ldb, long long strideB, const void* beta,
                                               void* C, int Ctype, int ldc, long long strideC,
                                               int batchCount, int computeType, int algo);
} ecu_cublas;

#endif
