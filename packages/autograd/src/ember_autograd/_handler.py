"""The dispatch handler that records the graph as the program runs.

ember_core calls ``handle(op, args, kwargs, call)`` for every op.  When grad
mode is on and an input requires grad, the handler saves what the op's formula
needs, runs the op "below" autograd (so public ops its implementation calls are
not recorded again) and gives the outputs a node.

Note [In-place ops and views]
An in-place op gives its tensor a new grad_fn (a leaf that requires grad may
not be modified in place).  When the tensor is a view, the write also changes
its base: the base's history becomes a CopySlices node that routes the
gradient of the written region through the in-place op's formula, and the view
becomes a view of that new history.  Other views of the same base notice the
change through the storage version and rebuild their grad_fn from the base.
"""

import linecache
import os
import sys

import ember_core as ec

from ember_autograd import _grad_mode
from ember_autograd._formula import DERIVATIVES, OpNode
from ember_autograd._node import Node, SavedTensor, gradient_edge, watched

Tensor = ec.Tensor
state = _grad_mode.state


class _OpInfo:
    __slots__ = ("formula", "inplace", "view", "differentiable", "candidates", "out_idx", "name")


_infos = {}
_OWN_DIRS = tuple(
    os.path.dirname(m.__file__) for m in (ec, sys.modules[__name__.rsplit(".", 1)[0]])
)


def _info(op):
    info = _infos.get(op)
    if info is not None:
        return info
    info = _OpInfo()
    info.name = op.name
    info.inplace = op.inplace_of is not None
    info.view = op.view
    info.differentiable = op.differentiable
    key = op.inplace_of if info.inplace and op.inplace_of in DERIVATIVES and op.name not in DERIVATIVES else op.name
    info.formula = DERIVATIVES.get(key)
    if info.formula is not None:
        info.candidates = info.formula.input_idx
    else:
        info.candidates = tuple(range(len(op.params)))
    info.out_idx = op.params.index("out") if "out" in op.params else -1
    _infos[op] = info
    return info


def _location():
    """'file:line: code' of the first frame outside ember's packages."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_OWN_DIRS):
        f = f.f_back
    if f is None:
        return ""
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{f.f_code.co_filename}:{f.f_lineno}" + (f": `{line}`" if line else "")


def _note_write(op, t):
    """Remember who wrote in place into a storage that holds saved tensors."""
    if isinstance(t, Tensor):
        s = t._storage
        if s in watched:
            watched[s] = (s._version + 1, op.name, _location())


def _requires(args, candidates):
    for i in candidates:
        a = args[i]
        if isinstance(a, Tensor):
            if a._rg:
                return True
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor) and x._rg:
                    return True
    return False


def _run_below(call, args):
    state.below += 1
    try:
        return call(args, None)
    finally:
        state.below -= 1


def handle(op, args, kwargs, call):
    if state.below:
        return call(args, kwargs)
    info = _infos.get(op) or _info(op)
    if not state.enabled:
        if info.inplace:
            _note_write(op, args[0])
        return _run_below(call, args)
    requires = _requires(args, info.candidates)
    if info.inplace:
        target = args[0]
        if isinstance(target, Tensor):
            _check_inplace(op, target)
            _note_write(op, target)
            if not requires and not target._rg and not _base_requires(target):
                return _run_below(call, args)
            return _record(op, info, args, call)
    if not requires:
        return _run_below(call, args)
    if info.out_idx >= 0 and args[info.out_idx] is not None:
        raise RuntimeError(
            f"{op.name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    if not info.differentiable:
        return _run_below(call, args)
    return _record(op, info, args, call)


def _base_requires(t):
    b = t._base
    return b is not None and b._rg


def _check_inplace(op, t):
    if t._rg and t.grad_fn is None and t._base is None:
        raise RuntimeError(
            f"{op.name}: a leaf Variable that requires grad is being used in an in-place "
            "operation."
        )
    b = t._base
    if b is not None and b._rg and b.grad_fn is None:
        raise RuntimeError(
            f"{op.name}: a view of a leaf Variable that requires grad is being used in an "
            "in-place operation."
        )


def _edge(t):
    """The gradient edge of t, rebuilding a stale view's grad_fn first."""
    b = t._base
    if b is not None and b._rg and t._rg and t.__dict__.get("_vv") != t._storage._version:
        _regenerate_view(t, b)
    return gradient_edge(t)


