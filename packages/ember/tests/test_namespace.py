"""The PyTorch-shaped namespace: submodule imports, the same module objects as
the packages behind them, and the torch-level helpers (dtype info, closeness,
broadcasting, meshgrid, settings, backends, testing, random, amp)."""

import importlib
import sys

import numpy as np
import pytest

import ember
import ember as torch  # scripts write it this way


@pytest.mark.parametrize(
    "name, target",
    [
        ("ember.nn", "ember_nn"),
        ("ember.nn.functional", "ember_nn.functional"),
        ("ember.nn.init", "ember_nn.init"),
        ("ember.nn.utils", "ember_nn.utils"),
        ("ember.nn.utils.rnn", "ember_nn.utils.rnn"),
        ("ember.optim", "ember_nn.optim"),
        ("ember.optim.lr_scheduler", "ember_nn.optim.lr_scheduler"),
        ("ember.autograd", "ember_autograd"),
        ("ember.utils.data", "ember_data"),
        ("ember.utils.data.dataloader", "ember_data.dataloader"),
        ("ember.utils.data.sampler", "ember_data.sampler"),
        ("ember.utils.data.datasets", "ember_data.datasets"),
        ("ember.multiprocessing", "ember_multiprocessing"),
    ],
)
def test_submodules_are_the_packages_modules(name, target):
    assert importlib.import_module(name) is importlib.import_module(target)
    assert sys.modules[name] is sys.modules[target]


def test_script_style_imports():
    import ember.nn as nn
    import ember.nn.functional as F
    import ember.optim as optim
    from ember.nn.utils import clip_grad_norm_  # noqa: F401
    from ember.nn.utils.rnn import pad_sequence  # noqa: F401
    from ember.optim.lr_scheduler import StepLR  # noqa: F401
    from ember.utils.data import DataLoader, Dataset, TensorDataset, random_split  # noqa: F401
    from ember.utils.data.dataloader import default_collate

    assert torch.nn is nn and torch.nn.functional is F and torch.optim is optim
    assert torch.utils.data.DataLoader is DataLoader
    batch = default_collate([(torch.ones(2), 1), (torch.zeros(2), 0)])
    assert batch[0].shape == (2, 2) and batch[1].tolist() == [1, 0]
    assert isinstance(torch.nn.Linear(2, 2).weight, torch.nn.Parameter)


def test_top_level_names_scripts_use():
    for name in [
        "tensor",
        "from_numpy",
        "zeros",
        "ones",
        "randn",
        "arange",
        "cat",
        "stack",
        "argmax",
        "no_grad",
        "manual_seed",
        "save",
        "load",
        "device",
        "Tensor",
        "Size",
        "Generator",
        "is_tensor",
        "numel",
        "float32",
        "float",
        "long",
        "int64",
        "bool",
        "set_grad_enabled",
        "inference_mode",
        "where",
        "set_num_threads",
        "get_num_threads",
        "set_default_dtype",
        "get_default_dtype",
        "compile",
    ]:
        assert hasattr(torch, name), name
    assert torch.device("cuda" if torch.cuda.is_available() else "cpu").type == "cpu"
    assert torch.is_tensor(torch.ones(1)) and not torch.is_tensor([1])
    assert torch.numel(torch.ones(2, 3)) == 6
    g = torch.Generator().manual_seed(3)
    a = torch.randn(3, generator=g)
    b = torch.randn(3, generator=torch.Generator().manual_seed(3))
    assert a.tolist() == b.tolist()
    assert torch.__version__


def test_grad_and_autograd_namespace():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    (gg,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])

    @torch.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    with torch.set_grad_enabled(False):
        assert not torch.is_grad_enabled()


def test_dtype_info_matches_numpy():
    fi = torch.finfo(torch.float32)
    assert fi.eps == np.finfo(np.float32).eps and fi.max == np.finfo(np.float32).max
    assert fi.tiny == np.finfo(np.float32).tiny and fi.resolution == 1e-6
    assert torch.finfo().dtype is torch.get_default_dtype()
    assert torch.finfo(torch.float16).eps == np.finfo(np.float16).eps
    ii = torch.iinfo(torch.int32)
    assert (ii.min, ii.max, ii.bits) == (-(2**31), 2**31 - 1, 32)
    with pytest.raises(TypeError):
        torch.finfo(torch.int32)


def test_closeness():
    a = torch.tensor([1.0, 2.0, float("nan"), float("inf")])
    b = torch.tensor([1.0 + 1e-9, 2.1, float("nan"), float("inf")])
    assert torch.isclose(a, b).tolist() == [True, False, False, True]
    assert torch.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True]
    assert torch.allclose(a[:1], b[:1]) and not torch.allclose(a, b)
    assert torch.equal(torch.ones(2), torch.ones(2)) and not torch.equal(
        torch.ones(2), torch.ones(3)
    )


