"""ember.amp against PyTorch: CPU autocast regions (op dtypes, a training step,
nesting, decorator, threads, cache) and GradScaler on 'cpu'."""

import threading
import warnings

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.parity
torch = pytest.importorskip("torch")


def _np(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pair(shape, seed, dtype="float32"):
    """The same values as an ember and a torch tensor, in ``dtype``."""
    a = _np(shape, seed)
    e, t = ember.tensor(a), torch.tensor(a)
    return e.to(getattr(ember, dtype)), t.to(getattr(torch, dtype))


# Each case: (name, fn(lib, F, make)) where make(shape, seed, dtype) gives a tensor of lib.
CASES = [
    # lower_precision_fp
    ("mm", lambda L, F, m: L.mm(m((3, 4), 0), m((4, 2), 1))),
    ("bmm", lambda L, F, m: L.bmm(m((2, 3, 4), 0), m((2, 4, 2), 1))),
    ("matmul", lambda L, F, m: L.matmul(m((2, 3, 4), 0), m((4, 2), 1))),
    ("addmm", lambda L, F, m: L.addmm(m((2,), 2), m((3, 4), 0), m((4, 2), 1))),
    ("baddbmm", lambda L, F, m: L.baddbmm(m((2, 3, 2), 2), m((2, 3, 4), 0), m((2, 4, 2), 1))),
    ("addbmm", lambda L, F, m: L.addbmm(m((3, 2), 2), m((2, 3, 4), 0), m((2, 4, 2), 1))),
    ("linear", lambda L, F, m: F.linear(m((3, 4), 0), m((5, 4), 1), m((5,), 2))),
    ("linear3d", lambda L, F, m: F.linear(m((2, 3, 4), 0), m((5, 4), 1))),
    ("conv1d", lambda L, F, m: F.conv1d(m((1, 2, 6), 0), m((3, 2, 3), 1), m((3,), 2))),
    ("conv2d", lambda L, F, m: F.conv2d(m((1, 2, 5, 5), 0), m((3, 2, 3, 3), 1))),
    ("conv3d", lambda L, F, m: F.conv3d(m((1, 2, 4, 4, 4), 0), m((3, 2, 3, 3, 3), 1))),
    ("conv_t1d", lambda L, F, m: F.conv_transpose1d(m((1, 2, 5), 0), m((2, 3, 3), 1))),
    ("conv_t2d", lambda L, F, m: F.conv_transpose2d(m((1, 2, 4, 4), 0), m((2, 3, 3, 3), 1))),
    ("prelu", lambda L, F, m: F.prelu(m((2, 3), 0), m((1,), 1))),
    (
        "sdpa",
        lambda L, F, m: F.scaled_dot_product_attention(
            m((1, 3, 4), 0), m((1, 3, 4), 1), m((1, 3, 4), 2)
        ),
    ),
    # fp32
    ("mse_loss", lambda L, F, m: F.mse_loss(m((6,), 0), m((6,), 1))),
    ("l1_loss", lambda L, F, m: F.l1_loss(m((6,), 0), m((6,), 1))),
    ("smooth_l1", lambda L, F, m: F.smooth_l1_loss(m((6,), 0), m((6,), 1))),
    ("huber", lambda L, F, m: F.huber_loss(m((6,), 0), m((6,), 1))),
    ("kl_div", lambda L, F, m: F.kl_div(m((6,), 0), m((6,), 1).abs(), reduction="sum")),
    ("cross_entropy", lambda L, F, m: F.cross_entropy(m((4, 5), 0), L.tensor([0, 2, 4, 1]))),
    ("nll_loss", lambda L, F, m: F.nll_loss(m((4, 5), 0), L.tensor([0, 2, 4, 1]))),
    ("bce", lambda L, F, m: F.binary_cross_entropy(m((6,), 0).sigmoid(), m((6,), 1).sigmoid())),
    (
        "bce_logits",
        lambda L, F, m: F.binary_cross_entropy_with_logits(m((6,), 0), m((6,), 1).sigmoid()),
    ),
    ("prod", lambda L, F, m: L.prod(m((6,), 0))),
    ("cdist", lambda L, F, m: L.cdist(m((3, 4), 0), m((2, 4), 1))),
    ("trace", lambda L, F, m: L.trace(m((3, 3), 0))),
    ("avg_pool3d", lambda L, F, m: F.avg_pool3d(m((1, 1, 4, 4, 4), 0), 2)),
    ("max_pool3d", lambda L, F, m: F.max_pool3d(m((1, 1, 4, 4, 4), 0), 2)),
    ("adaptive_avg3d", lambda L, F, m: F.adaptive_avg_pool3d(m((1, 1, 4, 4, 4), 0), 2)),
    ("pad_reflect", lambda L, F, m: F.pad(m((1, 2, 5), 0), (1, 1), mode="reflect")),
    ("pad_replicate", lambda L, F, m: F.pad(m((1, 2, 5), 0), (1, 1), mode="replicate")),
    ("inverse", lambda L, F, m: L.inverse(m((3, 3), 0) + 3 * L.eye(3))),
    ("linalg_inv", lambda L, F, m: L.linalg.inv(m((3, 3), 0) + 3 * L.eye(3))),
    # promote
    ("cat", lambda L, F, m: L.cat([m((2, 3), 0), m((2, 3), 1, "float32")])),
    ("stack", lambda L, F, m: L.stack([m((2, 3), 0), m((2, 3), 1)])),
    # on no list: the input dtype
    ("add", lambda L, F, m: m((3,), 0) + m((3,), 1)),
    ("relu", lambda L, F, m: F.relu(m((3,), 0))),
    ("softmax", lambda L, F, m: F.softmax(m((2, 3), 0), dim=1)),
    ("sum", lambda L, F, m: m((2, 3), 0).sum()),
    ("pad_const", lambda L, F, m: F.pad(m((1, 2, 5), 0), (1, 1))),
    ("layer_norm", lambda L, F, m: F.layer_norm(m((2, 4), 0), (4,))),
]


def _run_case(fn, lib, F, in_dtype, region_dtype, which):
    def make(shape, seed, dtype=None):
        return _pair(shape, seed, dtype or in_dtype)[which]

    with lib.autocast("cpu", dtype=region_dtype):
        return fn(lib, F, make)


@pytest.mark.parametrize("region", ["bfloat16", "float16"])
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_op_dtypes_and_values_match_torch(name, fn, in_dtype, region):
    if region == "float16" and in_dtype == "bfloat16" and name in ("cat", "stack"):
        # a bfloat16 tensor in a float16 region: torch's promote rule raises
        for lib, which in ((ember, 0), (torch, 1)):
            with pytest.raises(RuntimeError, match="prioritize"):
                _run_case(fn, lib, lib.nn.functional, in_dtype, getattr(lib, region), which)
        return
    e = _run_case(fn, ember, ember.nn.functional, in_dtype, getattr(ember, region), 0)
    t = _run_case(fn, torch, torch.nn.functional, in_dtype, getattr(torch, region), 1)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
    ev = e.detach().float().numpy()
    tv = t.detach().float().numpy()
    np.testing.assert_allclose(ev, tv, rtol=3e-2, atol=3e-2)


def _models():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(4 * 4 * 4, 16),
            nn.ReLU(),
            nn.Linear(16, 3),
        )

    te, tt = build(ember), build(torch)
    for pe, pt in zip(te.parameters(), tt.parameters()):
        with ember.no_grad():
            pe.copy_(ember.tensor(pt.detach().numpy()))
    return te, tt


