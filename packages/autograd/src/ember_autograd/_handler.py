"""The dispatch handler that records the graph as the program runs.

ember_core calls ``handle(op, args, kwargs, call)`` for every op.  When grad
mode is on and an input requires grad, the handler saves what the op's formula
needs, runs the op "below" autograd (so public ops its implementation calls are
not recorded again) and gives the outputs a node.  This is the hot path of
every op while ember_autograd is imported, so the handler itself and the
recording of the common cases are C's (csrc/autograd.c, Note [Recording
plan] below); this module holds the plan, the rare cases and the reference.

Note [In-place ops and views]
Every in-place write, recorded or not, notes which op wrote (and from which
source line) into storages that hold saved tensors, so a stale saved tensor can
say who modified it.  A recorded in-place op gives its tensor a new grad_fn (a
leaf that requires grad may not be modified in place, nor may a view of one).
When the tensor is a view, the write also changes its base: the base's history
becomes a CopySlices node that routes the gradient of the written region
through the in-place op's formula, and the view becomes a view of that new
history.  Other views of the same base notice the change through the storage
version (``_vv``, the version their grad_fn was made at) and rebuild their
grad_fn from the base when next used.

Note [Inference tensors]
Tensors made under inference_mode are marked (``_inference``), as are views of
them.  They may not be saved for backward, nor modified in place outside
inference mode, nor made to require grad there: PyTorch's rules.
"""

import os
import sys

import ember_core as ec
from ember_autograd import _grad_mode, _native
from ember_autograd._formula import DERIVATIVES
from ember_autograd._node import (
    AccumulateGrad,
    Node,
    SavedTensor,
    _accumulator,
    accumulator,
    gradient_edge,
    hooks_stack,
    last_write,
    named_node_class,
)
from ember_core._tensor import tensor as _core_tensor

Tensor = ec.Tensor
state = _grad_mode.state


_infos = {}  # op -> OpInfo (C's, read by the handler there)
_OWN_DIRS = tuple(
    os.path.dirname(m.__file__) for m in (ec, sys.modules[__name__.rsplit(".", 1)[0]])
)

# Note [Recording plan]
# Everything the handler needs to know about an op is worked out once, on its
# first call, into an OpInfo (a C object): the op's kind, which parameters may
# carry gradients and, for an op with a formula, the recording plan -- which
# inputs get edges, which values the formula reads (and for which gradients),
# which shapes/geometries/devices, and which node class the op's node gets.
# The handler (C's handle, Note [C extension]) follows the plan for the common
# case: one differentiable output, no saved-tensor hooks, no anomaly mode, and
# for an in-place op a target that is not a view.  Every other case comes to
# _record below, which follows the same plan in Python and is the reference
# for what recording does.
_SHAPE_KINDS = {"_shape": 0, "_geometry": 1, "_device": 2, "_shapes": 3}


def _info(op):
    info = _infos.get(op)
    if info is not None:
        return info
    info = _native.OpInfo()
    info.name = op.name
    info.inplace = op.inplace_of is not None
    info.view = op.view
    info.differentiable = op.differentiable
    info.detach = op.name == "detach_"
    key = op
    if info.inplace and op not in DERIVATIVES and op.inplace_of in DERIVATIVES:
        key = op.inplace_of  # add_ uses add's formula
    f = info.formula = DERIVATIVES.get(key)
    info.out_idx = op.params.index("out") if "out" in op.params else -1
    info.fast = False
    if f is None:
        info.candidates = tuple(range(len(op.params)))
    else:
        info.candidates = info.in_idx = f.input_idx
        only_for = f.save_only_for or {}
        info.uses = tuple((name, idx, only_for.get(name)) for name, idx in zip(f.uses, f.uses_idx))
        info.shape_uses = tuple(
            (name, idx, next(k for s, k in _SHAPE_KINDS.items() if name.endswith(s)))
            for name, idx in f.shape_uses
        )
        info.node_cls = f.node_cls
        info.node_cls_for = f.node_cls_for
        info.uses_result = f.uses_result
        info.saved_outputs = f.saved_outputs
        info.out0 = f.outputs[0]
        info.fast = not f.multi_grad
    _infos[op] = info
    return info