def _record(op, info, args, call):
    f = info.formula
    if f is None:
        raise RuntimeError(
            f"the derivative for '{op.name}' is not implemented (ember_autograd has no formula "
            "for it)"
        )
    inplace = info.inplace
    edges, metas = [], []
    for idx in f.input_idx:
        a = args[idx]
        if isinstance(a, Tensor):
            edges.append(_edge(a) if a._rg else (None, 0))
            metas.append((a._shape, a._dtype))
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            for x in a:
                edges.append(_edge(x) if x._rg else (None, 0))
                metas.append((x._shape, x._dtype))
        else:
            edges.append((None, 0))
            metas.append(None)
    values = {}
    for name, idx in zip(f.uses, f.uses_idx):
        a = args[idx]
        if isinstance(a, Tensor):
            if inplace and idx == 0:
                # the value before the write, itself recorded so that double
                # backward reaches the target's old history
                a = a.clone()
            values[name] = SavedTensor(a, op.name)
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            values[name] = [SavedTensor(x, op.name) for x in a]
        else:
            values[name] = a
    for name, idx in f.shape_uses:
        a = args[idx]
        if name.endswith("_geometry"):
            values[name] = (a._shape, a._stride, a._offset)
        else:
            values[name] = a._shape if isinstance(a, Tensor) else [x._shape for x in a]

    result = _run_below(call, args)

    if inplace:
        outs = (args[0],)  # in-place ops return their target (or None, like __setitem__)
    else:
        outs = result if isinstance(result, tuple) else (result,)
    diff = [
        (k, outs[i])
        for k, i in enumerate(f.outputs)
        if i < len(outs) and isinstance(outs[i], Tensor) and outs[i]._dtype.is_floating_point
    ]
    if not diff:
        return result
    node = OpNode(f, tuple(edges), values, tuple(metas), len(f.outputs))
    node._out_meta = tuple((o._shape, o._dtype) for _, o in diff)
    if f.uses_result:
        if isinstance(result, tuple):
            diff_ids = {id(o): k for k, o in diff}
            values["result"] = tuple(
                SavedTensor(o, op.name, is_output=id(o) in diff_ids, output_nr=diff_ids.get(id(o), 0))
                if isinstance(o, Tensor)
                else o
                for o in result
            )
        else:
            values["result"] = SavedTensor(outs[0], op.name, is_output=True)
    if inplace:
        target = args[0]
        _attach(target, node, 0)
        if target._base is not None:
            _rebase_view(target, node)
        return result
    for k, o in diff:
        _attach(o, node, k)
        if info.view:
            o._vv = o._storage._version
    return result


def _attach(t, node, output_nr):
    d = t.__dict__
    d["_rg"] = True
    d["grad_fn"] = node
    d["_output_nr"] = output_nr


# ------------------------------------------------------------- views


def _geometry(view, base):
    return (view._shape, view._stride, view._offset - base._offset)


class ViewOfNode(Node):
    """Gradient of a view taken by geometry (shape, strides, offset) of its base."""

    __slots__ = ("_base_geom", "_geom")

    def __init__(self, edge, base, view):
        Node.__init__(self, (edge,))
        self._base_geom = (base._shape, base._stride, base._dtype)
        self._geom = _geometry(view, base)

    def name(self):
        return "AsStridedBackward0"

    def apply(self, grads):
        shape, stride, dtype = self._base_geom
        g = grads[0]
        out = ec.empty_strided(shape, stride, dtype=g.dtype)
        out.zero_()
        size, vstride, offset = self._geom
        out.as_strided(size, vstride, offset).copy_(g)
        return (out,)


class CopySlices(Node):
    """The base's history after an in-place write through one of its views."""

    __slots__ = ("_fn", "_base_geom", "_geom")

    def __init__(self, base, view, fn):
        base_edge = gradient_edge(base) if base._rg else (None, 0)
        Node.__init__(self, (base_edge,) + tuple(fn.next_functions[1:]))
        self._fn = fn
        self._base_geom = (base._shape, base._stride)
        self._geom = _geometry(view, base)

    def name(self):
        return "CopySlices"

    def apply(self, grads):
        g = grads[0]
        shape, stride = self._base_geom
        result = ec.empty_strided(shape, stride, dtype=g.dtype)
        result.copy_(g)
        size, vstride, offset = self._geom
        region = result.as_strided(size, vstride, offset)
        inner = self._fn.apply((region.clone(),))
        if inner[0] is None:
            region.zero_()
        else:
            region.copy_(inner[0])
        return (result,) + tuple(inner[1:])

    def release(self):
        self._fn.release()


def _rebase_view(view, node):
    base = view._base
    cs = CopySlices(base, view, node)
    _attach(base, cs, 0)
    _attach(view, ViewOfNode((cs, 0), base, view), 0)
    view._vv = view._storage._version


def _regenerate_view(view, base):
    _attach(view, ViewOfNode(gradient_edge(base), base, view), 0)
    view._vv = view._storage._version