def test_cnn_mlp_training_step_matches_torch():
    me, mt = _models()
    x = _np((4, 1, 8, 8), 5)
    y = np.array([0, 2, 1, 2])
    losses = []
    for lib, model in ((ember, me), (torch, mt)):
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        xs, ys = lib.tensor(x), lib.tensor(y)
        with lib.autocast(device_type="cpu", dtype=lib.bfloat16):
            out = model(xs)
            loss = lib.nn.functional.cross_entropy(out, ys)
        assert str(out.dtype).endswith("bfloat16")
        assert str(loss.dtype).endswith("float32")
        opt.zero_grad()
        loss.backward()
        grads = [p.grad.numpy().copy() for p in model.parameters()]
        assert all(str(p.grad.dtype).endswith("float32") for p in model.parameters())
        opt.step()
        losses.append((loss.item(), grads, [p.detach().numpy().copy() for p in model.parameters()]))
    (le, ge, pe), (lt, gt, pt) = losses
    assert abs(le - lt) < 2e-2 * max(1.0, abs(lt))
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(a, b, rtol=5e-2, atol=2e-2)
    for a, b in zip(pe, pt):
        np.testing.assert_allclose(a, b, rtol=5e-2, atol=5e-3)


def test_nested_and_disabled_regions_restore_state():
    for lib in (ember, torch):
        a = lib.ones(2, 2)
        assert not lib.is_autocast_enabled("cpu")
        with lib.autocast("cpu"):
            assert lib.is_autocast_enabled("cpu")
            assert (a @ a).dtype == lib.bfloat16
            with lib.autocast("cpu", enabled=False):
                assert not lib.is_autocast_enabled("cpu")
                assert (a @ a).dtype == lib.float32
                with lib.autocast("cpu", dtype=lib.float16):
                    assert lib.get_autocast_dtype("cpu") == lib.float16
                    assert (a @ a).dtype == lib.float16
                assert lib.get_autocast_dtype("cpu") == lib.bfloat16
            assert lib.is_autocast_enabled("cpu")
            assert (a @ a).dtype == lib.bfloat16
        assert not lib.is_autocast_enabled("cpu")
        assert (a @ a).dtype == lib.float32