def _requires(args, candidates):
    for i in candidates:
        a = args[i]
        if a.__class__ is Tensor or isinstance(a, Tensor):
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


# Note [Dispatch] in ember_core: the handler autograd registers is C's
# (_native.handle): it runs the op straight away while an op's implementation
# runs under it (state.below) and when no input requires grad (marking results
# made under inference_mode), and otherwise hands in-place ops to
# _handle_inplace, ops with an out= or not differentiable to _record_checked,
# and records the rest (Note [Recording plan]).
handle = _native.handle
sole_dispatch = _native.dispatch  # handle(op, args, {}, op.call_impl)


def _record_checked(op, info, args, call):
    if info.out_idx >= 0 and args[info.out_idx] is not None:
        raise RuntimeError(
            f"{op.name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    if not info.differentiable:
        return _run_below(call, args)
    return _record(op, info, args, call)


# ------------------------------------------------------------- in place


def _handle_inplace(op, info, args, call):
    """An in-place op (C's handler takes the writes it does not record itself)."""
    target = args[0]
    if not isinstance(target, Tensor):
        return _run_below(call, args)
    if target._inference and not state.inference:
        raise RuntimeError(
            f"{op.name}: Inplace update to inference tensor outside InferenceMode is not allowed. "
            "You can make a clone to get a normal tensor before doing inplace update."
        )
    if info.detach:
        return _detach_(target, call, args)
    if not state.enabled:
        _note_write(op, target)
        return call(args, None)
    requires = _requires(args, info.candidates)
    base = target._base
    if not (requires or target._rg or (base is not None and base._rg)):
        _note_write(op, target)
        return _run_below(call, args)
    _check_inplace(op, target)
    if info.formula is None:
        _note_write(op, target)
        return _record_nondifferentiable(op, target, call, args)
    return _record(op, info, args, call)  # notes the write after saving its inputs


# _note_write(op, t): remember who writes into t's storage (and from which
# source line), for the error of a stale saved tensor (Note [Write notes] in
# csrc/autograd.c).
_note_write = _native.note_write


def _check_inplace(op, t):
    if t._custom_view is not None:
        raise RuntimeError(
            f"{op.name}: Output {t._output_nr} of {t._custom_view} is a view and is being modified "
            "inplace. This view was created inside a custom Function (or because an input was "
            "returned as-is) and the autograd logic to handle view+inplace would override the "
            "custom backward associated with the custom Function, leading to incorrect "
            "gradients. This behavior is forbidden. You can fix this by cloning the output of "
            "the custom Function."
        )
    if t._rg and t.grad_fn is None and t._base is None:
        raise RuntimeError(
            f"{op.name}: a leaf Variable that requires grad is being used in an in-place operation."
        )
    b = t._base
    if b is not None and b._rg and b.grad_fn is None:
        raise RuntimeError(
            f"{op.name}: a view of a leaf Variable that requires grad is being used in an "
            "in-place operation."
        )


def _detach_(t, call, args):
    """detach_(): t becomes a leaf that does not require grad (views may not)."""
    if t._base is not None and (t._rg or t._base._rg):
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    result = _run_below(call, args)
    d = t.__dict__
    d["_rg"] = False
    d.pop("grad_fn", None)
    d.pop("_output_nr", None)
    return result


class ZeroGradNode(Node):
    """The node of a non-differentiable in-place op (``uniform_``, ``eq_`` ...):
    the written values do not depend on what was there, so the old history gets
    no gradient."""

    __slots__ = ("_name",)

    def __init__(self, name, edge):
        Node.__init__(self, (edge,))
        self._name = name

    def name(self):
        return self._name

    def apply(self, grads):
        return (None,)


def _record_nondifferentiable(op, target, call, args):
    result = _run_below(call, args)
    if not target._dtype.differentiable:
        return result
    name = "".join(p[:1].upper() + p[1:] for p in op.name.split("_") if p) + "Backward0"
    node = named_node_class(ZeroGradNode, name)(name, _edge(target) if target._rg else (None, 0))
    _attach(target, node, 0)
    if target._base is not None:
        _rebase_view(target, node)
    return result


# ------------------------------------------------------------- recording


def _edge(t):
    """The gradient edge of t, rebuilding a stale view's grad_fn first."""
    b = t._base
    if b is not None and b._rg and t._rg and t._vv != t._storage._version:
        if t._custom_view is not None:
            raise RuntimeError(
                f"Output {t._output_nr} of {t._custom_view} is a view and its base or another view "
                "of its base has been modified inplace. This view was created inside a custom "
                "Function (or because an input was returned as-is): its custom backward cannot "
                "account for the change. Clone the output of the custom Function."
            )
        _regenerate_view(t, b)
    return gradient_edge(t)


_NO_EDGE = (None, 0)


def _record(op, info, args, call):
    """Run op below autograd and give its floating outputs a node of its formula."""
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
        if a.__class__ is Tensor or isinstance(a, Tensor):
            if not a._rg:
                edges.append(_NO_EDGE)
            elif a._base is not None:
                edges.append(_edge(a))
            else:
                fn = a.grad_fn
                if fn is not None:
                    edges.append((fn, a._output_nr))
                else:  # a leaf: its (shared) AccumulateGrad
                    ref = a.__dict__.get("_acc")
                    acc = ref() if ref is not None else None
                    edges.append((acc if acc is not None else accumulator(a), 0))
            metas.append((a._shape, a._dtype))
        elif isinstance(a, (list, tuple)) and _holds_tensors(a):
            for x in a:  # a tensor list (cat's); None holes get no edge
                is_t = isinstance(x, Tensor)
                edges.append(_edge(x) if is_t and x._rg else _NO_EDGE)
                metas.append((x._shape, x._dtype) if is_t else None)
        else:
            edges.append(_NO_EDGE)
            metas.append(None)
    values = {}
    name_ = op.name
    only_for = f.save_only_for
    for name, idx in zip(f.uses, f.uses_idx):
        a = args[idx]
        if only_for is not None and name in only_for:
            for i in only_for[name]:  # a loop, not all(...): no generator per op
                if edges[i][0] is not None:
                    break
            else:
                values[name] = None  # no gradient that reads it will be computed
                continue
        if a.__class__ is Tensor or isinstance(a, Tensor):
            if inplace and idx == 0:
                # the value before the write, itself recorded so that double
                # backward reaches the target's old history
                a = a.clone()
            if a._inference:
                _refuse_inference(op)
            values[name] = SavedTensor(a, name_)
        elif isinstance(a, (list, tuple)) and _holds_tensors(a):
            # e.g. index_put's indices, which may hold None: only tensors are saved
            # as SavedTensor, other elements as they are
            saved = []
            for x in a:
                if isinstance(x, Tensor):
                    if x._inference:
                        _refuse_inference(op)
                    x = SavedTensor(x, name_)
                saved.append(x)
            values[name] = saved if a.__class__ is list else tuple(saved)
        else:
            values[name] = a
    for name, idx in f.shape_uses:
        a = args[idx]
        if name.endswith("_geometry"):
            values[name] = (a._shape, a._stride, a._offset)
        elif name.endswith("_device"):
            values[name] = a._storage._device
        else:
            values[name] = a._shape if isinstance(a, Tensor) else [x._shape for x in a]

    first = args[0]
    if inplace:
        _note_write(op, first)
    st = state
    st.below += 1
    try:
        result = call(args, None)
    finally:
        st.below -= 1

    if not f.multi_grad and not inplace:  # the common case: one output
        o = result[f.outputs[0]] if isinstance(result, tuple) else result  # (namedtuples too)
        if not (isinstance(o, Tensor) and o._dtype.differentiable) or o is first:
            return result  # not differentiable, or contiguous()/to() returning the input
        cls = f.node_cls if f.node_cls_for is None else f.node_cls_for(args)
        node = cls(f, tuple(edges), values, metas, 1)
        if f.uses_result:
            values["result"] = _saved_result(result, ((0, o),), name_, f.saved_outputs)
        d = o.__dict__
        d["_rg"] = True
        d["grad_fn"] = node
        if o._base is not None:
            d["_vv"] = o._storage._version  # its grad_fn is current (Note [In-place ops and views])
            if first._inference:
                d["_inference"] = True
        return result

    if inplace:
        outs = (first,)  # in-place ops return their target (or None, like __setitem__)
    elif isinstance(result, tuple):
        outs = result
    else:
        outs = (result,)
    diff = [
        (k, outs[i])
        for k, i in enumerate(f.outputs)
        if i < len(outs)
        and isinstance(outs[i], Tensor)
        and outs[i]._dtype.differentiable
        and (inplace or outs[i] is not first)
    ]
    if not diff:
        return result
    node = f.node_cls(f, tuple(edges), values, metas, len(f.outputs))
    # indexed by output number, as the engine's grads are; an output that is not
    # differentiable (an integer one, a None one) has no meta
    out_meta = [None] * len(f.outputs)
    for k, o in diff:
        out_meta[k] = (o._shape, o._dtype, o._storage._device)
    node._out_meta = out_meta
    if f.uses_result:
        values["result"] = _saved_result(
            result if not inplace else first, diff, name_, f.saved_outputs
        )
    if inplace:
        _attach(first, node, 0)
        if first._base is not None:
            _rebase_view(first, node)
        return result
    for k, o in diff:
        _attach(o, node, k)
        if o._base is not None:
            o._vv = o._storage._version
            if first._inference:
                o._inference = True
    return result


def _holds_tensors(seq):
    """Whether a list/tuple argument holds tensors (an index tuple may start with None)."""
    if not seq:
        return False
    first = seq[0]
    if isinstance(first, Tensor):
        return True
    return first is None and any(isinstance(x, Tensor) for x in seq)


def _saved_result(result, diff, op_name, keep=None):
    """The op's result saved for its own backward: outputs as aliases (no
    reference cycle through their grad_fn; Note [Saved tensors]).  keep: the
    indices the formula reads (None: all); the others are not saved."""
    if not isinstance(result, tuple):
        return SavedTensor(result, op_name, is_output=True)
    diff_ids = {id(o): k for k, o in diff}
    return tuple(
        None
        if keep is not None and i not in keep
        else SavedTensor(o, op_name, is_output=id(o) in diff_ids, output_nr=diff_ids.get(id(o), 0))
        if isinstance(o, Tensor)
        else o
        for i, o in enumerate(result)
    )


def _refuse_inference(op):
    raise RuntimeError(
        f"{op.name}: Inference tensors cannot be saved for backward. Please do not use "
        "Tensors created in inference mode in computation tracked by autograd. To work "
        "around this, you can make a clone to get a normal tensor and use it in autograd, "
        "or use `no_grad()` instead of `inference_mode()`."
    )


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


_AsStridedBackward0 = named_node_class(ViewOfNode, "AsStridedBackward0")


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
    _attach(view, _AsStridedBackward0((cs, 0), base, view), 0)
    view._vv = view._storage._version


def _regenerate_view(view, base):
    _attach(view, _AsStridedBackward0(gradient_edge(base), base, view), 0)
    view._vv = view._storage._version


_native.setup(
    Tensor=Tensor,
    infos=_infos,
    info=_info,
    record=_record,
    record_checked=_record_checked,
    handle_inplace=_handle_inplace,
    edge=_edge,
    accumulator=_accumulator,
    alias=_core_tensor.alias,
    saved_result=_saved_result,
    hooks_stack=hooks_stack,
    call_impl=ec._dispatch.Op.call_impl,
    SavedTensor=SavedTensor,
    AccumulateGrad=AccumulateGrad,
    last_write=last_write,
    own_dirs=_OWN_DIRS,
    # classes whose __slots__ C reads at their offsets (Note [Slot reads] in csrc/slots.h)
    Storage=type(ec.empty(0)._storage),
    dtype=type(ec.float32),
    Op=ec._dispatch.Op,
)
