"""Every formula of the derivative table (_derivatives.py) against finite
differences (gradcheck, gradgradcheck in float64) and against PyTorch's
gradients (parity), driven by the table itself: an entry without a case in
op_cases.py fails test_every_formula_has_cases."""

import numpy as np
import pytest
from op_cases import CASES, build, make_values, rng_for

import ember_autograd as ag
import ember_core as ec

# Formulas other helpers register in their own modules are tested by their own files.
OWN_MODULE = "ember_autograd._derivatives"

# the float32 cases (_to_copy, dtype mixes) warn by design
FLOAT32_WARNING = "ignore:Input #.* requires gradient and is not a double precision"


def _own_entries():
    return sorted(op.name for op, f in ag.DERIVATIVES.items() if f.fn.__module__ == OWN_MODULE)


def test_every_formula_has_cases():
    covered = {c.op for c in CASES}
    missing = [n for n in _own_entries() if n not in covered]
    assert missing == [], f"derivative-table entries without a case in op_cases.py: {missing}"


def test_every_differentiable_op_has_a_formula():
    missing = [
        name
        for name, op in ec.OPS.items()
        if op.differentiable
        and not op.composite
        and name not in ag.DERIVATIVES
        and not (op.inplace_of and op.inplace_of in ag.DERIVATIVES)
    ]
    assert missing == []


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def ember_inputs(case):
    if case.skip_reason():
        pytest.skip(case.skip_reason())
    rng = rng_for(case)
    return tuple(build(ec, spec, make_values(spec, rng)) for spec in case.inputs)


def _run(case, inputs):
    return case.call(ec, inputs)


GRADCHECK = [c for c in CASES if c.gradcheck]


@pytest.mark.filterwarnings(FLOAT32_WARNING)
@pytest.mark.parametrize("case", GRADCHECK, ids=[c.id for c in GRADCHECK])
def test_gradcheck(case):
    inputs = ember_inputs(case)
    assert ag.gradcheck(
        lambda *ts: _run(case, ts), inputs, eps=case.eps, atol=case.atol, rtol=case.rtol
    )


GRADGRAD = [c for c in CASES if c.gradcheck and c.gradgrad]


@pytest.mark.filterwarnings(FLOAT32_WARNING)
@pytest.mark.parametrize("case", GRADGRAD, ids=[c.id for c in GRADGRAD])
def test_gradgradcheck(case):
    inputs = ember_inputs(case)
    assert ag.gradgradcheck(
        lambda *ts: _run(case, ts), inputs, eps=case.eps, atol=case.atol, rtol=case.rtol
    )


# ------------------------------------------------------------------ parity


def _outputs(out):
    out = out if isinstance(out, tuple) else (out,)
    return [o for o in out if o.dtype.is_floating_point and o.requires_grad]


def _np(t):
    if isinstance(t, ec.Tensor):
        return np.asarray(t.detach().numpy(), dtype=np.float64)
    return np.asarray(t.detach().numpy(force=True), dtype=np.float64)  # torch (ZeroTensors too)


def _grads(ns, grad_fn, case, values, grad_out_values, second_values):
    """(outputs, first-order grads, second-order grads) of one library."""
    inputs = [build(ns, spec, v) for spec, v in zip(case.inputs, values)]
    outs = _outputs(case.call(ns, inputs, torch=ns is not ec))
    diff = [t for t in inputs if t.requires_grad]
    gos = [ns.tensor(g, dtype=o.dtype) for g, o in zip(grad_out_values, outs)]
    firsts = grad_fn(outs, diff, gos, create_graph=True, allow_unused=True)
    seconds = None
    pairs = [
        (g, ns.tensor(w, dtype=g.dtype))
        for g, w in zip(firsts, second_values)
        if g is not None and g.requires_grad
    ]
    if pairs:
        try:
            seconds = grad_fn([g for g, _ in pairs], diff, [w for _, w in pairs], allow_unused=True)
        except RuntimeError as exc:
            if ns is ec or "not implemented" not in str(exc):
                raise
            # torch has no double backward here (e.g. hardsigmoid): first order only
    return outs, firsts, seconds


PARITY = [c for c in CASES if c.parity]


@pytest.mark.parity
@pytest.mark.parametrize("case", PARITY, ids=[c.id for c in PARITY])
def test_parity_with_torch(case):
    torch = pytest.importorskip("torch")
    if case.skip_reason():
        pytest.skip(case.skip_reason())
    rng = rng_for(case)
    values = [make_values(spec, rng) for spec in case.inputs]
    probe = [build(ec, spec, v) for spec, v in zip(case.inputs, values)]
    outs = _outputs(case.call(ec, probe))
    grad_out_values = [rng.standard_normal(tuple(o.shape)) for o in outs]
    second_values = [rng.standard_normal(tuple(t.shape)) for t in probe if t.requires_grad]

    e_outs, e_first, e_second = _grads(ec, ag.grad, case, values, grad_out_values, second_values)
    t_outs, t_first, t_second = _grads(
        torch, torch.autograd.grad, case, values, grad_out_values, second_values
    )

    tol = (
        {"rtol": 1e-6, "atol": 1e-9}
        if all(o.dtype is ec.float64 for o in e_outs)
        else {"rtol": 1e-4, "atol": 1e-5}
    )
    assert len(e_outs) == len(t_outs)
    for e, t in zip(e_outs, t_outs):
        np.testing.assert_allclose(_np(e), _np(t), **tol, err_msg="forward values differ")
    for k, (e, t) in enumerate(zip(e_first, t_first)):
        if t is None:
            assert e is None or not np.any(_np(e)), f"input {k}: torch has no gradient"
            continue
        assert e is not None, f"input {k}: ember has no gradient, torch has one"
        assert tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(_np(e), _np(t), **tol, err_msg=f"gradient of input {k}")
    if t_second is not None and case.gradgrad:
        if e_second is None:  # ember's first derivatives are constant: torch's must be too
            for k, t in enumerate(t_second):
                assert t is None or not np.any(_np(t)), f"input {k}: ember has no second derivative"
            return
        for k, (e, t) in enumerate(zip(e_second, t_second)):
            if t is None:
                assert e is None or not np.any(_np(e)), f"input {k}: torch has no second derivative"
                continue
            got = np.zeros(tuple(t.shape)) if e is None else _np(e)
            np.testing.assert_allclose(got, _np(t), **tol, err_msg=f"second derivative, input {k}")
