"""gradcheck / gradgradcheck: analytical gradients (backward, and optionally
forward-mode AD) against central finite differences, with a report of the worst
element when they disagree.

The numerical Jacobian perturbs each input element in place through a NumPy
view of the input's memory (no version bump, no graph), evaluates ``func``
twice and takes the central difference; the analytical one runs one backward
per output element.  Both are dense: meant for the small inputs of tests.

Complex inputs and outputs are checked as pairs of reals (their view_as_real):
Note [Complex gradients] makes the gradient of a real loss L with respect to
z = a + ib the number dL/da + i dL/db, so the backward of grad_output 1 (for
the real part of an output element) or 1j (for its imaginary part) gives one
row of the real Jacobian, as re and im of each input gradient -- the check
PyTorch's gradcheck makes of complex functions.
"""

import warnings

import numpy as np

import ember_core as ec
from ember_autograd import _api
from ember_autograd._grad_mode import no_grad

Tensor = ec.Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients differ."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(out):
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor) and o._dtype.differentiable)


def _real_numpy(t):
    """t's values as a NumPy array of reals: (re, im) pairs for complex tensors."""
    t = t.detach()
    if t._dtype.is_complex:
        t = ec.view_as_real(t)
    return np.asarray(t.numpy())


def _numel(t):
    """The number of real components of t."""
    return t.numel() * (2 if t._dtype.is_complex else 1)


def _float64_values(outputs):
    with no_grad():
        return [np.array(_real_numpy(o), dtype=np.float64).reshape(-1) for o in outputs]


