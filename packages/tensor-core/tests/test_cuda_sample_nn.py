"""grid_sample and the CTC loss on CUDA (csrc/cuda/sample_launch.c,
nn_sample.cuh) against the CPU kernels (csrc/cpu/nn/sampling.c), forward and the
backward ops called directly: every interpolation and padding mode with and
without align_corners, 2-D and 3-D, non-contiguous inputs, float16/bfloat16
(computed in float32 on both devices); CTC with padded and concatenated
targets, repeated symbols, empty inputs and targets, zero_infinity, one shared
or per-sample output gradient, targets long enough to need more than 48 KiB of
shared memory; and bad input: out-of-range targets raise at the next
synchronisation, mixed devices raise at the call.  Small shapes: the CPU
emulator of the driver runs these in a few seconds."""

import zlib

import numpy as np
import pytest
from cuda_helpers import CUDA, Spec, check_op, maker, values

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

TOL = {
    ec.float32: (2e-5, 2e-5),
    ec.float64: (1e-10, 1e-10),
    ec.float16: (1e-2, 1e-2),
    ec.bfloat16: (5e-2, 5e-2),
}


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _grid_case(dtype, nd, mode, padding, align, layout, rng):
    x_shape = (2, 3, 5, 6) if nd == 2 else (2, 2, 3, 4, 5)
    g_shape = (2, 4, 3, 2) if nd == 2 else (2, 2, 3, 2, 3)
    x = Spec(values(x_shape, dtype, rng), dtype, layout)
    # a little beyond [-1, 1]: the padding modes matter
    g = Spec(values(g_shape, dtype, rng, -1.3, 1.3), dtype, layout)
    y_shape = x_shape[:2] + g_shape[1:-1]
    gy = Spec(values(y_shape, dtype, rng), dtype, layout)

    def fn(x, g, gy):
        y = ec.grid_sampler(x, g, mode, padding, align)
        return y, ec._grid_sampler_backward(gy, x, g, mode, padding, align)

    return fn, maker(x, g, gy)


GRID_2D = [(m, p, a) for m in (0, 1, 2) for p in (0, 1, 2) for a in (False, True)]
GRID_3D = [(m, p, a) for m in (0, 1) for p in (0, 1, 2) for a in (False, True)]


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample_modes_and_paddings(dtype, nd):
    rng = _rng("grid", dtype, nd)
    for mode, padding, align in GRID_2D if nd == 2 else GRID_3D:
        fn, make = _grid_case(dtype, nd, mode, padding, align, "contiguous", rng)
        check_op(
            fn, make, op_name="grid_sampler", tol=TOL, where=f"{nd}-D {mode}/{padding}/{align}"
        )


@pytest.mark.parametrize("dtype", [ec.float16, ec.bfloat16], ids=str)
@pytest.mark.parametrize("layout", ["transposed", "stepped"])
def test_grid_sample_half_and_strided(dtype, layout):
    rng = _rng("grid-half", dtype, layout)
    for nd, mode in ((2, 0), (2, 2), (3, 0)):
        fn, make = _grid_case(dtype, nd, mode, 2, False, layout, rng)
        check_op(fn, make, op_name="grid_sampler", tol=TOL, where=f"{nd}-D mode {mode} {layout}")


def test_grid_sample_several_blocks():
    # 1200 positions: several blocks of the launch, atomics from all of them
    rng = _rng("grid-blocks")
    x = Spec(values((2, 2, 9, 11), ec.float32, rng), ec.float32)
    g = Spec(values((2, 20, 30, 2), ec.float32, rng, -1.1, 1.1), ec.float32)
    gy = Spec(values((2, 2, 20, 30), ec.float32, rng), ec.float32)
    for mode in (0, 2):
        check_op(
            lambda x, g, gy, mode=mode: (
                ec.grid_sampler(x, g, mode, 0, False),
                ec._grid_sampler_backward(gy, x, g, mode, 0, False),
            ),
            maker(x, g, gy),
            op_name="grid_sampler",
            tol=TOL,
            where=f"mode {mode}",
        )


def test_grid_sample_output_mask_and_public_form():
    rng = _rng("grid-mask")
    x = Spec(values((1, 2, 4, 4), ec.float32, rng), ec.float32, "transposed")
    g = Spec(values((1, 3, 5, 2), ec.float32, rng, -1, 1), ec.float32)
    gy = Spec(values((1, 2, 3, 5), ec.float32, rng), ec.float32)
    for mask in ((True, False), (False, True)):
        check_op(
            lambda x, g, gy, mask=mask: ec._grid_sampler_backward(gy, x, g, 0, 0, False, mask),
            maker(x, g, gy),
            op_name="grid_sampler",
            tol=TOL,
            where=f"output_mask {mask}",
        )
    check_op(
        lambda x, g: ec.grid_sample(
            x, g, mode="bicubic", padding_mode="border", align_corners=True
        ),
        maker(x, g),
        op_name="grid_sample",
        tol=TOL,
    )
    empty_grid = Spec(np.zeros((1, 0, 5, 2), np.float32), ec.float32)
    check_op(lambda x, g: ec.grid_sample(x, g), maker(x, empty_grid), op_name="grid_sample")


def test_affine_grid_into_grid_sample():
    rng = _rng("affine")
    theta = Spec(values((2, 2, 3), ec.float32, rng, -1, 1), ec.float32)
    theta3 = Spec(values((1, 3, 4), ec.float64, rng, -1, 1), ec.float64)
    x = Spec(values((2, 3, 6, 7), ec.float32, rng), ec.float32)
    x3 = Spec(values((1, 2, 3, 4, 5), ec.float64, rng), ec.float64)
    check_op(
        lambda th, x: ec.grid_sample(x, ec.affine_grid_generator(th, (2, 3, 4, 5), False)),
        maker(theta, x),
        op_name="affine_grid_generator",
        tol=TOL,
    )
    check_op(
        lambda th, x: ec.grid_sample(x, ec.affine_grid_generator(th, (1, 2, 2, 3, 4), True)),
        maker(theta3, x3),
        op_name="affine_grid_generator",
        tol=TOL,
    )