def test_broadcasting_and_meshgrid():
    assert torch.broadcast_shapes((2, 1), (3,), (1, 1, 1)) == torch.Size([1, 2, 3])
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        torch.broadcast_shapes((2,), (3,))
    x, y = torch.broadcast_tensors(torch.ones(3, 1), torch.arange(4.0))
    assert x.shape == y.shape == (3, 4)
    gi, gj = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")
    ni, nj = np.meshgrid(np.arange(2), np.arange(3), indexing="ij")
    assert gi.tolist() == ni.tolist() and gj.tolist() == nj.tolist()
    gx, gy = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="xy")
    nx, ny = np.meshgrid(np.arange(2), np.arange(3), indexing="xy")
    assert gx.tolist() == nx.tolist() and gy.tolist() == ny.tolist()
    with pytest.warns(UserWarning, match="indexing"):
        torch.meshgrid(torch.arange(2), torch.arange(2))


def test_settings_and_backends():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    assert not torch.backends.cudnn.is_available() and not torch.backends.mps.is_available()
    torch.use_deterministic_algorithms(True)
    assert torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)
    torch.set_float32_matmul_precision("high")
    assert torch.get_float32_matmul_precision() == "high"
    with pytest.raises(RuntimeError):
        torch.set_float32_matmul_precision("low")
    torch.set_float32_matmul_precision("highest")
    torch.cuda.manual_seed_all(0)
    assert torch.cuda.device_count() == 0 and not torch.cuda.is_bf16_supported()
    with pytest.raises(RuntimeError, match="(?i)cuda"):
        torch.cuda.synchronize()
    assert torch.get_default_device() == torch.device("cpu")


def test_random_module():
    torch.random.manual_seed(5)
    a = torch.rand(3)
    with torch.random.fork_rng():
        torch.rand(10)
    b = torch.rand(3)
    torch.random.manual_seed(5)
    assert torch.rand(3).tolist() == a.tolist() and torch.rand(3).tolist() == b.tolist()
    state = torch.random.get_rng_state()
    c = torch.rand(2)
    torch.random.set_rng_state(state)
    assert torch.rand(2).tolist() == c.tolist()