def _unit_grad(out, k):
    """The grad_output selecting real component k of out (1, or 1j for an
    imaginary part)."""
    v = ec.zeros(out.shape, dtype=out.dtype)
    if out._dtype.is_complex:
        v.view(-1)[k // 2] = 1j if k % 2 else 1.0
    else:
        v.view(-1)[k] = 1.0
    return v


def _element_index(shape, j):
    return tuple(int(i) for i in np.unravel_index(j, shape)) if shape else ()


def numerical_jacobian(func, inputs, eps=1e-6):
    """J[i][o]: an array (numel of output o, numel of input i) of central
    differences, None for inputs that do not require grad."""
    outs = _differentiable_outputs(func(*inputs))
    jac = []
    for t in inputs:
        if not (isinstance(t, Tensor) and t.requires_grad):
            jac.append(None)
            continue
        cols = [np.zeros((_numel(o), _numel(t))) for o in outs]
        values = _real_numpy(t.data)  # shares t's memory, strides and all
        for j in range(values.size):
            idx = _element_index(values.shape, j)
            orig = values[idx].item()
            values[idx] = orig + eps
            plus = _float64_values(_differentiable_outputs(func(*inputs)))
            values[idx] = orig - eps
            minus = _float64_values(_differentiable_outputs(func(*inputs)))
            values[idx] = orig
            for col, p, m in zip(cols, plus, minus):
                col[:, j] = (p - m) / (2 * eps)
        jac.append(cols)
    return jac


def _check_grad_attributes(g, t, i, check_grad_dtypes):
    if tuple(g.shape) != tuple(t.shape):
        raise GradcheckError(
            f"Gradient has incorrect shape for input {i}: got {tuple(g.shape)}, expected "
            f"{tuple(t.shape)}"
        )
    if check_grad_dtypes and g.dtype is not t.dtype:
        raise GradcheckError(
            f"Gradient has dtype mismatch for input {i}: got {g.dtype}, expected {t.dtype}"
        )


def analytical_jacobian(func, inputs, check_grad_dtypes=False, nondet_tol=0.0):
    """J[i][o] from one backward per output element (vector-Jacobian products
    with one-hot vectors), then a reentrancy check: one more backward with a
    dense vector must agree with the Jacobian (up to ``nondet_tol``)."""
    outs = _differentiable_outputs(func(*inputs))
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    jac = [
        [np.zeros((_numel(o), _numel(t))) for o in outs] if i in diff else None
        for i, t in enumerate(inputs)
    ]
    targets = [inputs[i] for i in diff]
    for o, out in enumerate(outs):
        if not out.requires_grad:
            continue
        for k in range(_numel(out)):
            v = _unit_grad(out, k)
            grads = _api.grad(out, targets, v, retain_graph=True, allow_unused=True)
            for i, g in zip(diff, grads):
                if g is not None:
                    _check_grad_attributes(g, inputs[i], i, check_grad_dtypes)
                    jac[i][o][k, :] = _real_numpy(g).astype(np.float64).reshape(-1)
        # reentrancy: backward must give the same gradient every time
        if out.numel():
            rng = np.random.default_rng(o)
            w = rng.standard_normal(_numel(out))
            wv = w[0::2] + 1j * w[1::2] if out._dtype.is_complex else w
            v = ec.tensor(wv.reshape(tuple(out.shape)), dtype=out.dtype)
            grads = _api.grad(out, targets, v, retain_graph=True, allow_unused=True)
            for i, g in zip(diff, grads):
                got = (
                    np.zeros(_numel(inputs[i]))
                    if g is None
                    else _real_numpy(g).astype(np.float64).reshape(-1)
                )
                want = w @ jac[i][o]
                if not np.allclose(
                    got,
                    want,
                    rtol=1e-7,
                    atol=max(nondet_tol, 1e-9) * max(1.0, np.abs(want).max(initial=0)),
                ):
                    raise GradcheckError(
                        f"Backward is not reentrant for output {o} with respect to input {i}: a "
                        f"second backward differs by {np.abs(got - want).max():.3g} "
                        f"(nondet_tol={nondet_tol})"
                    )
    return jac


def forward_jacobian(func, inputs):
    """J[i][o] from forward-mode AD: one jvp per input element."""
    from ember_autograd import forward_ad

    jac = []
    for i, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            jac.append(None)
            continue
        cols = None
        for j in range(_numel(t)):
            # a complex input's real components: 1 for a real part, 1j for an imaginary one
            tangent = _unit_grad(t, j)
            with forward_ad.dual_level():
                args = list(inputs)
                args[i] = forward_ad.make_dual(t.detach(), tangent)
                outs = _differentiable_outputs(func(*args))
                if cols is None:
                    cols = [np.zeros((_numel(o), _numel(t))) for o in outs]
                for col, o in zip(cols, outs):
                    tan = forward_ad.unpack_dual(o).tangent
                    if tan is not None:
                        col[:, j] = _real_numpy(tan).astype(np.float64).reshape(-1)
        jac.append(cols if cols is not None else [])
    return jac


def _compare(num, ana, atol, rtol, inputs, kind):
    worst = None
    for i, (ni, ai) in enumerate(zip(num, ana)):
        if ni is None:
            continue
        for o, (n, a) in enumerate(zip(ni, ai)):
            with np.errstate(invalid="ignore"):
                err = np.abs(a - n) - (atol + rtol * np.abs(n))
            err = np.where(np.isnan(a) != np.isnan(n), np.inf, np.nan_to_num(err, nan=-1.0))
            if err.size and err.max() > 0:
                k, j = np.unravel_index(np.argmax(err), err.shape)
                if worst is None or err[k, j] > worst[0]:
                    worst = (err[k, j], i, o, k, j, n, a)
    if worst is None:
        return None
    _, i, o, k, j, n, a = worst
    out_idx = int(k)
    shape = tuple(inputs[i].shape) + ((2,) if inputs[i]._dtype.is_complex else ())
    in_idx = list(_element_index(shape, int(j)))
    return (
        f"Jacobian mismatch for output {o} with respect to input {i} ({kind}),\n"
        f"worst at output element {out_idx} (flat), input element {in_idx}: numerical "
        f"{n[k, j]:.8g}, analytical {a[k, j]:.8g}, |difference| {abs(n[k, j] - a[k, j]):.3g} "
        f"(atol={atol}, rtol={rtol})\n"
        f"numerical:\n{n}\nanalytical:\n{a}"
    )


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
):
    """Check the gradients of ``func`` at ``inputs`` against finite differences.

    Inputs that require grad should be float64 (or complex128: checked as
    pairs of reals, PyTorch's convention).  Returns True, or raises
    GradcheckError (or returns False with ``raise_exception=False``) naming the
    worst element.  ``check_forward_ad=True`` checks forward-mode AD too.

    >>> x = ember_core.randn(3, dtype=ember_core.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sin(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    if not any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of the "
            "them have requires_grad=True."
        )
    for i, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad and t.dtype not in (ec.float64, ec.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point "
                f"({t.dtype}). This check will likely fail if all the inputs are not of double "
                "precision floating point.",
                stacklevel=2,
            )
    try:
        num = numerical_jacobian(func, inputs, eps)
        failures = []
        if check_backward_ad:
            ana = analytical_jacobian(func, inputs, check_grad_dtypes, nondet_tol)
            failures.append(_compare(num, ana, atol, rtol, inputs, "backward mode"))
        if check_forward_ad:
            fwd = forward_jacobian(func, inputs)
            failures.append(_compare(num, fwd, atol, rtol, inputs, "forward mode"))
        failures = [f for f in failures if f]
        if failures:
            raise GradcheckError("\n\n".join(failures))
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=False,
):
    """Check second derivatives: gradcheck of the first derivatives (computed
    with ``create_graph=True``) with respect to the inputs and to the output
    gradients (random, requiring grad, when not given)."""
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outs = _differentiable_outputs(func(*inputs))
        gen = ec.Generator().manual_seed(0)
        grad_outputs = []
        for o in outs:
            rd = o.dtype.to_real()
            g = ec.rand(o.shape, dtype=rd, generator=gen) * 2 - 1
            if o.dtype.is_complex:
                g = ec.complex(g, ec.rand(o.shape, dtype=rd, generator=gen) * 2 - 1)
            if gen_non_contig_grad_outputs and o.dim():
                wide = ec.zeros(tuple(o.shape[:-1]) + (o.shape[-1] * 2,), dtype=o.dtype)
                wide[..., ::2] = g
                g = wide[..., ::2]
            grad_outputs.append(g.requires_grad_(True))
        grad_outputs = tuple(grad_outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_derivatives(*args):
        ins, gos = args[:n_in], args[n_in:]
        pairs = [
            (o, g) for o, g in zip(_differentiable_outputs(func(*ins)), gos) if o.requires_grad
        ]
        if not pairs:
            return ()
        outs, gos = zip(*pairs)
        grads = _api.grad(outs, [ins[i] for i in diff], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_grad_dtypes=check_grad_dtypes,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
    )
