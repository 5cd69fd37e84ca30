"""The derivative table's machinery: Formula entries and the nodes built from them.

A formula is a Python function ``fn(grad, **names)`` written with ember ops (so
``create_graph=True`` differentiates it again).  Its parameter names say what
it needs: any parameter of the op (tensors among them are saved for backward,
with their versions), ``<param>_shape`` (a tensor parameter's shape, or the
list of shapes of a tensor-list parameter: ``<param>_shapes``),
``<param>_geometry`` ((shape, strides, storage offset): what a view's backward
needs, without keeping the values alive), ``<param>_device`` (a tensor
parameter's device: a copy between devices sends its gradient back), ``result`` (the op's output),
``needs`` (which inputs want a gradient).  It returns one gradient per differentiable input, in the
order given by ``inputs`` (None for no gradient).  The node then sums each
gradient down to its input's shape (undoing broadcasting) and casts it to the
input's dtype, so formulas never deal with either.
"""

import inspect

import ember_core as ec
from ember_autograd import _native
from ember_autograd._grad_mode import state
from ember_autograd._node import Node, SavedTensor, _capture_trace, named_node_class


class OpTable(dict):
    """A table keyed by op objects of ember_core's op table (Note [Op table]).

    An op's name may be given instead of the op (``DERIVATIVES["add"]``); a name
    that is not an op is simply absent."""

    __slots__ = ()

    @staticmethod
    def _op(key):
        return ec.OPS.get(key) if isinstance(key, str) else key

    def __getitem__(self, key):
        return dict.__getitem__(self, self._op(key))

    def __setitem__(self, key, value):
        op = self._op(key)
        if op is None:
            raise KeyError(f"{key!r} is not an op of ember_core's table")
        dict.__setitem__(self, op, value)

    def __contains__(self, key):
        return dict.__contains__(self, self._op(key))

    def get(self, key, default=None):
        return dict.get(self, self._op(key), default)

    def names(self):
        return [op.name for op in self]


DERIVATIVES = OpTable()  # op -> Formula

# Names a formula may ask for that are not op parameters.
_SPECIAL = ("result", "needs")


