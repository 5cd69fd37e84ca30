"""Recording a model's ops into an ONNX graph through the op table's dispatch hook.

Note [ONNX tracing]
export() registers a handler with ember_core (docs/design.md, Note [Dispatch]) and
runs the model once under no_grad.  The handler sees each non-composite op call
with its canonical arguments.  A tensor is *traced* when it derives from the
model's inputs: the graph knows it by name.  An op with a traced tensor among its
arguments becomes ONNX nodes through its mapping (_mappings.py, keyed by the op
itself); an op without one is computed eagerly and its result, if a traced op
uses it later, becomes an initializer -- parameters, buffers, a transposed weight,
a tensor of zeros made in forward() all end up as constants this way.  Ops that
an op's implementation calls run inside its mapping and are not recorded (depth
counter).  Every tensor the graph names is kept alive until the export ends, so
the id() keys stay unique.  Sizes a model computes in Python from a tensor's shape
are recorded as the numbers they were, as torch.onnx's tracer does.
"""

import itertools

import numpy as np

import ember_core as ec

_ELEMENT_TYPES = {
    ec.float32: "FLOAT",
    ec.float64: "DOUBLE",
    ec.float16: "FLOAT16",
    ec.bfloat16: "BFLOAT16",
    ec.int64: "INT64",
    ec.int32: "INT32",
    ec.int16: "INT16",
    ec.int8: "INT8",
    ec.uint8: "UINT8",
    ec.bool: "BOOL",
}


class UnsupportedOperatorError(RuntimeError):
    """An op the model calls has no ONNX mapping (ember/onnx/_mappings.py)."""


def element_type(onnx, dtype):
    name = _ELEMENT_TYPES.get(dtype)
    if name is None:
        raise UnsupportedOperatorError(f"ember.onnx.export: dtype {dtype} has no ONNX type here")
    return getattr(onnx.TensorProto, name)


def to_numpy(t):
    t = t.detach()
    if t.dtype is ec.bfloat16:
        raise UnsupportedOperatorError("ember.onnx.export: bfloat16 constants are not supported")
    return np.ascontiguousarray(t.cpu().numpy())


class Graph:
    """The ONNX graph being recorded: nodes, initializers, and the names of traced
    tensors.  Mappings build nodes with node(), name inputs with name() and
    constants with const(), and declare results with bind()."""

    def __init__(self, onnx, opset):
        self.onnx = onnx
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self.names = {}  # id(tensor) -> ONNX value name
        self.alive = []  # every tensor named here, so id()s stay unique
        self.counter = itertools.count()
        self.constants = {}  # id(tensor) -> initializer name
        self.unmapped = {}  # id(tensor) -> what made it: a traced op's output no node gives
        self.sharing = {}  # id(base tensor) -> the named tensors that view its memory
        self.stale = set()  # id(tensor): changed in place through another tensor

    def fresh(self, hint="v"):
        return f"{hint}_{next(self.counter)}"

    def is_traced(self, t):
        return isinstance(t, ec.Tensor) and id(t) in self.names

    def bind(self, t, name):
        """t is the value ``name`` from now on (an in-place op rebinds its input)."""
        self.names[id(t)] = name
        self.alive.append(t)
        self._share(t)

    def _share(self, t):
        base = t._base if t._base is not None else t
        self.sharing.setdefault(id(base), []).append(t)

    def mutate(self, t):
        """An in-place op is about to change t: every other named tensor sharing its
        memory (its base, the base's views) keeps its old ONNX value, so it goes stale
        -- using one later raises instead of exporting a wrong graph."""
        base = t._base if t._base is not None else t
        for other in self.sharing.get(id(base), ()):
            if other is not t:
                self.stale.add(id(other))
        self.stale.discard(id(t))

    def name(self, t):
        """The ONNX value name of tensor t: its graph name when traced, else a new
        initializer holding its current value."""
        if id(t) in self.stale:
            raise UnsupportedOperatorError(
                "ember.onnx.export: a tensor is used after an in-place op changed it through "
                "a view or its base; ONNX values are immutable, so the export cannot follow "
                "it (use the out-of-place op)"
            )
        if id(t) in self.names:
            return self.names[id(t)]
        if id(t) in self.unmapped:
            raise UnsupportedOperatorError(f"ember.onnx.export: {self.unmapped[id(t)]}")
        if id(t) not in self.constants:
            self.constants[id(t)] = self.const(to_numpy(t), "const")
            self.alive.append(t)
            self._share(t)
        return self.constants[id(t)]

    def const(self, value, hint="const"):
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, values, hint="shape"):
        return self.const(np.asarray(list(values), dtype=np.int64), hint)

    def node(self, op_type, inputs, outputs=1, **attrs):
        """Add a node; returns its output name (or names, when outputs > 1)."""
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names


class Tracer:
    """The dispatch handler of one export: records traced ops through their mappings."""

    def __init__(self, graph, mappings):
        self.graph = graph
        self.mappings = mappings
        self.depth = 0

    def __call__(self, op, args, kwargs, call):
        if self.depth:
            return call(args, kwargs)
        self.depth += 1
        try:
            result = call(args, kwargs)
        finally:
            self.depth -= 1
        if not _any_traced(self.graph, args):
            return result  # a constant computation: its result is a constant if used
        mapping = self.mappings.get(op)
        if mapping is None:
            raise UnsupportedOperatorError(
                f"ember.onnx.export: op '{op.name}' has no ONNX mapping yet "
                "(ember/onnx/_mappings.py)"
            )
        self.depth += 1  # what the mapping computes eagerly (weights' transposes) is not recorded
        try:
            mapping(self.graph, result, *args)
        finally:
            self.depth -= 1
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for i, out in enumerate(outputs):  # outputs the mapping gives no node for
            if isinstance(out, ec.Tensor) and id(out) not in self.graph.names:
                self.graph.unmapped[id(out)] = (
                    f"output {i} of op '{op.name}' is used but has no ONNX mapping yet"
                )
                self.graph.alive.append(out)
        return result


def _any_traced(graph, args):
    """Whether a tensor among args (or in a list argument) is traced; raises when one is
    an op's output that no mapping gave a node for."""
    traced = False
    for a in args:
        for t in a if isinstance(a, (list, tuple)) else (a,):
            if isinstance(t, ec.Tensor):
                if id(t) in graph.unmapped:
                    raise UnsupportedOperatorError(f"ember.onnx.export: {graph.unmapped[id(t)]}")
                traced = traced or id(t) in graph.names
    return traced
