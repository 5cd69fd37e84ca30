"""orthogonal(): orthonormality of every map, the Householder product against
NumPy's QR (LAPACK orgqr), gradients by finite differences, assignment, errors,
and PyTorch parity (values, gradients of `original`, state_dict keys, assignment)."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
from ember_nn.utils import parametrizations_orthogonal as PO
from ember_nn.utils.parametrizations import orthogonal


@pytest.mark.parametrize("shape", [(5, 5), (7, 3), (3, 7), (2, 4, 4)])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthonormal(shape, orthogonal_map):
    m = nn.Module()
    m.weight = nn.Parameter(ec.randn(*shape, dtype=ec.float64))
    orthogonal(m, orthogonal_map=orthogonal_map)
    w = to_numpy(m.weight)
    if shape[-2] < shape[-1]:
        w = np.swapaxes(w, -1, -2)
    eye = np.eye(w.shape[-1])
    np.testing.assert_allclose(
        np.swapaxes(w, -1, -2) @ w, np.broadcast_to(eye, w.shape[:-2] + eye.shape), atol=1e-10
    )


def test_householder_product_against_numpy_qr(rng):
    a = rng.standard_normal((6, 4))
    h, tau = np.linalg.qr(a, mode="raw")
    q_ref = np.linalg.qr(a)[0]  # Q = H_1 ... H_k, first k columns
    q = PO._householder_product(ec.tensor(h.T), ec.tensor(tau))
    np.testing.assert_allclose(to_numpy(q), q_ref, atol=1e-12)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_gradcheck(rng, orthogonal_map):
    orth = PO._Orthogonal(
        ec.zeros(4, 3, dtype=ec.float64), PO._OrthMaps[orthogonal_map], use_trivialization=False
    )
    x = ec.tensor(rng.standard_normal((4, 3)) * 0.5, requires_grad=True)
    assert ag.gradcheck(orth, (x,))


def test_assignment_and_errors():
    lin = orthogonal(nn.Linear(4, 4).double())
    q = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))[0]
    lin.weight = ec.tensor(q)
    np.testing.assert_allclose(to_numpy(lin.weight), q, atol=1e-12)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        orthogonal(nn.Linear(3, 3), "nope")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        orthogonal(nn.Linear(3, 3), "bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    frozen = orthogonal(nn.Linear(3, 3), orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="not possible to assign"):
        frozen.weight = ec.eye(3)


@pytest.mark.parity
@pytest.mark.parametrize("shape", [(5, 5), (6, 3), (3, 6)])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_parity(torch, rng, shape, orthogonal_map, triv):
    t = torch.nn.Linear(shape[1], shape[0], dtype=torch.float64)
    e = nn.Linear(shape[1], shape[0]).double()
    e.weight.data = ec.tensor(t.weight.detach().numpy())
    torch.nn.utils.parametrizations.orthogonal(
        t, orthogonal_map=orthogonal_map, use_trivialization=triv
    )
    orthogonal(e, orthogonal_map=orthogonal_map, use_trivialization=triv)
    sd = t.state_dict()
    assert list(e.state_dict()) == list(sd)
    e.load_state_dict({k: ec.tensor(v.numpy()) for k, v in sd.items()})
    with torch.no_grad():
        t.parametrizations.weight.original.add_(
            torch.tensor(0.1 * rng.standard_normal(tuple(t.parametrizations.weight.original.shape)))
        )
    e.parametrizations.weight.original.data = ec.tensor(
        t.parametrizations.weight.original.detach().numpy()
    )
    np.testing.assert_allclose(to_numpy(e.weight), to_numpy(t.weight), atol=1e-10)
    x = rng.standard_normal((4, shape[1]))
    t(torch.tensor(x)).pow(2).sum().backward()
    e(ec.tensor(x)).pow(2).sum().backward()
    np.testing.assert_allclose(
        to_numpy(e.parametrizations.weight.original.grad),
        to_numpy(t.parametrizations.weight.original.grad),
        atol=1e-9,
    )
    if not triv or shape[0] == shape[1]:  # (a non-square base is completed at random)
        q = rng.standard_normal(shape)
        try:
            t.weight = torch.tensor(q)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                e.weight = ec.tensor(q)
            return
        e.weight = ec.tensor(q)
        np.testing.assert_allclose(to_numpy(e.weight), to_numpy(t.weight), atol=1e-10)
