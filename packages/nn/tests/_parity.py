"""Helpers for comparing an ember_nn layer with the same torch.nn layer.

A case builds the layer with one function of the namespace (``build(nn)`` is
called with torch.nn and with ember_nn), copies torch's parameters and buffers
into ember's layer, runs both on the same inputs (NumPy arrays) and compares
outputs, then back-propagates the same random output gradients and compares the
gradients of the inputs and of every parameter, and the buffers afterwards."""

import numpy as np

import ember_core as ec
import ember_nn


def to_numpy(t):
    if hasattr(t, "detach"):
        t = t.detach()
    if type(t).__module__.startswith("torch"):
        return t.cpu().numpy()
    return np.asarray(t.numpy())


def flatten(out):
    """The tensors of a (nested) output, in order."""
    if out is None:
        return []
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    return [out]


def copy_state(torch_module, ember_module):
    """Load torch's state_dict (parameters and buffers) into the ember module."""
    sd = {
        k: ec.tensor(np.array(v.detach().cpu().numpy()))
        for k, v in torch_module.state_dict().items()
    }
    ember_module.load_state_dict(sd)


def make_inputs(lib, arrays, grad):
    """Tensors of the arrays; float ones require grad where grad says (True: all,
    or a collection of input indices)."""
    out = []
    for i, a in enumerate(arrays):
        if isinstance(a, np.ndarray):
            t = lib.from_numpy(np.array(a)) if lib.__name__ == "torch" else ec.tensor(a)
            wanted = grad is True or (not isinstance(grad, bool) and i in grad)
            if wanted and a.dtype.kind == "f":
                t.requires_grad_(True)
            out.append(t)
        else:
            out.append(a)
    return out


def check_layer(
    torch,
    build,
    arrays,
    *,
    train=True,
    dtype="float64",
    grad=True,
    rtol=1e-6,
    atol=1e-8,
    call=None,
    kwargs=None,
    seed=0,
):
    """Compare build(torch.nn) and build(ember_nn) on the inputs (see module doc).
    grad: False (forward only), True (every float input requires grad) or the
    indices of the inputs that do."""
    torch.manual_seed(seed)
    tm = build(torch.nn)
    em = build(ember_nn)
    if dtype == "float64":
        tm, em = tm.double(), em.double()
    copy_state(tm, em)
    tm.train(train)
    em.train(train)
    kwargs = kwargs or {}
    call = call or (lambda m, *a, **k: m(*a, **k))
    t_in = make_inputs(torch, arrays, grad)
    e_in = make_inputs(ec, arrays, grad)
    t_out = flatten(call(tm, *t_in, **kwargs))
    e_out = flatten(call(em, *e_in, **kwargs))
    assert len(t_out) == len(e_out), f"{len(e_out)} outputs, torch has {len(t_out)}"
    for i, (a, b) in enumerate(zip(e_out, t_out)):
        assert tuple(a.shape) == tuple(b.shape), (
            f"output {i}: shape {tuple(a.shape)}, torch {tuple(b.shape)}"
        )
        np.testing.assert_allclose(
            to_numpy(a), to_numpy(b), rtol=rtol, atol=atol, err_msg=f"output {i}"
        )
    for (name, a), (_, b) in zip(em.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(
            to_numpy(a), to_numpy(b), rtol=rtol, atol=atol, err_msg=f"buffer {name}"
        )
    if grad is False:
        return em, tm
    rng = np.random.default_rng(seed + 1)
    t_loss, e_loss = 0, 0
    for a, b in zip(e_out, t_out):
        if not b.requires_grad:
            continue
        g = rng.standard_normal(tuple(b.shape))
        t_loss = t_loss + (b * torch.from_numpy(g).to(b.dtype)).sum()
        e_loss = e_loss + (a * ec.tensor(g).to(a.dtype)).sum()
    if isinstance(t_loss, int):
        return em, tm
    t_loss.backward()
    e_loss.backward()
    for i, (a, b) in enumerate(zip(e_in, t_in)):
        if hasattr(b, "grad") and b.requires_grad:
            assert a.grad is not None, f"input {i} has no gradient"
            np.testing.assert_allclose(
                to_numpy(a.grad),
                to_numpy(b.grad),
                rtol=rtol,
                atol=atol,
                err_msg=f"grad of input {i}",
            )
    t_params = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        tp = t_params[name]
        if tp.grad is None:
            assert p.grad is None or not np.any(to_numpy(p.grad)), f"{name}: torch has no grad"
            continue
        assert p.grad is not None, f"parameter {name} has no gradient"
        np.testing.assert_allclose(
            to_numpy(p.grad), to_numpy(tp.grad), rtol=rtol, atol=atol, err_msg=f"grad of {name}"
        )
    assert list(dict(em.named_parameters())) == list(t_params), "parameter names/order differ"
    return em, tm