def test_grid_sample_refuses_mixed_devices():
    if CUDA == "cpu":
        pytest.skip("needs two devices")
    x = ec.zeros(1, 1, 2, 2, device=CUDA)
    with pytest.raises(RuntimeError, match="grid_sampler.*same device"):
        ec.grid_sample(x, ec.zeros(1, 1, 1, 2))


# ------------------------------------------------------------------ CTC


def _ctc_case(dtype, rng, T, N, C, targets, ilen, tlen, *, zero_inf=False, shared_grad=False):
    lp = Spec(values((T, N, C), dtype, rng, -2, 2), dtype)
    tg = Spec(np.asarray(targets, np.int64), ec.int64)
    go = Spec(values((1,) if shared_grad else (N,), dtype, rng, 0.5, 1.5), dtype)

    def fn(lp, tg, go):
        lsm = ec.log_softmax(lp, 2)
        nll, alpha = ec._ctc_loss(lsm, tg, ilen, tlen, 0, zero_inf)
        grad = ec._ctc_loss_backward(go, lsm, tg, ilen, tlen, nll, alpha, 0, zero_inf)
        return nll, alpha, grad

    return fn, maker(lp, tg, go)


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_ctc_forward_backward(dtype):
    rng = _rng("ctc", dtype)
    cases = {
        "padded, repeats": (12, 2, 6, [[1, 2, 2, 3], [4, 5, 1, 0]], [12, 10], [4, 3]),
        "concatenated": (9, 3, 5, [1, 1, 1, 2, 3, 4, 4, 2], [9, 7, 9], [3, 2, 3]),
        "empty target and input": (5, 3, 4, [[1, 2], [0, 0], [3, 3]], [5, 4, 0], [2, 0, 0]),
        "impossible (inf)": (3, 2, 4, [[1, 1, 1], [2, 3, 1]], [3, 3], [3, 3]),
        "wide classes": (6, 2, 40, [[5, 39, 17], [0, 0, 0]], [6, 5], [3, 2]),
    }
    for label, (T, N, C, tg, il, tl) in cases.items():
        for zero_inf, shared in ((False, False), (True, True)):
            fn, make = _ctc_case(
                dtype, rng, T, N, C, tg, il, tl, zero_inf=zero_inf, shared_grad=shared
            )
            check_op(fn, make, op_name="_ctc_loss", tol=TOL, where=f"{label} zi={zero_inf}")


@pytest.mark.parametrize("dtype", [ec.float16, ec.bfloat16], ids=str)
def test_ctc_loss_reduced_precision(dtype):
    rng = _rng("ctc-half", dtype)
    lp = Spec(values((8, 2, 5), dtype, rng, -2, 2), dtype, "transposed")
    tg = Spec(np.asarray([[1, 2, 3], [4, 4, 0]], np.int64), ec.int64)
    for red in ("none", "mean", "sum"):
        check_op(
            lambda lp, tg, red=red: ec.ctc_loss(
                ec.log_softmax(lp, 2), tg, ec.tensor([8, 7]), ec.tensor([3, 2]), reduction=red
            ),
            maker(lp, tg),
            op_name="ctc_loss",
            tol=TOL,
            where=f"reduction {red}",
        )


def test_ctc_long_targets_use_opt_in_shared_memory():
    """float64 targets of 1100 symbols: two beta rows and the symbol chains take
    ~53 KiB, beyond the default 48 KiB of one block."""
    rng = _rng("ctc-long")
    L, T, C = 1100, 1102, 3
    tg = np.tile([1, 2], (1, L // 2))  # no repeats: T = L + 2 steps suffice
    fn, make = _ctc_case(ec.float64, rng, T, 1, C, tg, [T], [L])
    check_op(fn, make, op_name="_ctc_loss", tol=TOL, where="long targets")


def test_ctc_bad_input_raises():
    if CUDA == "cpu":
        pytest.skip("device-side errors are CUDA's")
    lp = ec.zeros(4, 1, 3, device=CUDA).log_softmax(2)
    with pytest.raises(RuntimeError, match="out of bounds"):
        ec.ctc_loss(lp, ec.tensor([[1, 7]], device=CUDA), [4], [2])
        ec.cuda.synchronize()
    assert ec.arange(4, device=CUDA).sum().item() == 6  # still usable
    with pytest.raises(RuntimeError, match="ctc_loss.*same device"):
        ec.ctc_loss(lp, ec.tensor([[1, 2]]), [4], [2])
    with pytest.raises(RuntimeError, match="input_lengths"):
        ec.ctc_loss(lp, ec.tensor([[1, 2]], device=CUDA), [5], [2])


def test_max_unpool_bad_index_raises_at_the_next_synchronisation():
    if CUDA == "cpu":
        pytest.skip("device-side errors are CUDA's")
    x = ec.ones(1, 1, 2, 2, device=CUDA)
    idx = ec.tensor([[[[0, 3], [5, 40]]]], device=CUDA)
    with pytest.raises(RuntimeError, match="out of bounds"):
        ec.max_unpool(x, idx, (4, 4))
        ec.cuda.synchronize()
    ok = ec.max_unpool(x, ec.tensor([[[[0, 3], [5, 15]]]], device=CUDA), (4, 4))
    assert ok.sum().item() == 4.0 and ok.flatten()[15].item() == 1.0
