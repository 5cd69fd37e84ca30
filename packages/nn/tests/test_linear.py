"""Identity, Linear, Bilinear, LazyLinear: NumPy values, finite-difference
gradients, and PyTorch parity with copied weights."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn


def test_identity_returns_its_input_and_ignores_arguments():
    x = ec.randn(3, 4)
    assert nn.Identity(54, unused="x")(x) is x


def test_linear_matches_numpy(rng):
    m = nn.Linear(5, 3)
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    y = m(ec.tensor(x))
    w, b = to_numpy(m.weight), to_numpy(m.bias)
    np.testing.assert_allclose(to_numpy(y), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert m.weight.shape == (3, 5) and m.bias.shape == (3,)
    m2 = nn.Linear(5, 3, bias=False)
    assert m2.bias is None and list(m2.state_dict()) == ["weight"]
    np.testing.assert_allclose(
        to_numpy(m2(ec.tensor(x[0]))), x[0] @ to_numpy(m2.weight).T, rtol=1e-5, atol=1e-6
    )


def test_linear_gradcheck():
    m = nn.Linear(4, 3).double()
    x = ec.randn(2, 4, dtype=ec.float64, requires_grad=True)
    assert ag.gradcheck(lambda x, w, b: nn.functional.linear(x, w, b), (x, m.weight, m.bias))


def test_linear_bad_input_names_shapes():
    with pytest.raises(Exception, match="5|4"):
        nn.Linear(5, 3)(ec.randn(2, 4))


def test_bilinear_matches_numpy(rng):
    m = nn.Bilinear(3, 4, 2)
    x1 = rng.standard_normal((5, 3)).astype(np.float32)
    x2 = rng.standard_normal((5, 4)).astype(np.float32)
    y = to_numpy(m(ec.tensor(x1), ec.tensor(x2)))
    expected = np.einsum("ni,kij,nj->nk", x1, to_numpy(m.weight), x2) + to_numpy(m.bias)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_lazy_linear_materializes_on_first_call():
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    y = m(ec.randn(2, 7))
    assert type(m) is nn.Linear and m.in_features == 7 and m.weight.shape == (3, 7)
    assert y.shape == (2, 3)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad


@pytest.mark.parity
@pytest.mark.parametrize(
    "build, shapes",
    [
        (lambda N: N.Identity(), [(3, 4)]),
        (lambda N: N.Linear(5, 3), [(4, 5)]),
        (lambda N: N.Linear(5, 3), [(2, 3, 5)]),
        (lambda N: N.Linear(5, 3), [(5,)]),
        (lambda N: N.Linear(5, 3, bias=False), [(4, 5)]),
        (lambda N: N.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
        (lambda N: N.Bilinear(3, 4, 2, bias=False), [(2, 5, 3), (2, 5, 4)]),
    ],
)
def test_parity(torch, rng, build, shapes):
    check_layer(torch, build, [rng.standard_normal(s) for s in shapes])


@pytest.mark.parity
def test_lazy_linear_parity(torch, rng):
    x = rng.standard_normal((4, 6))
    tm = torch.nn.LazyLinear(3).double()
    tm(torch.from_numpy(x))
    em = nn.LazyLinear(3).double()
    em.load_state_dict({k: ec.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert em.weight.shape == (3, 6)
    np.testing.assert_allclose(
        to_numpy(em(ec.tensor(x))), tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-12
    )
