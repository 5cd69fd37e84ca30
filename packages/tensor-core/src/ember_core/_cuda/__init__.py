"""The CUDA backend's internals (the public API is ember_core.cuda): the
runtime side (runtime), cuBLAS (blas), NVRTC compilation and its cache
(compile), and the kernels that make up each compile group (kernels,
nn_kernels)."""