def test_decorator_and_spellings():
    for lib in (ember, torch):

        @lib.autocast("cpu")
        def f(a, lib=lib):
            return a @ a, lib.is_autocast_enabled("cpu")

        out, on = f(lib.ones(2, 2))
        assert out.dtype == lib.bfloat16 and on
        assert not lib.is_autocast_enabled("cpu")
        with lib.amp.autocast(device_type="cpu"):
            assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype == lib.bfloat16
        with pytest.warns(FutureWarning, match="torch.cpu.amp.autocast"):
            region = lib.cpu.amp.autocast()
        with region:
            assert lib.get_autocast_dtype("cpu") == lib.bfloat16
            assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype == lib.bfloat16


def test_unsupported_dtype_disables_the_region_with_torchs_warning():
    messages = []
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.autocast("cpu", dtype=lib.float64):
                assert not lib.is_autocast_enabled("cpu")
        messages.append([str(x.message) for x in w])
    assert messages[0] == messages[1] and messages[0]


def test_state_is_thread_local():
    for lib in (ember, torch):
        seen = []

        def worker(lib=lib, seen=seen):
            a = lib.ones(2, 2)
            seen.append((lib.is_autocast_enabled("cpu"), (a @ a).dtype == lib.float32))

        with lib.autocast("cpu"):
            t = threading.Thread(target=worker)
            t.start()
            t.join()
        assert seen == [(False, True)]


def test_cache_reuses_one_cast_per_weight_and_is_cleared_on_exit():
    from ember_core._base import autocast as _autocast

    w = ember.randn(3, 3, requires_grad=True)
    x = ember.randn(3, 3)
    with ember.autocast("cpu"):
        assert ember.is_autocast_cache_enabled()
        y1 = x @ w
        y2 = w @ x
        assert len(_autocast._state.cache) == 1
        # both products hang off the same cast of w
        c1 = y1.grad_fn.next_functions[1][0]
        c2 = y2.grad_fn.next_functions[0][0]
        assert c1 is c2
        (y1.float().sum() + y2.float().sum()).backward()
    assert len(_autocast._state.cache) == 0
    ref = x.sum(0).reshape(3, 1).expand(3, 3) + x.sum(1).reshape(1, 3).expand(3, 3)
    np.testing.assert_allclose(w.grad.numpy(), ref.numpy(), rtol=2e-2, atol=5e-2)
    with ember.autocast("cpu", cache_enabled=False):
        assert not ember.is_autocast_cache_enabled()
        x @ w
        assert len(_autocast._state.cache) == 0
    assert ember.is_autocast_cache_enabled()


def _scaler_run(lib, grads_seq):
    p = lib.nn.Parameter(lib.ones(3))
    opt = lib.optim.SGD([p], lr=0.5)
    scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    out = []
    for g in grads_seq:
        opt.zero_grad()
        loss = (p * lib.tensor(g)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        out.append((scaler.get_scale(), p.detach().numpy().copy()))
    return scaler.is_enabled(), out, scaler.state_dict()


def test_grad_scaler_on_cpu_matches_torch():
    seq = [[1.0, 2.0, 3.0], [1.0, float("inf"), 0.0], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [2.0, 0, 1]]
    e_on, e_out, e_sd = _scaler_run(ember, seq)
    t_on, t_out, t_sd = _scaler_run(torch, seq)
    assert e_on and t_on
    for (se, pe), (st, pt) in zip(e_out, t_out):
        assert se == st
        np.testing.assert_allclose(pe, pt, rtol=1e-6)
    assert e_sd == t_sd
    disabled = ember.amp.GradScaler("cpu", enabled=False)
    assert not disabled.is_enabled() and disabled.get_scale() == 1.0
