"""Copies between devices and dtypes, and the shape ops that copy, on CUDA.

Host->device, device->host and device->device copies of every dtype into every
dtype (fp16/bf16 included), from and into non-contiguous tensors, broadcasting
copy_, .to()/.cuda()/.cpu() forms, pinned memory with non_blocking=True (async)
and pageable memory (staged), clone/contiguous, and cat/stack/split/chunk/flip/
roll/repeat/tile/tril/triu/diag/diagonal/diag_embed/rot90/repeat_interleave/
narrow/unfold/movedim/constant_pad_nd/one_hot/arange/linspace/full/eye on CUDA
against the CPU.
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import (
    ALL_DTYPES,
    CUDA,
    LARGE,
    SELFTEST,
    Spec,
    compare,
    equal,
    maker,
    run_table,
    synchronize,
    tensor,
    to_np,
    values,
)

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
def test_copy_casts_between_every_dtype(src):
    """CPU->CUDA cast copy, CUDA->CUDA cast, CUDA->CPU cast: all equal the CPU cast."""
    rng = _rng("cast", src)
    vals = values((3, 4, 5), src, rng, -200, 200)
    if src.is_floating_point:
        vals = vals.astype(np.float64)
        vals[0, 0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.5]
        vals = vals.astype(np.float32 if src is ec.bfloat16 else src.numpy)
    for dst in ALL_DTYPES:
        for layout in ("contiguous", "transposed", "stepped"):
            cpu = tensor(vals, src, "cpu", layout)
            want = cpu.to(dst)
            if dst.is_floating_point or not src.is_floating_point:
                pass
            else:
                # float -> int of nan/inf/out-of-range is undefined (C and PyTorch alike)
                v = to_np(cpu)
                low = 0 if dst in (ec.uint8, ec.bool) else -100
                keep = np.isfinite(v) & (v >= low) & (v < 100)
                keep_t = ec.tensor(keep)
                want = want[keep_t]
            g = tensor(vals, src, CUDA, layout)
            for label, got in (
                ("cuda->cuda", g.to(dst)),
                ("cpu->cuda", cpu.to(CUDA, dst)),
                ("cuda->cpu", g.to("cpu", dst)),
            ):
                if not (dst.is_floating_point or not src.is_floating_point):
                    got = got[keep_t.to(got.device)]
                compare(
                    got,
                    want,
                    where=f"{src}->{dst} {layout} {label}",
                    check_device=label != "cuda->cpu",
                )


def _on_cpu_then_back(result):
    # cpu()'s result must be on the CPU; it is compared on CUDA like every other case
    assert result.device.type == "cpu", f"cpu() gave a tensor on {result.device}"
    return result.to(CUDA)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_copies_between_devices_and_layouts(dtype):
    rng = _rng("copies", dtype)
    vals = values((LARGE,), dtype, rng)
    small = values((6, 7, 8), dtype, rng)
    cases = [
        ("to(cuda) large", lambda x: x.to(CUDA), maker(Spec(vals, dtype)), "to"),
        ("cpu() large", lambda x: x.cpu(), maker(Spec(vals, dtype)), "cpu", _on_cpu_then_back),
        ("clone transposed", lambda x: x.clone(), maker(Spec(small, dtype, "transposed")), "clone"),
        (
            "contiguous of transposed",
            lambda x: x.contiguous(),
            maker(Spec(small, dtype, "transposed")),
            "contiguous",
        ),
        (
            "contiguous of stepped",
            lambda x: x.contiguous(),
            maker(Spec(small, dtype, "stepped")),
            "contiguous",
        ),
        (
            "contiguous of expanded",
            lambda x: x.contiguous(),
            maker(Spec(small, dtype, "expanded")),
            "contiguous",
        ),
        (
            "t().contiguous() large",
            lambda x: x.view(1031, -1).t().contiguous(),
            maker(Spec(values((1031 * 1017,), dtype, rng), dtype)),
            "contiguous",
        ),
        (
            "copy_ into transposed",
            lambda x, y: x.copy_(y),
            maker(Spec(small, dtype, "transposed"), Spec(small, dtype)),
            "copy_",
        ),
        (
            "copy_ broadcast",
            lambda x, y: x.copy_(y),
            maker(Spec(small, dtype), Spec(small[:1, :1], dtype)),
            "copy_",
        ),
        (
            "copy_ into stepped from offset",
            lambda x, y: x.copy_(y),
            maker(Spec(small, dtype, "stepped"), Spec(small, dtype, "offset")),
            "copy_",
        ),
    ]
    run_table(f"copies ({dtype})", cases, dtype)


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16, ec.int64, ec.bool], ids=str)
def test_copy_across_devices_both_ways(dtype):
    """copy_ from a CPU tensor into a CUDA one and back (non_blocking both ways)."""
    vals = values((257, 129), dtype, _rng("xdev", dtype))
    cpu = ec.tensor(vals, dtype=dtype)
    g = ec.empty((129, 257), dtype=dtype, device=CUDA).t()  # non-contiguous destination
    g.copy_(cpu)
    compare(g, cpu, where="copy_ CPU->CUDA into a transposed destination")
    back = ec.empty((257, 129), dtype=dtype)
    back.copy_(g, non_blocking=True)
    synchronize()
    compare(back, cpu, where="copy_ CUDA->CPU non_blocking", check_device=False)
    h = ec.empty((257, 129), dtype=ec.float64)
    h.copy_(g)  # cast on the way
    compare(h, cpu.double(), where="copy_ CUDA->CPU with a cast", check_device=False)


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_cuda_and_cpu_methods_and_device_attributes():
    x = ec.arange(12).view(3, 4)
    g = x.cuda()
    assert g.is_cuda and not x.is_cuda
    assert g.device == ec.device("cuda", 0) and g.device.type == "cuda"
    assert str(g.device) == "cuda:0"
    assert g.to("cuda") is g  # nothing to do: the same tensor, as in PyTorch
    assert g.cuda() is g
    assert equal(g.cpu(), x)
    assert g.cpu().device.type == "cpu"
    assert ec.tensor([1, 2], device="cuda:0").device == ec.device("cuda:0")
    assert ec.ones(2, device=ec.device("cuda")).is_cuda
    assert ec.zeros(2, 3, device=0).is_cuda  # an int device is a CUDA index
    assert x.to(g).is_cuda  # to(other): other's device and dtype
    assert x.to(g.double()).dtype == ec.float64
    assert g.new_zeros(2).is_cuda and ec.zeros_like(g).is_cuda and ec.empty_like(g).is_cuda
    assert ec.full_like(g, 7).is_cuda and ec.rand_like(g.float()).is_cuda


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_pinned_memory_and_async_copies():
    x = ec.arange(1 << 22, dtype=ec.float32)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and not p.is_cuda
    assert equal(p, x)
    assert ec.empty(8, pin_memory=True).is_pinned()
    s = ec.cuda.Stream()
    with ec.cuda.stream(s):
        g = p.to("cuda", non_blocking=True)
        y = g * 2
    s.synchronize()
    assert equal(y.cpu(), x * 2)
    # device -> pinned host, non_blocking: valid after synchronising the stream
    out = ec.empty(1 << 22, dtype=ec.float32, pin_memory=True)
    with ec.cuda.stream(s):
        out.copy_(y, non_blocking=True)
    s.synchronize()
    assert equal(out, x * 2)
    # from pageable memory, non_blocking=True is still correct (staged)
    g2 = x.to("cuda", non_blocking=True)
    ec.cuda.synchronize()
    assert equal(g2.cpu(), x)


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_non_blocking_h2d_from_pinned_returns_before_the_copy_is_done():
    """An async copy of 256 MB from pinned memory is queued, not waited for:
    enqueueing it takes far less than the copy itself."""
    n = 64 << 20
    p = ec.empty(n, dtype=ec.float32, pin_memory=True)
    ec.cuda.synchronize()
    g = ec.empty(n, dtype=ec.float32, device="cuda")
    import time

    t0 = time.perf_counter()
    g.copy_(p, non_blocking=True)
    t_enqueue = time.perf_counter() - t0
    ec.cuda.synchronize()
    t_total = time.perf_counter() - t0
    assert t_enqueue < 0.5 * t_total, (t_enqueue, t_total)


def shape_cases(dtype, rng):
    a = values((4, 5, 6), dtype, rng)
    b = values((4, 3, 6), dtype, rng)
    x = Spec(a, dtype)
    xt = Spec(a, dtype, "transposed")
    y = Spec(b, dtype)
    sq = Spec(values((7, 7), dtype, rng), dtype)
    sqt = Spec(values((7, 7), dtype, rng), dtype, "transposed")
    v = Spec(values((5,), dtype, rng), dtype)
    return [
        ("cat dim=1", lambda x, y: ec.cat([x, y], 1), maker(x, y), "cat"),
        ("cat transposed dim=0", lambda x, y: ec.cat([x, x], 0), maker(xt, y), "cat"),
        ("cat with empty", lambda x: ec.cat([x, x[:0]], 0), maker(x), "cat"),
        (
            "cat out=",
            lambda x, y: ec.cat([x, y], 1, out=ec.empty(0, dtype=x.dtype, device=x.device)),
            maker(x, y),
            "cat",
        ),
        ("stack dim=2", lambda x: ec.stack([x, x * 1, x], 2), maker(x), "stack"),
        (
            "hstack vstack dstack",
            lambda x: (ec.hstack([x, x]), ec.vstack([x, x]), ec.dstack([x, x])),
            maker(x),
            "hstack",
        ),
        ("split", lambda x: ec.split(x, 2, 1), maker(x), "split"),
        ("chunk", lambda x: ec.chunk(x, 3, 2), maker(x), "chunk"),
        ("tensor_split", lambda x: ec.tensor_split(x, [1, 4], 1), maker(xt), "tensor_split"),
        ("flip", lambda x: ec.flip(x, (0, 2)), maker(xt), "flip"),
        ("fliplr flipud", lambda x: (ec.fliplr(x), ec.flipud(x)), maker(x), "fliplr"),
        ("roll", lambda x: ec.roll(x, (2, -1), (0, 2)), maker(x), "roll"),
        ("roll flat", lambda x: ec.roll(x, 7), maker(xt), "roll"),
        ("repeat", lambda x: x.repeat(2, 1, 3), maker(xt), "repeat"),
        ("tile", lambda x: ec.tile(x, (2,)), maker(x), "tile"),
        (
            "repeat_interleave",
            lambda x: ec.repeat_interleave(x, 3, 1),
            maker(x),
            "repeat_interleave",
        ),
        (
            "repeat_interleave tensor",
            lambda x, r: ec.repeat_interleave(x, r, 0),
            maker(x, Spec(np.array([0, 1, 2, 3]), ec.int64)),
            "repeat_interleave",
        ),
        ("tril triu", lambda s: (ec.tril(s), ec.triu(s, 1), ec.tril(s, -2)), maker(sqt), "tril"),
        ("tril_ triu_", lambda s: (s.clone().tril_(1), s.clone().triu_(-1)), maker(sq), "tril_"),
        ("diag", lambda s, v: (ec.diag(s), ec.diag(s, 2), ec.diag(v, -1)), maker(sqt, v), "diag"),
        ("diagonal", lambda x: ec.diagonal(x, 1, 0, 2).contiguous(), maker(x), "diagonal"),
        ("diag_embed", lambda x: ec.diag_embed(x), maker(x), "diag_embed"),
        ("diagflat", lambda v: ec.diagflat(v, 1), maker(v), "diagflat"),
        ("rot90", lambda x: ec.rot90(x, 1, (0, 2)).contiguous(), maker(x), "rot90"),
        ("narrow", lambda x: ec.narrow(x, 1, 1, 3).contiguous(), maker(x), "narrow"),
        ("unfold", lambda x: x.unfold(2, 3, 2).contiguous(), maker(x), "unfold"),
        ("movedim", lambda x: ec.movedim(x, 0, 2).contiguous(), maker(x), "movedim"),
        ("reshape of transposed", lambda x: x.reshape(-1), maker(xt), "reshape"),
        ("flatten", lambda x: ec.flatten(x, 1), maker(xt), "flatten"),
        (
            "constant_pad_nd",
            lambda x: ec.constant_pad_nd(x, (1, 2, 0, 1), 0),
            maker(x),
            "constant_pad_nd",
        ),
        ("fill_ transposed", lambda x: x.clone().t().fill_(3), maker(sq), "fill_"),
        ("zero_", lambda x: x.clone().zero_(), maker(xt), "zero_"),
        ("fill_diagonal_", lambda s: s.clone().fill_diagonal_(2), maker(sq), "fill_diagonal_"),
        ("masked where", lambda x: ec.where(x > 0, x, ec.zeros_like(x)), maker(x), "where"),
    ]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_shape_ops(dtype):
    run_table(f"shape ops on CUDA ({dtype})", shape_cases(dtype, _rng("shape", dtype)), dtype)


@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.bfloat16, ec.bool], ids=str)
def test_creation_ops_on_cuda(dtype):
    """Creation ops with device='cuda' equal the CPU ones (deterministic ones)."""

    def make(dev):
        return (dev,), {}

    cases = [
        ("zeros", lambda d: ec.zeros(3, 4, dtype=dtype, device=d), make, "zeros"),
        ("ones", lambda d: ec.ones(5, dtype=dtype, device=d), make, "ones"),
        ("full", lambda d: ec.full((2, 3), 1, dtype=dtype, device=d), make, "full"),
        ("empty shape", lambda d: ec.empty(2, 0, 3, dtype=dtype, device=d), make, "empty"),
        ("eye", lambda d: ec.eye(4, 6, dtype=dtype, device=d), make, "eye"),
        ("tensor", lambda d: ec.tensor([[1, 0], [3, 4]], dtype=dtype, device=d), make, "tensor"),
        (
            "empty_strided filled",
            lambda d: ec.empty_strided((2, 3), (1, 2), dtype=dtype, device=d).fill_(1),
            make,
            "empty_strided",
        ),
        (
            "as_tensor",
            lambda d: ec.as_tensor([[1, 0], [2, 3]], dtype=dtype, device=d),
            make,
            "as_tensor",
        ),
        (
            "zeros_like ones_like full_like empty_like",
            lambda d: (
                ec.zeros_like(ec.empty(2, 3, device=d), dtype=dtype),
                ec.ones_like(ec.empty(2, device=d), dtype=dtype),
                ec.full_like(ec.empty(3, device=d), 1, dtype=dtype),
                ec.empty_like(ec.empty(3, device=d), dtype=dtype).fill_(0),
            ),
            make,
            "zeros_like",
        ),
        (
            "scalar_tensor",
            lambda d: ec.scalar_tensor(1, dtype=dtype, device=d),
            make,
            "scalar_tensor",
        ),
    ]
    if dtype is not ec.bool:
        cases += [
            ("arange", lambda d: ec.arange(0, 50, 3, dtype=dtype, device=d), make, "arange"),
            ("arange large", lambda d: ec.arange(LARGE, device=d).to(dtype), make, "arange"),
            ("linspace", lambda d: ec.linspace(-1, 5, 33, dtype=dtype, device=d), make, "linspace"),
            ("tril_indices", lambda d: ec.tril_indices(5, 4, 1, device=d), make, "tril_indices"),
            ("triu_indices", lambda d: ec.triu_indices(4, 6, -1, device=d), make, "triu_indices"),
        ]
    if dtype.is_floating_point:
        cases.append(
            ("logspace", lambda d: ec.logspace(-2, 2, 9, dtype=dtype, device=d), make, "logspace")
        )
    if dtype is ec.int64:
        cases.append(
            (
                "one_hot",
                lambda x: ec.one_hot(x, 7),
                maker(Spec(np.array([0, 3, 6, 2]), ec.int64)),
                "one_hot",
            )
        )
    run_table(f"creation on CUDA ({dtype})", cases, dtype)


def view_cases(dtype, rng):
    a = values((4, 1, 6), dtype, rng)
    x = Spec(a, dtype)
    xt = Spec(a, dtype, "transposed")
    m = Spec(values((6, 6), dtype, rng), dtype)
    v = Spec(values((5,), dtype, rng), dtype)
    return [
        ("view", lambda x: x.view(2, 12) * 1, maker(x), "view"),
        (
            "view_as reshape_as",
            lambda x, m: (x.view_as(m[:4, :]), x.reshape_as(m[:4, :])),
            maker(x, m),
            "view_as",
        ),
        (
            "permute transpose t swap",
            lambda x, m: (
                x.permute(2, 0, 1).contiguous(),
                x.transpose(0, 2).contiguous(),
                m.t().contiguous(),
                ec.swapaxes(x, 0, 1).contiguous(),
                ec.swapdims(x, 1, 2).contiguous(),
            ),
            maker(xt, m),
            "permute",
        ),
        (
            "in-place view ops",
            lambda x, m: (
                x.clone().t_() if x.dim() == 2 else x.clone().transpose_(0, 2),
                m.clone().t_(),
                x.clone().squeeze_(1),
                x.clone().unsqueeze_(0),
                x.clone().swapaxes_(0, 2),
                x.clone().swapdims_(0, 1),
            ),
            maker(x, m),
            "transpose_",
        ),
        (
            "squeeze unsqueeze",
            lambda x: (ec.squeeze(x), ec.squeeze(x, 1), ec.unsqueeze(x, 3)),
            maker(xt),
            "squeeze",
        ),
        (
            "expand expand_as broadcast_to",
            lambda x, v: (
                x.expand(4, 3, 6).contiguous(),
                v.expand_as(ec.empty(2, 5, device=v.device)),
                ec.broadcast_to(v, (3, 5)).clone(),
            ),
            maker(x, v),
            "expand",
        ),
        (
            "select unbind narrow",
            lambda x: (ec.select(x, 2, 3), ec.unbind(x, 0)),
            maker(xt),
            "select",
        ),
        (
            "as_strided",
            lambda m: ec.as_strided(m, (3, 3), (1, 6), 2).contiguous(),
            maker(m),
            "as_strided",
        ),
        (
            "as_strided_",
            lambda m: m.clone().as_strided_((2, 2), (6, 1)).contiguous(),
            maker(m),
            "as_strided_",
        ),
        (
            "alias detach",
            lambda x: (ec.alias(x) + 0, x.detach() * 1, x.clone().detach_()),
            maker(x),
            "alias",
        ),
        (
            "ravel unflatten",
            lambda x: (ec.ravel(x), ec.unflatten(x, 2, (2, 3))),
            maker(xt),
            "ravel",
        ),
        (
            "split_with_sizes hsplit vsplit dsplit",
            lambda m, x: (
                ec.split_with_sizes(m, [1, 5]),
                ec.hsplit(m, 2),
                ec.vsplit(m, 3),
                ec.dsplit(x, [2]),
            ),
            maker(m, x),
            "split_with_sizes",
        ),
        (
            "atleast",
            lambda v: (ec.atleast_1d(v), ec.atleast_2d(v), ec.atleast_3d(v)),
            maker(v),
            "atleast_1d",
        ),
        ("block_diag", lambda m, v: ec.block_diag(m, v.view(1, 5)), maker(m, v), "block_diag"),
        (
            "cartesian_prod combinations",
            lambda v: (ec.cartesian_prod(v, v[:2]), ec.combinations(v, 2)),
            maker(v),
            "cartesian_prod",
        ),
        (
            "column_stack vstack dstack",
            lambda v: (ec.column_stack([v, v]), ec.vstack([v, v]), ec.dstack([v, v])),
            maker(v),
            "column_stack",
        ),
        (
            "resize_ resize_as_",
            lambda m, v: (
                m.clone().resize_(3, 2),
                v.clone().resize_as_(ec.empty(1, 5, device=v.device)),
            ),
            maker(m, v),
            "resize_",
        ),
        ("contiguous clone", lambda x: (x.contiguous(), ec.clone(x)), maker(xt), "contiguous"),
        ("flipud", lambda m: ec.flipud(m), maker(m), "flipud"),
        ("triu_", lambda m: m.clone().triu_(1), maker(m), "triu_"),
        (
            "copy_ cast",
            lambda m: ec.empty(6, 6, dtype=ec.float64, device=m.device).copy_(m),
            maker(m),
            "copy_",
        ),
        ("_to_copy", lambda m: m.to(ec.float32), maker(m), "_to_copy"),
        (
            "is_same_size is_nonzero",
            lambda m: (ec.is_same_size(m, m), ec.is_nonzero(m[0, 0] * 0 + 1)),
            maker(m),
            "is_same_size",
        ),
        (
            "positive isreal",
            lambda m: (ec.positive(m) if m.dtype is not ec.bool else m, ec.isreal(m)),
            maker(m),
            "positive",
        ),
    ]


@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.bfloat16, ec.bool, ec.uint8], ids=str)
def test_views_and_composites(dtype):
    run_table(f"views on CUDA ({dtype})", view_cases(dtype, _rng("views", dtype)), dtype)


CREATION_OPS = (
    "zeros",
    "ones",
    "full",
    "empty",
    "eye",
    "tensor",
    "scalar_tensor",
    "arange",
    "linspace",
    "logspace",
    "tril_indices",
    "triu_indices",
    "one_hot",
    "empty_strided",
    "as_tensor",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
)