def test_testing_assert_close():
    torch.testing.assert_close(torch.ones(3), torch.ones(3) + 1e-7)
    torch.testing.assert_close({"a": [torch.ones(2), 1.0]}, {"a": [torch.ones(2), 1.0]})
    with pytest.raises(AssertionError, match="Tensor-likes are not close!") as info:
        torch.testing.assert_close(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.1, 3.0]))
    msg = str(info.value)
    assert (
        "Mismatched elements: 1 / 3 (33.3%)" in msg
        and "at index (1,)" in msg
        and "up to 1e-05 allowed" in msg
    )
    with pytest.raises(AssertionError, match="dtype"):
        torch.testing.assert_close(torch.ones(2), torch.ones(2, dtype=torch.float64))
    torch.testing.assert_close(torch.ones(2), torch.ones(2, dtype=torch.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="shape"):
        torch.testing.assert_close(torch.ones(2), torch.ones(3))
    with pytest.raises(AssertionError, match=r"item \[1\]"):
        torch.testing.assert_close([torch.ones(1), torch.ones(1)], [torch.ones(1), torch.zeros(1)])
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        torch.testing.assert_close(torch.ones(1), torch.ones(1), rtol=0.1)
    with pytest.raises(AssertionError, match="Scalars are not close"):
        torch.testing.assert_close(1.0, 1.5)
    t = torch.testing.make_tensor(4, 5, dtype=torch.float32, low=-1, high=1)
    assert t.shape == (4, 5) and float(t.abs().max()) <= 1


@pytest.mark.parity
def test_assert_close_messages_match_torch():
    real = pytest.importorskip("torch")
    pairs = [
        ([1.0, 2.0, 3.0], [1.0, 2.1, 3.0]),
        ([[0.0, 5.0], [1.0, 1.0]], [[0.5, 5.0], [1.0, 1.0]]),
    ]
    for a, b in pairs:
        msgs = []
        for lib in (ember, real):
            with pytest.raises(AssertionError) as info:
                lib.testing.assert_close(lib.tensor(a), lib.tensor(b))
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


def test_grad_scaler_algorithm():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    w0 = model.weight.detach().clone()
    loss = model(torch.ones(1, 2)).sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == pytest.approx(8 * loss.item())
    scaled.backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(
        model.weight.detach().numpy(), w0.numpy() - 0.1, rtol=1e-6
    )  # unscaled grad is 1
    opt.zero_grad()
    scaler.scale(model(torch.ones(1, 2)).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 16.0, "two clean steps grow the scale"
    opt.zero_grad()
    w1 = model.weight.detach().clone()
    (scaler.scale(model(torch.ones(1, 2)).sum()) * float("inf")).backward()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(model.weight.detach(), w1), "an overflowing step is skipped"
    assert scaler.get_scale() == 8.0
    state = scaler.state_dict()
    assert state["scale"] == 8.0 and state["_growth_tracker"] == 0


def test_cuda_amp_without_cuda_disables_itself():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = torch.amp.GradScaler()
    assert not scaler.is_enabled()
    loss = torch.ones(1, requires_grad=True).sum()
    assert scaler.scale(loss) is loss
    with pytest.warns(UserWarning, match="Disabling autocast"), torch.autocast(device_type="cuda"):
        pass
    with torch.autocast(device_type="cpu", enabled=False):
        pass
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):  # CPU autocast is real
        assert torch.is_autocast_enabled("cpu")
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is torch.bfloat16


def test_data_parallel_without_gpus():
    model = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    assert model(torch.ones(4, 3)).shape == (4, 2)


# ------------------------------------------------ legacy typed constructors


@pytest.mark.parametrize(
    "name, dtype",
    [
        ("FloatTensor", "float32"),
        ("DoubleTensor", "float64"),
        ("LongTensor", "int64"),
        ("IntTensor", "int32"),
        ("BoolTensor", "bool"),
        ("ByteTensor", "uint8"),
        ("HalfTensor", "float16"),
    ],
)
def test_legacy_constructors(name, dtype):
    cls = getattr(torch, name)
    expected = getattr(torch, dtype)
    t = cls([1, 0, 1])
    assert t.dtype is expected and t.tolist() == [1, 0, 1]
    assert cls(2, 3).shape == (2, 3) and cls(2, 3).dtype is expected
    assert cls(torch.Size([4])).shape == (4,)
    assert cls().shape == (0,)
    assert cls(size=(1, 2)).shape == (1, 2)
    assert isinstance(t, cls) and isinstance(t, torch.Tensor)
    other = torch.FloatTensor if name != "FloatTensor" else torch.LongTensor
    assert not isinstance(t, other)
    assert not isinstance([1], cls)
    # Tensor.type with the legacy classes and names, as PyTorch
    x = torch.zeros(2, dtype=torch.float64) + 1
    assert x.type(cls).dtype is expected and x.type(cls).tolist() == [1, 1]
    assert x.type(f"torch.{name}").dtype is expected
    assert t.type() == f"torch.{name}"
    assert t.type(cls) is t


def test_legacy_constructor_from_numpy_converts():
    a = np.array([[0.5, 1.5]], dtype=np.float64)
    t = torch.FloatTensor(a)
    assert t.dtype is torch.float32
    np.testing.assert_array_equal(t.numpy(), a.astype(np.float32))
    a[0, 0] = 9.0  # a copy, as PyTorch
    assert t[0, 0].item() == 0.5
    same = torch.FloatTensor(t)
    assert same.data_ptr() == t.data_ptr()
    with pytest.raises(TypeError, match="float32"):
        torch.FloatTensor(torch.zeros(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="FloatTensor"):
        torch.FloatTensor([1.0], [2.0])


def test_autocast_queries_at_top_level():
    assert torch.is_autocast_enabled() is False
    assert torch.get_autocast_dtype("cpu") is torch.bfloat16


def test_record_function_labels_without_effect():
    import ember.autograd.profiler as profiler

    assert torch.autograd.profiler is profiler
    with profiler.record_function("step") as r:
        y = torch.ones(2) * 2
    assert r.name == "step" and y.tolist() == [2.0, 2.0]

    @profiler.record_function("f")
    def f(x):
        return x + 1

    assert f(torch.zeros(1)).tolist() == [1.0]


# ------------------------------------------------ the umbrella only re-exports

_UMBRELLA_IMPORT = """
import ember_autograd, ember_core, ember_data, ember_multiprocessing, ember_nn
Tensor = ember_core.Tensor
names, attrs, n_ops = set(dir(Tensor)), dict(vars(Tensor)), len(ember_core.OPS)
import ember
assert set(dir(Tensor)) == names, sorted(set(dir(Tensor)) ^ names)
changed = sorted(k for k, v in vars(Tensor).items() if attrs.get(k) is not v)
assert not changed, changed
assert len(ember_core.OPS) == n_ops, sorted(ember_core.OPS)[n_ops:]
print("unchanged")
"""


def test_importing_ember_changes_neither_tensor_nor_the_op_table():
    # a fresh process: ember_core and every package ember builds on, then ember
    import subprocess

    r = subprocess.run(
        [sys.executable, "-c", _UMBRELLA_IMPORT], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "unchanged"


def test_the_umbrella_declares_no_ops_and_reexports_ember_core():
    import pathlib

    import ember_core

    for op in ember_core.OPS.values():
        assert op.module.startswith("ember_core"), (op.name, op.module)
    umbrella = pathlib.Path(ember.__file__).parent
    declaring = [p.name for p in umbrella.glob("*.py") if "defop" in p.read_text()]
    assert declaring == []
    for name in ember_core.__all__:
        assert getattr(ember, name) is getattr(ember_core, name), name
    # the functions once written here are ops of the table now
    for name in ("quantile", "renorm", "slice_scatter", "hann_window", "asarray", "isclose"):
        assert name in ember_core.OPS and getattr(ember, name) is getattr(ember_core, name)
    assert ember.margin_ranking_loss is ember_core.margin_ranking_loss
