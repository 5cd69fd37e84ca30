"""ember_core.cuda's device queries and device handling, as PyTorch's torch.cuda.

is_available / device_count / current_device / set_device / device(n) /
get_device_name / get_device_properties / get_device_capability /
is_bf16_supported / synchronize, checked against nvidia-smi and (when
installed) PyTorch on the same machine; device strings and indices on creation;
ops mixing devices raise; printing, item() and tolist() of CUDA tensors.
"""

import os
import shutil
import subprocess

import numpy as np
import pytest
from cuda_helpers import equal, has_module

import ember_core as ec

pytestmark = pytest.mark.cuda


def _smi_gpus():
    """nvidia-smi's GPU list (None where it is absent or CUDA_VISIBLE_DEVICES hides some)."""
    smi = shutil.which("nvidia-smi")
    if not smi or os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return None
    out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    return [ln for ln in out.splitlines() if ln.startswith("GPU ")]


def _torch_cuda():
    if not has_module("torch"):
        return None
    import torch

    return torch if torch.cuda.is_available() else None


def test_is_available_and_device_count():
    assert ec.cuda.is_available() is True
    n = ec.cuda.device_count()
    assert isinstance(n, int) and n >= 1
    gpus = _smi_gpus()
    if gpus is not None:
        assert n == len(gpus), (n, gpus)
    torch = _torch_cuda()
    if torch is not None:
        assert n == torch.cuda.device_count()


def test_current_and_set_device():
    assert ec.cuda.current_device() == 0
    ec.cuda.set_device(0)
    assert ec.cuda.current_device() == 0
    with ec.cuda.device(0):
        assert ec.cuda.current_device() == 0
        assert ec.ones(1, device="cuda").device == ec.device("cuda", 0)
    ec.cuda.set_device("cuda:0")
    ec.cuda.set_device(ec.device("cuda", 0))
    assert ec.cuda.current_device() == 0
    n = ec.cuda.device_count()
    with pytest.raises((RuntimeError, ValueError)):
        ec.cuda.set_device(n)
    with pytest.raises(RuntimeError):
        ec.ones(1, device=f"cuda:{n}")


def test_second_device():
    if ec.cuda.device_count() < 2:
        pytest.skip("one GPU: nothing to test across devices")
    with ec.cuda.device(1):
        assert ec.cuda.current_device() == 1
        x = ec.ones(3, device="cuda")
        assert x.device == ec.device("cuda", 1)
    assert ec.cuda.current_device() == 0
    y = x.to("cuda:0")
    assert y.device.index == 0 and equal(y.cpu(), ec.ones(3))
    with pytest.raises(RuntimeError, match="device"):
        x + ec.ones(3, device="cuda:0")


def test_device_properties():
    p = ec.cuda.get_device_properties(0)
    assert isinstance(p.name, str) and p.name
    assert p.total_memory > (1 << 30)
    assert p.multi_processor_count > 0
    assert p.major >= 5 and p.minor >= 0
    assert ec.cuda.get_device_capability(0) == (p.major, p.minor)
    assert ec.cuda.get_device_capability() == (p.major, p.minor)
    assert ec.cuda.get_device_name(0) == p.name == ec.cuda.get_device_name()
    assert ec.cuda.get_device_properties("cuda:0").name == p.name
    assert ec.cuda.is_bf16_supported() == (p.major >= 8)
    gpus = _smi_gpus()
    if gpus:
        assert p.name in gpus[0], (p.name, gpus[0])
    torch = _torch_cuda()
    if torch is not None:
        tp = torch.cuda.get_device_properties(0)
        assert p.name == tp.name
        assert p.total_memory == tp.total_memory
        assert p.multi_processor_count == tp.multi_processor_count
        assert (p.major, p.minor) == (tp.major, tp.minor)


def test_synchronize():
    x = ec.ones(1 << 20, device="cuda")
    y = x * 3
    assert ec.cuda.synchronize() is None
    ec.cuda.synchronize(0)
    ec.cuda.synchronize("cuda:0")
    assert y.sum().item() == 3 * (1 << 20)


def test_out_of_memory_error_class():
    assert issubclass(ec.cuda.OutOfMemoryError, RuntimeError)


def test_device_strings_on_creation():
    for dev in ("cuda", "cuda:0", ec.device("cuda"), ec.device("cuda", 0), 0):
        x = ec.zeros(2, 3, device=dev)
        assert x.is_cuda and x.device.type == "cuda" and x.device.index == 0, dev
    assert ec.tensor(3.5, device="cuda").item() == 3.5
    assert ec.arange(5, device="cuda").tolist() == [0, 1, 2, 3, 4]
    assert ec.tensor([[1, 2], [3, 4]], device="cuda").tolist() == [[1, 2], [3, 4]]
    assert ec.tensor([True, False], device="cuda").tolist() == [True, False]
    assert ec.full((2,), 7, device="cuda", dtype=ec.int8).tolist() == [7, 7]


def test_mixing_devices_raises_like_pytorch():
    g = ec.ones(3, device="cuda")
    c = ec.ones(3)
    for f in (
        lambda: g + c,
        lambda: c * g,
        lambda: ec.where(g > 0, g, c),
        lambda: ec.cat([g, c]),
        lambda: ec.maximum(c, g),
    ):
        with pytest.raises(RuntimeError, match="device"):
            f()
    # a CPU 0-d tensor is allowed with CUDA tensors (PyTorch's scalar rule)
    r = g + ec.tensor(2.0)
    assert r.is_cuda and r.tolist() == [3.0, 3.0, 3.0]


def test_printing_and_item_synchronise():
    x = ec.arange(6, device="cuda", dtype=ec.float32).view(2, 3) * 2
    text = repr(x)
    assert "device='cuda:0'" in text, text
    assert "10." in text
    assert str(ec.tensor(1.5, device="cuda")) == "tensor(1.5000, device='cuda:0')"
    assert x[1, 2].item() == 10.0
    assert x.sum().item() == 30.0
    assert bool(x.any()) is True
    assert int(x[0, 1]) == 2 and float(x[0, 1]) == 2.0
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(6).reshape(2, 3) * 2)
    with pytest.raises((TypeError, RuntimeError)):
        x.numpy()  # PyTorch: can't convert a CUDA tensor to numpy; use .cpu() first


def test_ember_umbrella_reexports_cuda():
    ember = pytest.importorskip("ember")
    assert ember.cuda.is_available() is True
    assert ember.cuda.device_count() == ec.cuda.device_count()
    assert ember.cuda.get_device_name(0) == ec.cuda.get_device_name(0)
    assert ember.cuda.OutOfMemoryError is ec.cuda.OutOfMemoryError
    assert ember.backends.cuda.is_built() is True
    assert isinstance(ember.backends.cuda.matmul.allow_tf32, bool)
    x = ember.ones(2, device="cuda")
    assert x.is_cuda and x.device == ember.device("cuda:0")
