"""ember.backends: the switches PyTorch scripts set on their backends
(``torch.backends.cudnn.benchmark = True``).  ``cuda.matmul`` is ember_core's
(its switches decide how cuBLAS runs float products); cuDNN and MPS are not
built into ember and report themselves unavailable, their flags plain settings
with PyTorch's defaults."""

import types

from ember_core._cuda import blas as _cuda_blas
from ember_core._cuda import runtime as _cuda


def _flag_module(name, doc, **flags):
    m = types.ModuleType(f"ember.backends.{name}", doc)
    m.__dict__.update(flags)
    return m


cudnn = _flag_module(
    "cudnn",
    "cuDNN: not built into ember; the flags keep what scripts set.",
    enabled=True,
    benchmark=False,
    deterministic=False,
    allow_tf32=True,
    is_available=lambda: False,
    version=lambda: None,
)
mps = _flag_module(
    "mps", "Apple MPS: not built into ember.", is_available=lambda: False, is_built=lambda: False
)
openmp = _flag_module("openmp", "ember's CPU kernels use OpenMP.", is_available=lambda: True)
mkldnn = _flag_module(
    "mkldnn", "oneDNN: not used by ember.", enabled=True, is_available=lambda: False
)
cuda = _flag_module(
    "cuda",
    "CUDA: see ember.cuda.",
    is_built=lambda: _cuda.is_available(),
    matmul=_cuda_blas.matmul,
)
mha = _flag_module("mha", "MultiheadAttention fast path (ember has one path).")
_mha_fastpath = [True]
mha.get_fastpath_enabled = lambda: _mha_fastpath[0]
mha.set_fastpath_enabled = lambda value: _mha_fastpath.__setitem__(0, bool(value))

__all__ = ["cuda", "cudnn", "mha", "mkldnn", "mps", "openmp"]
