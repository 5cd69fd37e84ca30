"""Custom differentiable functions: subclass Function with static forward and
backward methods and call ``MyFn.apply(...)``.

>>> class Square(Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, grad):
...         (x,) = ctx.saved_tensors
...         return 2 * x * grad

forward runs with grad mode off (its ops are not recorded); the outputs get one
node whose backward is the user's.  Outputs that are views of inputs (or inputs
returned as they are) may not be modified in place later: the view+in-place
machinery would bypass the custom backward.  Inputs modified in place must be
declared with ``ctx.mark_dirty`` (and returned).
"""

import functools

import ember_core as ec
from ember_autograd import _grad_mode
from ember_autograd._formula import sum_to
from ember_autograd._node import Node, SavedTensor, gradient_edge, named_node_class

Tensor = ec.Tensor
state = _grad_mode.state


class FunctionCtx:
    """The ``ctx`` handed to forward and backward."""

    def __init__(self):
        self._to_save = ()
        self._saved = None
        self._node = None
        self._dirty = ()
        self._non_diff = ()
        self.materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        """Keep tensors for backward (read them back with ``ctx.saved_tensors``);
        an in-place change to one before backward is reported there."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument is of type "
                    f"{type(t).__name__}"
                )
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._to_save_fw = tensors

    @property
    def saved_tensors(self):
        if self._saved is None:
            return tuple(self._to_save)
        return tuple(s.unpack(self._node) if isinstance(s, SavedTensor) else s for s in self._saved)

    saved_variables = saved_tensors

    def mark_dirty(self, *tensors):
        """Declare inputs that forward modified in place (they must be returned)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that get no gradient (e.g. indices)."""
        self._non_diff = tensors

    def set_materialize_grads(self, value):
        """With False, backward receives None (not zeros) for outputs without a gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Node):
    """The node of a custom Function call."""

    __slots__ = ("_cls", "_ctx")  # and Node's _in_meta

    def __init__(self, cls, ctx, edges, in_meta, n_outputs):
        Node.__init__(self, edges, n_outputs)
        self._cls = cls
        self._ctx = ctx
        self._in_meta = in_meta  # per input: (shape, dtype) or None

    def name(self):
        return f"{self._cls.__name__}Backward"

    def apply(self, grads):
        ctx = self._ctx
        grads = list(grads)
        if ctx.materialize_grads and self._out_meta:
            for i, g in enumerate(grads):
                if g is None and i < len(self._out_meta) and self._out_meta[i] is not None:
                    shape, dtype, device = self._out_meta[i]
                    grads[i] = ec.zeros(shape, dtype=dtype, device=device)
        result = self._cls.backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self.next_functions)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected {n}, "
                f"got {len(result)})"
            )
        return tuple(self._validate(i, g) for i, g in enumerate(result))

    def _validate(self, i, g):
        """PyTorch's validate_outputs: sum broadcast gradients down to the
        input's shape, cast to its dtype, refuse anything else."""
        if self.next_functions[i][0] is None or g is None:
            return None
        if not isinstance(g, Tensor):
            raise TypeError(f"function {self.name()} returned a {type(g).__name__} as gradient {i}")
        shape, dtype = self._in_meta[i]
        if g._shape != shape:
            if not _expandable(shape, g._shape):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - got "
                    f"{list(g._shape)} but expected shape compatible with {list(shape)}"
                )
            g = sum_to(g, shape)
        if g._dtype is not dtype:
            g = g.to(dtype)
        return g

    def release(self):
        if self._ctx._saved is not None:
            for s in self._ctx._saved:
                if isinstance(s, SavedTensor):
                    s.release()


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to``."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to)))


class Function:
    """Base class of custom differentiable functions (see the module docstring)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        record = state.enabled and any(ctx.needs_input_grad)
        uses_setup = cls.setup_context is not Function.setup_context
        prev = state.enabled
        state.enabled = False  # forward is not recorded: its node is the user's backward
        try:
            if uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            state.enabled = prev
        if not record:
            return outputs
        return _connect(cls, ctx, args, outputs)


def _connect(cls, ctx, args, outputs):
    """Give the outputs of a custom Function their node."""
    from ember_autograd._handler import _attach, _edge, _rebase_view

    edges = tuple(_edge(a) if isinstance(a, Tensor) and a._rg else (None, 0) for a in args)
    in_meta = tuple((a._shape, a._dtype) if isinstance(a, Tensor) else None for a in args)
    single = not isinstance(outputs, tuple)
    outs = list((outputs,) if single else outputs)
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_diff}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    for t in ctx._dirty:
        if id(t) not in inputs:
            raise RuntimeError(
                f"{cls.__name__}: mark_dirty was given a tensor that is not an input"
            )
        if t._rg and t.grad_fn is None and t._base is None:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation."
            )
        if not any(o is t for o in outs):
            raise RuntimeError(f"{cls.__name__}: a tensor marked dirty must be returned by forward")
    node_cls = named_node_class(BackwardCFunction, f"{cls.__name__}Backward")
    node = node_cls(cls, ctx, edges, in_meta, len(outs))
    metas = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            metas.append(None)
            continue
        metas.append((o._shape, o._dtype, o._storage._device))
        if id(o) in non_diff or not o._dtype.differentiable:
            continue
        if id(o) in inputs and id(o) not in dirty:
            o = outs[i] = _alias_output(o)  # never re-parent an input's history
        _attach(o, node, i)
        if id(o) in dirty:
            if o._base is not None:
                _rebase_view(o, node)
        elif o._base is not None:
            o._custom_view = cls.__name__  # see the module docstring
            o._vv = o._storage._version
    node._out_meta = tuple(metas)
    ctx._node = node
    out_ids = {id(o): i for i, o in enumerate(outs) if isinstance(o, Tensor)}
    ctx._saved = tuple(
        None
        if t is None
        else SavedTensor(
            t, cls.__name__, is_output=id(t) in out_ids, output_nr=out_ids.get(id(t), 0)
        )
        for t in ctx._to_save
    )
    ctx._to_save = ()
    return outs[0] if single else tuple(outs)


def _alias_output(t):
    from ember_core._tensor import tensor as core_tensor

    return core_tensor.view_of(t, t._shape, t._stride, t._offset, t._numel, t._contig)


def once_differentiable(fn):
    """Decorate a backward that cannot itself be differentiated: it runs without
    recording, and differentiating its result raises a clear error."""

    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        prev = state.enabled
        state.enabled = False
        try:
            result = fn(ctx, *grads)
        finally:
            state.enabled = prev
        if not prev or not any(isinstance(g, Tensor) and g._rg for g in grads):
            return result
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        err = _DelayedError(
            "trying to differentiate twice a function that was marked with @once_differentiable",
            tuple(
                gradient_edge(g) if isinstance(g, Tensor) and g._rg else (None, 0) for g in grads
            ),
        )
        from ember_autograd._handler import _attach

        wrapped = []
        for o in outs:
            if isinstance(o, Tensor) and o._dtype.differentiable:
                o = _alias_output(o)
                _attach(o, err, 0)
            wrapped.append(o)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper


class _DelayedError(Node):
    __slots__ = ("_msg",)

    def __init__(self, msg, edges):
        Node.__init__(self, edges)
        self._msg = msg

    def name(self):
        return "DelayedError"

    def apply(self, grads):
        raise RuntimeError(self._msg)
