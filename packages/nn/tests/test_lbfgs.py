"""LBFGS: convergence to NumPy's least-squares solution, and the iterates,
losses and evaluation counts of PyTorch's LBFGS on a Rosenbrock problem and a
regression (with and without the strong-Wolfe line search, short history)."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn
from ember_nn import optim


def test_least_squares_converges_to_numpy_solution(rng):
    A = rng.standard_normal((30, 4))
    b = rng.standard_normal(30)
    w = nn.Parameter(ec.zeros(4, dtype=ec.float64))
    At, bt = ec.tensor(A), ec.tensor(b)
    opt = optim.LBFGS(
        [w],
        line_search_fn="strong_wolfe",
        max_iter=100,
        tolerance_grad=1e-12,
        tolerance_change=1e-14,
    )

    def closure():
        opt.zero_grad()
        loss = ((At @ w - bt) ** 2).sum()
        loss.backward()
        return loss

    first = opt.step(closure)
    assert first.item() == pytest.approx((b**2).sum())
    np.testing.assert_allclose(to_numpy(w), np.linalg.lstsq(A, b, rcond=None)[0], rtol=1e-6)


def test_errors():
    p = nn.Parameter(ec.zeros(2))
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [nn.Parameter(ec.zeros(1))]}])
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        p.grad = ec.ones(2)
        optim.LBFGS([p], line_search_fn="armijo").step(lambda: ec.tensor(1.0))
    with pytest.raises(ValueError, match="learning rate"):
        optim.LBFGS([p], lr=-1)


N_STEPS = 4


def _rosenbrock(lib, xy):
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _regression(lib, w, A, b):
    return ((A @ w[:-1] + w[-1] - b) ** 2).mean() + 0.1 * (w**4).sum()


@pytest.mark.parity
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("problem", ["rosenbrock", "regression"])
@pytest.mark.parametrize("history_size", [100, 3])
def test_matches_torch(torch, rng, line_search_fn, problem, history_size):
    A, b = rng.standard_normal((20, 4)), rng.standard_normal(20)

    def run(lib, optim_ns, make_param):
        x = make_param(np.array([-1.5, 2.0]) if problem == "rosenbrock" else np.zeros(5))
        opt = optim_ns.LBFGS(
            [x], lr=0.5, max_iter=15, history_size=history_size, line_search_fn=line_search_fn
        )
        At, bt = lib.tensor(A), lib.tensor(b)

        def closure():
            opt.zero_grad()
            if problem == "rosenbrock":
                loss = _rosenbrock(lib, x)
            else:
                loss = _regression(lib, x, At, bt)
            loss.backward()
            return loss

        out = []
        for _ in range(N_STEPS):
            loss = opt.step(closure)
            out.append((loss.item(), to_numpy(x).copy()))
        st = opt.state_dict()["state"][0]
        return out, st["func_evals"], st["n_iter"]

    ours = run(ec, optim, lambda v: nn.Parameter(ec.tensor(v)))
    theirs = run(torch, torch.optim, lambda v: torch.nn.Parameter(torch.tensor(v)))
    assert ours[1:] == theirs[1:]
    # 60 iterations on Rosenbrock's valley amplify last-bit differences (x**2 and
    # sums rounded differently) to ~1e-7; the iterates and counts still agree
    for (la, xa), (lb, xb) in zip(ours[0], theirs[0]):
        assert la == pytest.approx(lb, rel=1e-6, abs=1e-12)
        np.testing.assert_allclose(xa, xb, rtol=1e-6, atol=1e-10)
