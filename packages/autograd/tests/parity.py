"""A small helper for tests that compare whole programs with PyTorch: run
``program(ns, *leaves)`` with ember and with torch on the same float64 values
and compare the gradients (and, for the ember-only fallback, finite
differences)."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def run(ns, program, values):
    leaves = [ns.tensor(v, dtype=ns.float64, requires_grad=True) for v in values]
    loss = program(ns, *leaves)
    loss.backward()
    return [None if t.grad is None else np.array(t.grad.detach().numpy()) for t in leaves]


def check_gradients(program, *shapes, seed=0):
    """Gradients of ``program`` (a scalar) by ember agree with finite
    differences, and with PyTorch when it is installed."""
    rng = np.random.default_rng(seed)
    values = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]
    got = run(ec, program, values)
    leaves = tuple(ec.tensor(v, dtype=ec.float64, requires_grad=True) for v in values)
    assert ag.gradcheck(lambda *ts: program(ec, *ts), leaves)
    return got, values


def check_parity(program, *shapes, seed=0):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    values = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]
    got = run(ec, program, values)
    want = run(torch, program, values)
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None or not g.any(), f"leaf {k}: torch has no gradient"
        else:
            assert g is not None, f"leaf {k}: ember has no gradient"
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"leaf {k}")
