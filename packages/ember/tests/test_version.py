"""Small namespaces: ember.version, ember.accelerator, ember.mps,
ember.utils.hooks (values checked, and against PyTorch's CPU build)."""

import pickle
from collections import OrderedDict

import pytest

import ember
import ember.utils.hooks


def test_version():
    v = ember.version.__version__
    assert ember.__version__ is v and v == "0.1.0"
    assert v >= (0, 1) and v < (1,) and v > "0.0.9" and v <= "0.1.0" and v == (0, 1, 0)
    assert ember.version.cuda is None and ember.version.debug is False
    assert isinstance(ember.version.git_version, str)


def test_accelerator_without_one():
    acc = ember.accelerator
    assert acc.is_available() is False
    assert acc.current_accelerator() is None
    assert acc.current_accelerator(check_available=True) is None
    assert acc.device_count() == 0
    for call in (
        acc.current_device_index,
        acc.synchronize,
        acc.memory_allocated,
        lambda: acc.set_device_index(0),
    ):
        with pytest.raises(
            RuntimeError, match="Cannot access accelerator device when none is available."
        ):
            call()
    with acc.device_index(None):
        pass


def test_mps():
    assert ember.mps.is_available() is False and ember.mps.device_count() == 0
    assert ember.backends.mps.is_available() is False
    ember.mps.manual_seed(0)
    with pytest.raises(RuntimeError, match="without MPS backend"):
        ember.mps.synchronize()


def test_removable_handle():
    RemovableHandle = ember.utils.hooks.RemovableHandle
    hooks, extra = OrderedDict(), OrderedDict()  # held weakly: plain dicts cannot be
    h1 = RemovableHandle(hooks, extra_dict=extra)
    hooks[h1.id] = "a"
    extra[h1.id] = "a-extra"
    h2 = RemovableHandle(hooks)
    hooks[h2.id] = "b"
    assert h2.id == h1.id + 1
    h1.remove()
    assert hooks == {h2.id: "b"} and extra == {}
    h1.remove()  # twice is fine
    with h2:
        pass
    assert hooks == {}
    with pytest.raises(TypeError):  # as PyTorch: a plain dict has no weak references
        RemovableHandle({})
    h3 = pickle.loads(pickle.dumps(RemovableHandle(OrderedDict())))
    assert isinstance(h3.id, int)


@pytest.mark.parity
def test_match_torch_cpu():
    torch = pytest.importorskip("torch")
    assert ember.accelerator.is_available() == torch.accelerator.is_available()
    assert ember.accelerator.device_count() == torch.accelerator.device_count()
    assert ember.accelerator.current_accelerator() == torch.accelerator.current_accelerator()
    for name in ("current_device_index", "synchronize", "memory_allocated"):
        with pytest.raises(RuntimeError) as mine:
            getattr(ember.accelerator, name)()
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.accelerator, name)()
        assert str(mine.value) == str(theirs.value)
    assert ember.mps.is_available() == torch.mps.is_available()
    assert ember.version.debug == torch.version.debug
    assert ember.version.cuda == torch.version.cuda
    with pytest.raises(RuntimeError) as mine:
        ember.mps.synchronize()
    with pytest.raises(RuntimeError) as theirs:
        torch.mps.synchronize()
    assert str(mine.value) == str(theirs.value)


def test_get_device_module():
    assert ember.get_device_module("cuda") is ember.cuda
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    assert ember.get_device_module("cuda:1") is ember.cuda
    default = ember.cuda if ember.accelerator.is_available() else ember.cpu
    assert ember.get_device_module() is default
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        ember.get_device_module("meta")
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        ember.get_device_module(3)


def test_xpu_without_one():
    assert ember.xpu.is_available() is False and ember.xpu.device_count() == 0
    ember.xpu.manual_seed_all(0)
    ember.xpu.empty_cache()
    with pytest.raises(RuntimeError, match="no XPU backend"):
        ember.xpu.synchronize()
