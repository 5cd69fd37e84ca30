"""Graph nodes (``grad_fn``), saved tensors and hooks.

A Node turns the gradients of its outputs into gradients of its inputs; its
``next_functions`` are the nodes that produced those inputs (or the
AccumulateGrad of a leaf).  Nodes are created by the dispatch handler
(_handler.py) from the derivative table, and by custom Functions.  A node keeps
only what backward needs: everything optional (hooks, metadata, the anomaly
trace) lives in one ``_extra`` record that is None for almost every node.

Note [Saved tensors]
A node keeps the tensors its formula needs together with their storage's
version at save time.  Unpacking checks the version: an in-place write in
between raises, naming the op that saved the tensor and the op (and source
line) that last wrote into that storage (every in-place write notes that in
``last_write``, at the cost of one weak-dictionary store).  A node never keeps a
strong reference to its own output's Tensor object, which points back at the
node: it keeps an alias with no grad_fn and rebuilds the link when unpacking,
so forward graphs have no reference cycles and memory is freed by reference
counting alone.
"""

import itertools
import linecache
import weakref

from ember_autograd import _grad_mode, _native
from ember_core._tensor import tensor as _core_tensor

_alias = _core_tensor.alias
state = _grad_mode.state


class HookDict(dict):
    """Hooks by handle id (a dict that handles can refer to weakly)."""

    __slots__ = ("__weakref__",)


class RemovableHandle:
    """Returned by register_*hook; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks_dict):
        self._ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)

    def remove(self):
        d = self._ref()
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# Storage -> (version after the write, op name, (file, line)) of the last
# in-place write into it, for the error of a stale saved tensor.
last_write = weakref.WeakKeyDictionary()


def _describe(t):
    return f"[ember.{t._dtype.name} {list(t._shape)}]"


def _format_location(where):
    if not where:
        return ""
    filename, lineno = where
    line = linecache.getline(filename, lineno).strip()
    return f" at {filename}:{lineno}" + (f": `{line}`" if line else "")


_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


# Note [Saved tensors hooks]
# graph.saved_tensors_hooks pushes (pack, unpack) pairs here; only the innermost
# applies.  A SavedTensor made while the stack is not empty stores pack(t) and
# calls unpack on it when backward reads it; with the stack empty (almost
# always) saving costs one truth test more.  ``hooks_disabled`` holds the
# message of graph.disable_saved_tensors_hooks while that is active.
hooks_stack = []
hooks_disabled = [None]


class SavedTensor(_native.SavedTensorBase):
    """A tensor saved for backward, with its version (Note [Saved tensors]).

    The fields (``_t``, ``_version``, ``_saved_by``, ``_output_nr``,
    ``_hooked``) and ``unpack(node)`` for the common case are C's
    (Note [C extension]); the handler's fast path makes these objects in C."""

    __slots__ = ()

    def __init__(self, t, saved_by, is_output=False, output_nr=0):
        self._version = t._storage._version
        self._saved_by = saved_by
        self._output_nr = output_nr if is_output else -1
        if hooks_stack:
            self._pack(t, is_output)
            return
        self._hooked = None
        self._t = _alias(t) if is_output else t

    def _pack(self, t, is_output):
        """Note [Saved tensors hooks]: keep pack(t), and what rebuilds t's links
        to the graph after unpack (its storage weakly, for the version check)."""
        pack, unpack = hooks_stack[-1]
        packed = pack(t)
        leaf_acc = None
        if not is_output and t._rg and t.grad_fn is None:
            leaf_acc = weakref.ref(accumulator(t))
        edge = None if is_output else ((t.grad_fn, t._output_nr) if t.grad_fn else None)
        self._hooked = (unpack, weakref.ref(t._storage), leaf_acc, edge)
        self._t = (packed,)  # boxed: pack may return None, and _t None means freed

    def _unpack_slow(self, node):
        """unpack(node) in full: what C's unpack hands over (freed, hooked, or
        modified since it was saved)."""
        t = self._t
        if t is None:
            raise RuntimeError(_FREED)
        if self._hooked is not None:
            return self._unpack_hooked(node)
        if t._storage._version != self._version:
            self._stale(t, node)
        if self._output_nr >= 0:
            u = _alias(t)
            d = u.__dict__
            d["_rg"] = True
            d["grad_fn"] = node
            d["_output_nr"] = self._output_nr
            return u
        return t

    def _unpack_hooked(self, node):
        unpack, storage_ref, leaf_acc, edge = self._hooked
        storage = storage_ref()
        t = unpack(self._t[0])
        from ember_core import Tensor

        if not isinstance(t, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(t).__name__}"
            )
        if storage is not None and storage._version != self._version:
            self._stale(t, node, storage)
        # Give the unpacked tensor the saved one's place in the graph, so a
        # create_graph backward still differentiates through it.
        if self._output_nr >= 0:
            link = (node, self._output_nr)
        elif edge is not None:
            link = edge
        elif leaf_acc is not None and leaf_acc() is not None:
            # a leaf: gradients must reach the original's AccumulateGrad
            own = t.__dict__.get("_acc")
            if own is not None and own() is leaf_acc():
                return t
            t = _alias(t)
            d = t.__dict__
            d["_rg"] = True
            d["_acc"] = leaf_acc
            return t
        else:
            return t
        if t.grad_fn is link[0] and t._output_nr == link[1]:
            return t
        u = _alias(t)
        d = u.__dict__
        d["_rg"] = True
        d["grad_fn"] = link[0]
        d["_output_nr"] = link[1]
        return u

    def _stale(self, t, node, storage=None):
        storage = storage if storage is not None else t._storage
        by = ""
        write = last_write.get(storage)
        if write is not None:
            _, op, where = write
            by = f" It was modified in place by {op}{_format_location(where)}."
        output = (
            f", which is output {self._output_nr} of {node.name()}," if self._output_nr >= 0 else ""
        )
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {_describe(t)}{output} is at version {storage._version}; "
            f"expected version {self._version} instead. It was saved by {self._saved_by} "
            f"(for {node.name()}).{by} Hint: enable anomaly detection to find the forward "
            "operation that created it, or clone() the tensor before modifying it."
        )

    def release(self):
        self._t = None


