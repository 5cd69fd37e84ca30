"""Anti-aliased interpolate (ember_core._ops.nn.resample_aa): the weight matrices against
hand-computed PIL-style filters, values against NumPy products, errors, and
PyTorch parity (parity marker)."""

import numpy as np
import pytest

import ember_core as ec
from ember_core._ops.nn import resample_aa as aa


def test_weights_rows_sum_to_one_and_match_filters():
    m = aa.weight_matrix("bilinear", 8, 4, False, None, np.float64)
    np.testing.assert_allclose(m.sum(1), 1.0)
    # halving: the triangle stretched by 2 -> 1/8, 3/8, 3/8, 1/8 inside the image
    np.testing.assert_allclose(m[1, 1:5], np.array([1, 3, 3, 1]) / 8)
    # at the border the window is cut and renormalised
    np.testing.assert_allclose(m[0, :3], np.array([3, 3, 1]) / 7)
    c = aa.weight_matrix("bicubic", 8, 4, False, None, np.float64)
    # output 1 is centred at 3 and reads pixels 0..6 (support 2 * 2), pixel centres j + 0.5
    keys = aa._cubic((np.arange(0, 7) + 0.5 - 3.0) / 2.0)  # Keys' a = -0.5, stretched by 2
    np.testing.assert_allclose(c[1, :7], keys / keys.sum())
    assert c[1, 7] == 0


def test_values_are_separable_products():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 7))
    out = ec.interpolate(ec.tensor(x), size=(4, 5), mode="bicubic", antialias=True)
    mh = aa.weight_matrix("bicubic", 9, 4, False, None, np.float64)
    mw = aa.weight_matrix("bicubic", 7, 5, False, None, np.float64)
    np.testing.assert_allclose(out.numpy(), mh @ x @ mw.T, atol=1e-12)


def test_errors():
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        ec.interpolate(ec.ones(1, 1, 4, 4), size=(0, 3), mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match="float32 and float64"):
        ec.interpolate(ec.ones(1, 1, 4, 4, dtype=ec.int64), size=2, mode="bilinear", antialias=True)


@pytest.mark.parity
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "shape,kw",
    [
        ((2, 3, 17, 23), {"size": (5, 7)}),
        ((1, 2, 10, 12), {"scale_factor": 0.37}),
        ((1, 2, 5, 6), {"size": (11, 13)}),
        ((1, 1, 9, 9), {"size": (4, 3), "align_corners": True}),
        ((1, 1, 20, 20), {"scale_factor": 0.3, "recompute_scale_factor": True}),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_parity(mode, shape, kw, dtype):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    t = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, antialias=True, **kw)
    e = ec.interpolate(ec.tensor(x), mode=mode, antialias=True, **kw)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-5 if dtype == "float32" else 1e-12)