def _camel(name):
    parts = [p for p in name.strip("_").split("_") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Op"


class Formula:
    __slots__ = (
        "op_name",
        "fn",
        "inputs",
        "input_idx",
        "uses",
        "uses_idx",
        "uses_result",
        "outputs",
        "node_name",
        "node_cls",
        "node_cls_for",
        "multi_grad",
        "wants_needs",
        "shape_uses",
        "saved_outputs",
        "save_only_for",
    )

    def __repr__(self):
        return f"<formula {self.op_name}: {self.inputs}>"


def derivative(op_name, inputs=("input",), outputs=(0,), saved_outputs=None, save_only_for=None):
    """Register ``fn`` as the backward formula of op ``op_name``.

    inputs: the op parameters that receive gradients.  outputs: indices of the
    op's differentiable outputs (for ops returning tuples); with more than one,
    the formula gets a tuple ``grads`` instead of ``grad``.  saved_outputs: the
    indices of ``result`` the formula reads (None: all); the others are not
    saved, so writing them in place later (``relu_`` after a batch norm) is
    allowed, as in PyTorch.  save_only_for: {parameter: (inputs...)} for a tensor
    parameter that only those inputs' gradients read (mul's ``input`` only for
    ``other``'s): it is saved only when one of them requires grad, so writing it
    in place afterwards is allowed when none does, as in PyTorch.
    """

    def register(fn):
        op = ec.OPS[op_name]
        params = op.params
        sig = list(inspect.signature(fn).parameters)
        f = Formula()
        f.op_name = op_name
        f.fn = fn
        f.inputs = tuple(inputs)
        for name in f.inputs:
            if name not in params:
                raise ValueError(f"derivative {op_name}: {name!r} is not a parameter of {op}")
        f.input_idx = tuple(params.index(n) for n in f.inputs)
        uses, shape_uses = [], []
        for name in sig[1:]:
            if name in _SPECIAL:
                continue
            if name in params:
                uses.append(name)
            elif name.endswith("_shape") and name[:-6] in params:
                shape_uses.append((name, params.index(name[:-6])))
            elif name.endswith("_geometry") and name[:-9] in params:
                shape_uses.append((name, params.index(name[:-9])))
            elif (
                name.endswith("_shapes")
                and name[:-7] in params
                or name.endswith("_device")
                and name[:-7] in params
            ):
                shape_uses.append((name, params.index(name[:-7])))
            else:
                raise ValueError(f"derivative {op_name}: formula asks for unknown name {name!r}")
        f.uses = tuple(uses)
        f.uses_idx = tuple(params.index(n) for n in f.uses)
        f.shape_uses = tuple(shape_uses)
        f.uses_result = "result" in sig
        f.saved_outputs = None if saved_outputs is None else frozenset(saved_outputs)
        f.save_only_for = None
        if save_only_for:
            f.save_only_for = {
                name: tuple(f.inputs.index(i) for i in needers)
                for name, needers in save_only_for.items()
            }
        f.outputs = tuple(outputs)
        f.multi_grad = len(f.outputs) > 1
        f.node_name = _camel(op_name) + "Backward0"
        f.node_cls = named_node_class(OpNode, f.node_name)
        f.node_cls_for = None  # or fn(args) -> node class, for ops PyTorch names by argument
        f.wants_needs = "needs" in sig
        DERIVATIVES[op] = f
        return fn

    return register


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def real_grad(g, dtype):
    """g in an input's dtype.  Note [Complex gradients]: ember follows PyTorch's
    convention -- the gradient of a real loss L with respect to a complex z is
    dL/d(re z) + i dL/d(im z), the conjugate Wirtinger derivative times two, so
    a formula's chain rule multiplies the incoming gradient by the conjugate of
    the local derivative (``grad * other.conj()`` for ``mul``) -- and where a
    real input met a complex computation its gradient is the real part."""
    if g._dtype.is_complex and not dtype.is_complex:
        g = ec.real(g)
    return g.to(dtype)


def sum_to(g, shape):
    """Sum g down to ``shape`` (the inverse of broadcasting)."""
    if g._shape == shape:
        return g
    lead = len(g._shape) - len(shape)
    if lead < 0:  # fewer dims than the input (a 0-d gradient of a 1-element input)
        return g.reshape(shape) if g._numel == _prod(shape) else g.expand(shape)
    inner = [lead + i for i, s in enumerate(shape) if s == 1 and g._shape[lead + i] != 1]
    if not inner:  # only leading dims to drop (a bias): one reduction
        return g.sum(tuple(range(lead))) if lead else g
    g = g.sum(tuple(range(lead)) + tuple(inner), keepdim=True)
    return g.reshape(shape) if g._shape != shape else g


class OpNode(Node):
    """A node built from a derivative-table formula."""

    __slots__ = ()  # _formula, _values, _in_meta: C fields (Note [C nodes])

    def __init__(self, formula, next_functions, values, in_meta, n_outputs):
        # Node.__init__, inlined (the handler's fast path makes these nodes in C)
        self.next_functions = next_functions
        self._n_outputs = n_outputs
        self._out_meta = None
        self._extra = _capture_trace() if state.anomaly else None
        self._formula = formula
        self._values = values  # name -> SavedTensor or plain value
        self._in_meta = in_meta  # per input: (shape, dtype) or None

    def name(self):
        return type(self).__name__  # the formula's node name, or one chosen per call

    # The formula called with the values it saved, each gradient then summed to
    # its input's shape and cast to its dtype (this module's docstring); a
    # formula that returns the wrong number of gradients, or a non-tensor, is
    # an error.  In C (Note [C nodes]): it runs once per node of every backward.
    apply = _native.NodeBase._apply_formula

    # Free the saved tensors (after a backward without retain_graph).
    release = _native.NodeBase._release_formula

    @property
    def saved_tensors(self):
        return tuple(v.unpack(self) for v in self._values.values() if isinstance(v, SavedTensor))

    def __getattr__(self, name):
        # PyTorch's grad_fn._saved_<name> (``self`` for the input); _raw_saved_ too
        for prefix in ("_saved_", "_raw_saved_"):
            if name.startswith(prefix):
                key = name[len(prefix) :]
                key = "input" if key == "self" else key
                values = self._values
                if key in values:
                    v = values[key]
                    if prefix == "_raw_saved_":
                        return v
                    if isinstance(v, SavedTensor):
                        return v.unpack(self)
                    return _unpack_sequence(v, self) if isinstance(v, (list, tuple)) and v else v
        raise AttributeError(f"'{self.name()}' object has no attribute '{name}'")


def _unpack_sequence(v, node):
    if any(x.__class__ is SavedTensor for x in v):
        out = [x.unpack(node) if x.__class__ is SavedTensor else x for x in v]
        return out if v.__class__ is list else tuple(out)
    return v