class _Extra:
    """What few nodes have: hooks, metadata, the anomaly-mode forward trace."""

    __slots__ = ("pre_hooks", "post_hooks", "tensor_pre_hooks", "retain_hooks", "metadata", "trace")

    def __init__(self):
        self.pre_hooks = self.post_hooks = self.tensor_pre_hooks = self.retain_hooks = None
        self.metadata = self.trace = None


def _capture_trace():
    from ember_autograd import _anomaly

    extra = _Extra()
    extra.trace = _anomaly.capture_stack()
    return extra


class Node(_native.NodeBase):
    """A backward function in the graph (the ``grad_fn`` of a tensor).

    Its fields are C's (Note [C nodes] in csrc/autograd.c): ``next_functions``,
    ``_seq`` (given at allocation), ``_n_outputs``, ``_out_meta``, ``_extra``,
    and the derivative-table node's ``_formula``, ``_values``, ``_in_meta``."""

    __slots__ = ()

    _ctx = None  # a custom Function's ctx (BackwardCFunction)

    def __init__(self, next_functions, n_outputs=1):
        self.next_functions = next_functions
        self._n_outputs = n_outputs
        self._out_meta = None
        self._extra = _capture_trace() if state.anomaly else None

    # -------------------------------------------------------------- protocol

    def name(self):
        return type(self).__name__

    def apply(self, grads):
        """Gradients of the inputs (one per next_functions entry) from the
        gradients of the outputs."""
        raise NotImplementedError

    def release(self):
        """Free saved tensors after a backward without retain_graph."""

    def __call__(self, *grads):
        return self.apply(grads)

    def _get_extra(self):
        if self._extra is None:
            self._extra = _Extra()
        return self._extra

    @property
    def metadata(self):
        extra = self._get_extra()
        if extra.metadata is None:
            extra.metadata = {}
        return extra.metadata

    @property
    def _trace(self):
        return self._extra.trace if self._extra is not None else None

    def _sequence_nr(self):
        return self._seq

    def __repr__(self):
        return f"<{self.name()} object at 0x{id(self):x}>"

    # ----------------------------------------------------------------- hooks

    def _add_hook(self, kind, fn):
        extra = self._get_extra()
        hooks = getattr(extra, kind)
        if hooks is None:
            hooks = HookDict()
            setattr(extra, kind, hooks)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> new grad_inputs or None, after the node runs."""
        return self._add_hook("post_hooks", fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) -> new grad_outputs or None, before the node runs."""
        return self._add_hook("pre_hooks", fn)

    def _register_tensor_hook(self, output_nr, fn):
        extra = self._get_extra()
        if extra.tensor_pre_hooks is None:
            extra.tensor_pre_hooks = {}
        hooks = extra.tensor_pre_hooks.setdefault(output_nr, HookDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def _register_retain_grad(self, output_nr, tensor):
        extra = self._get_extra()
        if extra.retain_hooks is None:
            extra.retain_hooks = {}
        extra.retain_hooks[output_nr] = weakref.ref(tensor)


_NODE_CLASSES = {}


def named_node_class(base, name):
    """A subclass of node class ``base`` named ``name``, made once: ``type(grad_fn)``
    then reads as PyTorch's node class (``MulBackward0``) while the behaviour stays
    ``base``'s.  Chosen when a formula or Function is defined, not per node."""
    cls = _NODE_CLASSES.get((base, name))
    if cls is None:
        cls = _NODE_CLASSES[base, name] = type(name, (base,), {"__slots__": ()})
        cls.__module__ = base.__module__
    return cls


class AccumulateGrad(Node, _native.AccumulateGradBase):
    """The sink of a leaf: adds incoming gradients into ``variable.grad``."""

    __slots__ = ()  # variable: a C field

    def __init__(self, variable):
        Node.__init__(self, (), 1)
        self.variable = variable

    def name(self):
        return "AccumulateGrad"


def _accumulator(t):
    """accumulator(t) in Python: what C's does, with anomaly mode's trace."""
    ref = t.__dict__.get("_acc")
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._acc = weakref.ref(node)
    return node


# accumulator(t): the (shared) AccumulateGrad node of leaf t, which t holds
# weakly (as PyTorch does): C's, made without running Python (_accumulator in
# anomaly mode).
accumulator = _native.accumulator


def gradient_edge(t):
    """(node, input_nr) through which gradients reach tensor t, or (None, 0)."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._rg:
        return (accumulator(t), 0)
    return (None, 0)
