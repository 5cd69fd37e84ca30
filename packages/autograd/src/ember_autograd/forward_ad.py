"""Forward-mode AD: dual tensors carry a tangent through ops.

>>> with dual_level():
...     x = make_dual(primal, tangent)
...     y = (x * x).sin()
...     jvp = unpack_dual(y).tangent     # d y / d x applied to tangent

While a dual level is open, a second dispatch handler computes each op's output
tangent from its inputs' tangents.  Elementwise ops reuse the derivative table:
for them ``g * df/dx`` with ``g`` set to the tangent is the tangent's image.
Linear ops (views, sums, concatenation, copies) apply themselves to the
tangent; products have their own rules.
"""

import collections
import inspect
import itertools
import threading
import weakref

import ember_core as ec
from ember_autograd._formula import DERIVATIVES, OpTable

Tensor = ec.Tensor
UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _FwState(threading.local):
    def __init__(self):
        self.levels = []
        self.below = 0
        self.dual = {}  # level -> tensors given a tangent at that level (weakly)


_fw = _FwState()
_lock = threading.Lock()
_level_ids = itertools.count()
_open = [0]  # dual levels open in all threads: the handler is registered while > 0


def _current(level):
    if level is not None:
        return level
    if not _fw.levels:
        raise RuntimeError("forward AD: no dual level is open; use `with dual_level():`")
    return _fw.levels[-1]


def enter_dual_level():
    """Open a new dual level (prefer ``with dual_level():``)."""
    level = next(_level_ids)  # never reused: a tensor's stale tangents never come back
    _fw.levels.append(level)
    _fw.dual[level] = weakref.WeakValueDictionary()  # id -> tensor (Tensor == is elementwise)
    with _lock:
        _open[0] += 1
        if _open[0] == 1:
            ec.register_handler(_handle)
    return level


def exit_dual_level(*, level=None):
    """Close the innermost dual level: tangents made in it are dropped."""
    if not _fw.levels:
        raise RuntimeError("forward AD: no dual level to exit")
    lvl = _fw.levels.pop()
    for t in list(_fw.dual.pop(lvl, {}).values()):
        fw = t.__dict__.get("_fw")
        if fw is not None:
            fw.pop(lvl, None)
    with _lock:
        _open[0] -= 1
        if _open[0] == 0:
            ec.remove_handler(_handle)


class dual_level:
    """Context manager opening a forward-AD level; tangents die with it."""

    def __enter__(self):
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc):
        exit_dual_level(level=self.level)


def _alias(t):
    """A view of t carrying none of its tangents, recorded for reverse mode (so
    gradients reach t through it)."""
    _fw.below += 1
    try:
        return t.alias()
    finally:
        _fw.below -= 1


def make_dual(tensor, tangent, *, level=None):
    """A tensor with ``tensor``'s value carrying ``tangent`` at the current level."""
    lvl = _current(level)
    if not isinstance(tangent, Tensor) or tangent.shape != tensor.shape:
        raise RuntimeError(
            f"make_dual: expected tangent to have the primal's shape {tuple(tensor.shape)}, got "
            f"{tuple(getattr(tangent, 'shape', ()))}"
        )
    if not tensor.dtype.differentiable:
        raise ValueError("make_dual: the primal must be a floating point tensor")
    out = _alias(tensor)
    out._fw = {lvl: tangent}
    _fw.dual[lvl][id(out)] = out
    return out


