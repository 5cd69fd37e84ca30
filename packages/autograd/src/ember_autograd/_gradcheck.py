"""gradcheck / gradgradcheck: analytical gradients (backward) against central
finite differences, with a report of the worst element when they disagree."""

import itertools

import numpy as np

import ember_core as ec

from ember_autograd import _api
from ember_autograd._grad_mode import enable_grad, no_grad

Tensor = ec.Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients differ."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (tuple(x) if isinstance(x, list) else (x,))


def _outputs(func, inputs):
    out = _as_tuple(func(*inputs))
    return tuple(o for o in out if isinstance(o, Tensor) and o.dtype.is_floating_point)


def _flat_values(outputs):
    with no_grad():
        return [np.array(o.detach().to(ec.float64).numpy(), copy=True).reshape(-1) for o in outputs]


def _indices(t):
    return list(itertools.product(*(range(s) for s in t.shape))) if t.dim() else [()]


def numerical_jacobian(func, inputs, eps=1e-6):
    """J[i][o]: (numel(output o), numel(input i)) by central differences."""
    outs = _outputs(func, inputs)
    jac = [[np.zeros((o.numel(), t.numel())) if isinstance(t, Tensor) and t.requires_grad else None for o in outs] for t in inputs]
    for i, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            continue
        data = t.data
        for j, idx in enumerate(_indices(t)):
            with no_grad():
                orig = data[idx].item() if idx else data.item()
                _set(data, idx, orig + eps)
                plus = _flat_values(_outputs(func, inputs))
                _set(data, idx, orig - eps)
                minus = _flat_values(_outputs(func, inputs))
                _set(data, idx, orig)
            for o, (p, m) in enumerate(zip(plus, minus)):
                jac[i][o][:, j] = (p - m) / (2 * eps)
    return jac


def _set(data, idx, value):
    if idx:
        data[idx] = value
    else:
        data.fill_(value)


def analytical_jacobian(func, inputs):
    outs = _outputs(func, inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    jac = [[np.zeros((o.numel(), t.numel())) if i in diff else None for o in outs] for i, t in enumerate(inputs)]
    for o, out in enumerate(outs):
        if not out.requires_grad:
            continue
        for k in range(out.numel()):
            g = ec.zeros(out.shape, dtype=out.dtype)
            g.view(-1)[k] = 1.0
            grads = _api.grad(out, [inputs[i] for i in diff], g, retain_graph=True, allow_unused=True)
            for i, gi in zip(diff, grads):
                if gi is not None:
                    jac[i][o][k, :] = np.asarray(gi.detach().to(ec.float64).numpy()).reshape(-1)
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences.

    Inputs that require grad should be float64.  Returns True, or raises
    GradcheckError (or returns False with raise_exception=False) naming the
    worst element.
    """
    inputs = _as_tuple(inputs)
    for i, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad and t.dtype is not ec.float64:
            import warnings

            warnings.warn(f"gradcheck: input {i} is {t.dtype}, not float64; the check may fail on precision", stacklevel=2)
    num = numerical_jacobian(func, inputs, eps)
    ana = analytical_jacobian(func, inputs)
    worst = None
    for i, (ni, ai) in enumerate(zip(num, ana)):
        if ni is None:
            continue
        for o, (n, a) in enumerate(zip(ni, ai)):
            err = np.abs(a - n) - (atol + rtol * np.abs(n))
            if err.size and err.max() > 0:
                k, j = np.unravel_index(np.argmax(err), err.shape)
                if worst is None or err[k, j] > worst[0]:
                    worst = (err[k, j], i, o, k, j, n[k, j], a[k, j], n, a)
    if worst is None:
        return True
    _, i, o, k, j, nv, av, n, a = worst
    idx = _indices(inputs[i])[j]
    msg = (
        f"Jacobian mismatch for output {o} with respect to input {i},\n"
        f"worst at output element {k}, input element {list(idx)}: numerical {nv:.8g}, "
        f"analytical {av:.8g} (atol={atol}, rtol={rtol})\n"
        f"numerical:\n{n}\nanalytical:\n{a}"
    )
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: gradcheck of the first derivatives (computed with
    create_graph=True) with respect to the inputs and the output gradients."""
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gen = ec.Generator().manual_seed(0)
        grad_outputs = tuple(ec.randn(o.shape, dtype=o.dtype, generator=gen).requires_grad_(True) for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_derivatives(*args):
        ins, gos = args[:n_in], args[n_in:]
        # numerical_jacobian evaluates under no_grad; the first derivatives need a graph
        with enable_grad():
            out = _outputs(func, ins)
            grads = _api.grad(out, [ins[i] for i in diff], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
