"""ember.backends.cuda.matmul is ember_core's switch object (the cuBLAS launcher
reads it), kept in step with set_float32_matmul_precision as in PyTorch; and
torch.utils.dlpack's names."""

import ember
import ember_core as ec
from ember_core._cuda import blas as _cuda_blas


def test_matmul_switches_are_ember_cores_and_follow_the_precision_setting():
    sw = ember.backends.cuda.matmul
    assert sw is _cuda_blas.matmul
    old, old_precision = sw.allow_tf32, ember.get_float32_matmul_precision()
    try:
        ember.set_float32_matmul_precision("high")
        assert sw.allow_tf32 is True
        ember.set_float32_matmul_precision("highest")
        assert sw.allow_tf32 is False
        sw.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
        sw.allow_tf32 = False
        assert ember.get_float32_matmul_precision() == "highest"
        ember.set_float32_matmul_precision("medium")
        assert sw.allow_tf32 is True and ember.get_float32_matmul_precision() == "medium"
    finally:
        ember.set_float32_matmul_precision(old_precision)
        sw.allow_tf32 = old


def test_utils_dlpack():
    t = ec.arange(3.0)
    back = ember.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(t))
    assert back.data_ptr() == t.data_ptr()
    assert int(ember.utils.dlpack.DLDeviceType.kDLCUDA) == 2