def _tangent(t, lvl):
    d = getattr(t, "__dict__", None)
    if d is None:
        return None
    fw = d.get("_fw")
    return fw.get(lvl) if fw else None


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor (tangent None if it has none)."""
    lvl = _current(level) if _fw.levels or level is not None else None
    tangent = _tangent(tensor, lvl) if lvl is not None else None
    primal = _alias(tensor) if tangent is not None else tensor
    return UnpackedDualTensor(primal, tangent)


# ---------------------------------------------------------------- handler

# The forward-mode table: op -> jvp rule ``rule(tangents, values, result)``.
# Ops tagged "pointwise" in their declaration (Note [Op table]) need no rule:
# their backward formula, fed the tangent as the incoming gradient, gives it;
# nor do ops tagged "linear": the op applied to the tangent gives it
# (``linear_rule``).
JVPS = OpTable()


def jvp_rule(*names):
    def register(fn):
        for n in names:
            JVPS[n] = fn
        return fn

    return register


def _pointwise(op):
    if "pointwise" in op.tags:
        return True
    base = ec.OPS.get(op.inplace_of) if op.inplace_of else None
    return base is not None and "pointwise" in base.tags


def _handle(op, args, kwargs, call):
    if _fw.below or not _fw.levels:
        return call(args, kwargs)
    lvl = _fw.levels[-1]
    tangents = {}
    for name, a in zip(op.params, args):
        if isinstance(a, Tensor):
            t = _tangent(a, lvl)
            if t is not None:
                tangents[name] = t
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            ts = [_tangent(x, lvl) for x in a]
            if any(t is not None for t in ts):
                tangents[name] = ts
    if not tangents:
        return call(args, kwargs)
    name = op.name
    rule = JVPS.get(op) or (JVPS.get(op.inplace_of) if op.inplace_of else None)
    if rule is None:
        linear = op if "linear" in op.tags else ec.OPS.get(op.inplace_of)
        if linear is not None and "linear" in linear.tags:
            rule = linear_rule(linear)
    formula = DERIVATIVES.get(op) or (DERIVATIVES.get(op.inplace_of) if op.inplace_of else None)
    if not op.differentiable:
        return call(args, kwargs)
    if rule is None and (formula is None or not _pointwise(op)):
        raise RuntimeError(f"forward-mode AD is not implemented for '{name}' yet")
    values = dict(zip(op.params, args))
    inplace = op.inplace_of is not None
    if inplace and formula is not None and "input" in values:
        _fw.below += 1
        try:
            values["input"] = values["input"].clone()
        finally:
            _fw.below -= 1
    _fw.below += 1  # ops the implementation calls are not this op's tangent
    try:
        result = call(args, kwargs)
    finally:
        _fw.below -= 1
    out = args[0] if inplace else (result[0] if isinstance(result, tuple) else result)
    if (
        rule is None
        and isinstance(out, Tensor)
        and not out._dtype.is_complex
        and any(isinstance(v, Tensor) and v._dtype.is_complex for v in values.values())
    ):
        # Note [Complex tangents]: a real result of complex values (abs, angle) is
        # not holomorphic; its backward formula cannot give the tangent
        raise RuntimeError(f"forward-mode AD of '{name}' on complex tensors is not implemented yet")
    _fw.below += 1
    try:
        if rule is not None:
            tangent = rule(tangents, values, out)
        else:
            tangent = _from_formula(formula, tangents, values, out)
    finally:
        _fw.below -= 1
    if tangent is None or not isinstance(out, Tensor) or not out._dtype.differentiable:
        return result
    _fw.below += 1
    try:
        if tangent._dtype is not out._dtype:
            tangent = tangent.to(out._dtype)
        if inplace:
            _write_tangent(out, tangent, lvl)
        elif op.view:
            _set_tangent(out, tangent, lvl)  # a view of the input's tangent, as it should be
        else:
            _set_tangent(out, _owned(tangent, out, tangents), lvl)
    finally:
        _fw.below -= 1
    return result


# Note [Tangents of views]
# A non-view op's output owns its tangent (never an alias of an input's
# tangent, which the rules may return as is); a view's tangent is the same view
# of its base's tangent.  So an in-place op on a tensor can update its tangent
# in place, and one on a view writes into the region of its base's tangent:
# every other view of that base sees the change, as its values do.


def _set_tangent(t, tangent, lvl):
    fw = t.__dict__.get("_fw")
    if fw is None:
        fw = t._fw = {}
    fw[lvl] = tangent
    _fw.dual[lvl][id(t)] = t


def _owned(tangent, out, tangents):
    shared = tangent._shape != out._shape or any(
        x is not None and x._storage is tangent._storage
        for v in tangents.values()
        for x in (v if isinstance(v, list) else (v,))
    )
    if not shared:
        return tangent
    fresh = ec.empty(tuple(out._shape), dtype=out._dtype, device=out._storage._device)
    fresh.copy_(tangent)  # broadcasts
    return fresh


def _write_tangent(out, new, lvl):
    base = out._base
    if base is None:
        old = _tangent(out, lvl)
        if old is not None and old._shape == out._shape and old._dtype is out._dtype:
            if new is not old:
                old.copy_(new)
        else:
            fresh = ec.empty(tuple(out._shape), dtype=out._dtype, device=out._storage._device)
            fresh.copy_(new)
            _set_tangent(out, fresh, lvl)
        return
    bt = _tangent(base, lvl)
    if bt is None or bt._stride != base._stride or bt._dtype is not base._dtype:
        laid_out = ec.empty_strided(tuple(base._shape), base._stride, dtype=base._dtype)
        if bt is None:
            laid_out.zero_()
        else:
            laid_out.copy_(bt)
        _set_tangent(base, laid_out, lvl)
        bt = laid_out
    region = bt.as_strided(tuple(out._shape), out._stride, bt._offset + out._offset - base._offset)
    if new is not region:
        region.copy_(new)
    _set_tangent(out, region, lvl)


def _from_formula(f, tangents, values, result):
    # Note [Complex tangents]: a formula gives grad * conj(f'(z)) (Note [Complex
    # gradients]); for the holomorphic pointwise ops with a complex result the
    # tangent f'(z) t is therefore conj(formula(conj(t)))
    cplx = isinstance(result, Tensor) and result._dtype.is_complex
    total = None
    for i, name in enumerate(f.inputs):
        t = tangents.get(name)
        if t is None:
            continue
        if cplx:
            t = t.conj()
        kwargs = {}
        for n in f.uses:
            kwargs[n] = values[n]
        for n, _ in f.shape_uses:
            a = values[n[: n.rindex("_")]]
            if n.endswith("_geometry"):
                kwargs[n] = (a._shape, a._stride, a._offset)
            elif n.endswith("_device"):
                kwargs[n] = a._storage._device
            else:
                kwargs[n] = a._shape if isinstance(a, Tensor) else [x._shape for x in a]
        if f.uses_result:
            kwargs["result"] = result
        if f.wants_needs:
            kwargs["needs"] = tuple(j == i for j in range(len(f.inputs)))
        out = f.fn(t, **kwargs)
        g = out[i] if isinstance(out, tuple) else out
        if g is None:
            continue
        if cplx:
            g = g.conj()
        total = g if total is None else total + g
    return total


def _sum_terms(*terms):
    total = None
    for t in terms:
        if t is not None:
            total = t if total is None else total + t
    return total


@jvp_rule("matmul", "mm", "bmm", "mv", "dot")
def _(t, v, result):
    a_name, b_name = [n for n in v if n not in ("out",)][:2]
    ta, tb = t.get(a_name), t.get(b_name)
    a, b = v[a_name], v[b_name]
    return _sum_terms(
        ec.matmul(ta, b) if ta is not None else None, ec.matmul(a, tb) if tb is not None else None
    )


@jvp_rule("_fused_attention")
def _(t, v, result):
    # out = P value with P = softmax(S), S = query key^T scale + mask:
    # dS = (dq key^T + query dk^T) scale, dP = P (dS - rowsum(P dS))
    from ember_autograd._derivatives_attention import _probabilities

    q, k, val, scale = v["query"], v["key"], v["value"], v.get("scale", 1.0)
    tq, tk, tv = t.get("query"), t.get("key"), t.get("value")
    p = _probabilities(q, k, v.get("attn_mask"), v.get("is_causal", False), scale)
    ds = _sum_terms(
        ec.matmul(tq, k.transpose(-2, -1)) * scale if tq is not None else None,
        ec.matmul(q, tk.transpose(-2, -1)) * scale if tk is not None else None,
    )
    dp = None if ds is None else p * (ds - (p * ds).sum(-1, keepdim=True))
    return _sum_terms(
        ec.matmul(dp, val) if dp is not None else None,
        ec.matmul(p, tv) if tv is not None else None,
    )


@jvp_rule("outer")
def _(t, v, result):
    ta, tb = t.get("input"), t.get("vec2")
    return _sum_terms(
        ec.outer(ta, v["vec2"]) if ta is not None else None,
        ec.outer(v["input"], tb) if tb is not None else None,
    )


@jvp_rule("addmm", "baddbmm")
def _(t, v, result):
    names = list(v)
    m1, m2 = names[1], names[2]
    ti, t1, t2 = t.get("input"), t.get(m1), t.get(m2)
    alpha, beta = v.get("alpha", 1), v.get("beta", 1)
    return _sum_terms(
        ti * beta if ti is not None else None,
        ec.matmul(t1, v[m2]) * alpha if t1 is not None else None,
        ec.matmul(v[m1], t2) * alpha if t2 is not None else None,
    )


def _linear_first(opname):
    """Ops linear in their first tensor argument: apply them to the tangent (through
    dispatch, so the tangent's own history is recorded when it requires grad)."""
    op = ec.OPS[opname]
    defaults = {
        name: p.default
        for name, p in inspect.signature(ec._dispatch.public_function(opname)).parameters.items()
        if p.default is not inspect.Parameter.empty
    }

    def rule(t, v, result):
        tan = t.get(op.params[0])
        if tan is None:
            return None
        # the in-place variant (tril_) may lack parameters of the op (out=)
        args = (tan,) + tuple(v[n] if n in v else defaults.get(n) for n in op.params[1:])
        if "out" in op.params:
            args = tuple(None if n == "out" else a for n, a in zip(op.params, args))
        return ec._dispatch.dispatch(op, args)

    return rule


def linear_rule(op):
    """The forward-mode rule of an op tagged "linear" in its declaration (Note
    [Op table]): the op applied to its first input's tangent (an explicit JVPS
    entry takes precedence)."""
    if op not in _derived:
        _derived[op] = _linear_first(op.name)
    return _derived[op]


_derived = OpTable()


@jvp_rule("__getitem__")
def _(t, v, result):
    tan = t.get("input")
    return tan[v["key"]] if tan is not None else None


@jvp_rule("_to_copy")
def _(t, v, result):
    return t["input"].to(v["device"], v["dtype"])


def _joining(fn):
    def rule(t, v, result):
        filled = [
            x if x is not None else ec.zeros_like(src) for x, src in zip(t["tensors"], v["tensors"])
        ]
        return fn(filled, v["dim"])

    return rule


JVPS["cat"] = _joining(lambda ts, d: ec.cat(ts, d))
JVPS["stack"] = _joining(lambda ts, d: ec.stack(ts, d))


@jvp_rule("copy_")
def _(t, v, result):
    src = t.get("src")
    return src if src is not None else ec.zeros_like(result)


@jvp_rule("logsumexp")
def _(t, v, result):
    x = v["input"]
    dim, keepdim = v["dim"], v["keepdim"]
    r = (
        result
        if keepdim
        else result.reshape([1 if i in _dims(dim, x.dim()) else s for i, s in enumerate(x.shape)])
    )
    return (t["input"] * (x - r).exp()).sum(dim, keepdim=keepdim)


def _dims(dim, nd):
    if isinstance(dim, int):
        dim = (dim,)
    return {d % nd for d in dim}
