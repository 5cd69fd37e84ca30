"""``ember.compile``: run a function once eagerly while recording the kernels it
launches, then replay them from C (Note [Capture and replay] in
ember_core/_tensor/graph.py holds the mechanism; this module holds the policy).

Note [ember.compile]
A compiled function (or module) keeps up to ``CACHE_SIZE`` graphs, keyed by
what its inputs and the global state look like: each tensor input's shape,
strides, dtype, device and requires_grad, the other arguments' values, grad
mode, inference mode and autocast.  For a key it has not seen:

1. the first call runs eagerly (warm-up: optimizers create their state, grads
   appear), the next two are recorded (each runs eagerly while recording) and
   compared: equal recordings (addresses inside the graphs' own memory
   compared by position) mean the kernel arguments do not depend on Python
   state that changes from call to call, and the second recording is kept;
   different ones are recorded again (three tries), then the function stays
   eager, with a warning naming the first argument that differed;
2. later calls *replay*: the inputs are copied into the graph's static input
   buffers (tensors the recording allocated), the random-number slots get
   fresh counters from their generators, ``ec_graph_run`` runs the kernels,
   inputs the function wrote into are copied back, the gradients of the leaf
   tensors are set to the graph's gradient buffers (as the eager call left
   them), and the outputs are returned as fresh copies (so a kept ``loss`` is
   not overwritten by the next call).

Besides the key, a graph is guarded by what it read from outside: the address
of every tensor it touched that it did not create (parameters, buffers,
optimizer state: ``p.data = ...`` changes it), each leaf's ``.grad`` being
None or not as when recorded (and the same memory where the graph reads it),
every module's ``training`` flag, and every optimizer's hyperparameters (a
scheduler's new lr is a guard miss: the scalar is baked into the kernel
arguments).  A guard miss records again; past ``CACHE_SIZE`` graphs, or
``CACHE_SIZE`` re-recordings of one key, the call runs eagerly, with a
one-time warning saying which guard failed.

Anything a replay cannot repeat (a value read on the host, a data-dependent
output shape, a kernel writing a host array; see Note [Capture and replay])
makes the function eager for good, with a one-time warning naming it -- or,
with ``fullgraph=True``, raises.

A call whose outputs require grad while it computes no gradient itself (a
compiled module's forward in training, its backward run by the caller) also
records that backward, right after the forward: ``autograd.grad`` of the
outputs, from static gradient buffers, into the leaves the forward used.  A
replayed forward returns its outputs through ``_ReplayedForward``, whose
backward copies the incoming gradients into those buffers and replays it.
"""

import collections
import functools
import gc
import warnings
import weakref

import ember_autograd as ag
import ember_core as ec
from ember_core._base import autocast as _autocast
from ember_core._base import lib as core_lib
from ember_core._tensor import graph as _graph
from ember_core._tensor.tensor import Tensor
from ember_core._tensor.tensor import empty as _empty
from ember_nn._lib import ffi as nn_ffi
from ember_nn.modules import module as nn_module
from ember_nn.optim import algorithms as nn_algorithms
from ember_nn.optim import lr_scheduler as nn_lr_scheduler
from ember_nn.optim import optimizer as nn_optimizer

CACHE_SIZE = 8
_compiled = weakref.WeakSet()  # every CompiledFunction alive, for ember.compiler.reset()
_RECORD_TRIES = 3
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = ("inductor", "cudagraphs", "eager", "aot_eager")


class CompileError(RuntimeError):
    """``fullgraph=True`` and the function cannot be captured whole."""


def compile(
    model=None,
    *,
    fullgraph=False,
    dynamic=None,
    backend="inductor",
    mode=None,
    options=None,
    disable=False,
):
    """Capture ``model`` (a function or a module) and replay its kernels.

    ``fullgraph=True`` raises instead of falling back to eager; ``dynamic``:
    None/False record one graph per input shape, True is refused (ember has no
    symbolic shapes); every ``mode`` and the backends 'inductor' and
    'cudagraphs' capture and replay; 'eager' and 'aot_eager' return the model
    unchanged; ``disable=True`` returns it unchanged.

    >>> step = ember.compile(train_step)
    >>> for x, y in batches:
    ...     loss = step(x, y)
    """
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES[1:])}")
    if callable(backend) and not isinstance(backend, str):
        raise NotImplementedError(
            "ember.compile: custom backends are not supported (ember records kernel calls, "
            "not FX graphs); use backend='inductor' or 'eager'"
        )
    if backend not in _BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, ember.compile knows {_BACKENDS}")
    if dynamic:
        raise NotImplementedError(
            "ember.compile(dynamic=True): ember has no symbolic shapes; it records one graph per "
            "input shape (dynamic=None or False)"
        )
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"ember.compile: options must be a dict, not {type(options).__name__}")
    if options:
        raise NotImplementedError(
            f"ember.compile: options {sorted(options)} are inductor's; ember's capture has none"
        )
    if model is None:
        return functools.partial(
            compile,
            fullgraph=fullgraph,
            dynamic=dynamic,
            backend=backend,
            mode=mode,
            disable=disable,
        )
    if not callable(model):
        raise RuntimeError("ember.compile: model must be callable (a function or a Module)")
    if disable or backend in ("eager", "aot_eager"):
        return model
    if isinstance(model, nn_module.Module):
        return OptimizedModule(model, fullgraph)
    return CompiledFunction(model, fullgraph)


# -------------------------------------------------------------- inputs


def _flatten(obj, leaves):
    """The leaves of nested tuples, lists and dicts, in order; returns a spec."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return None
    if type(obj) in (tuple, list):
        return (type(obj), [_flatten(o, leaves) for o in obj])
    if type(obj) is dict:
        return (dict, [(k, _flatten(v, leaves)) for k, v in obj.items()])
    leaves.append(obj)
    return None


_POSITIONAL_TENSORS = (tuple, [(tuple, [None]), (dict, [])])  # a spec made on demand


def _unflatten(spec, it):
    if spec is _POSITIONAL_TENSORS:
        return tuple(it), {}
    if spec is None:
        return next(it)
    kind, parts = spec
    if kind is dict:
        return {k: _unflatten(s, it) for k, s in parts}
    return kind(_unflatten(s, it) for s in parts)


def _leaf_key(x):
    if isinstance(x, Tensor):
        return (x._shape, x._stride, x._dtype, x._storage._device, x._rg)
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return ("value", type(x), x)


def _global_key():
    st = _autocast._state
    return (
        ag.is_grad_enabled(),
        ag.is_inference_mode_enabled(),
        st.enabled["cpu"],
        st.enabled["cuda"],
        st.dtype["cpu"],
        st.dtype["cuda"],
    )


def _describe_miss(old, new):
    """Which part of the key differs, in words (for the fallback warning)."""
    (og, oleaves), (ng, nleaves) = old, new
    if og != ng:
        names = ("grad mode", "inference mode", "CPU autocast", "CUDA autocast")
        names += ("CPU autocast dtype", "CUDA autocast dtype")
        for name, a, b in zip(names, og, ng):
            if a != b:
                return f"{name} changed from {a} to {b}"
    if len(oleaves) != len(nleaves):
        return f"the number of arguments changed from {len(oleaves)} to {len(nleaves)}"
    what = ("shape", "stride", "dtype", "device", "requires_grad")
    for i, (a, b) in enumerate(zip(oleaves, nleaves)):
        if a == b:
            continue
        if a[0] in ("value", "id") or b[0] in ("value", "id") or len(a) != len(b):
            return f"argument {i} changed from {a[-1]!r} to {b[-1]!r}"
        for name, u, v in zip(what, a, b):
            if u != v:
                return f"argument {i}'s {name} changed from {u} to {v}"
    return "the arguments changed"


# -------------------------------------------------------------- graphs


class _Entry:
    """One recorded graph and everything its replay needs and checks."""

    def __init__(
        self,
        graph,
        statics,
        mutated,
        outputs,
        out_spec,
        leaves,
        externals,
        modules,
        optimizers,
        backward=None,
    ):
        self.graph = graph
        self.backward = backward  # a _Backward when the outputs need autograd
        self.statics = statics  # [(index in the flat inputs, static tensor)]
        self._static = dict(statics)
        self.mutated = mutated  # indices of statics the function wrote into
        self.outputs = outputs  # [(kind, value)] per flat output
        self.out_spec = out_spec
        self.leaves = leaves  # [(leaf, grad was None, grad address or 0, exit grad)]
        self.externals = externals  # [(tensor, address)]
        self.modules = modules  # [(module, training)]
        self.optimizers = optimizers  # [(optimizer, hyperparameters)]

    def check(self):
        """None when every guard holds, else what failed."""
        for t, ptr in self.externals:
            if t._ptr != ptr:
                return "a tensor the graph reads moved (its .data was replaced)"
        for p, was_none, ptr, _exit in self.leaves:
            g = p.grad
            if (was_none is not None and (g is None) != was_none) or (ptr and g._ptr != ptr):
                return "a parameter's .grad is not what it was when recorded"
        for m, training in self.modules:
            if m.training != training:
                return f"{type(m).__name__}.training changed to {m.training}"
        for opt, hyper in self.optimizers:
            if _hyperparameters(opt) != hyper:
                return f"{type(opt).__name__}'s hyperparameters changed (lr, momentum, ...)"
        return None

    def run(self, flat):
        for i, s in self.statics:
            _copy_into(s, flat[i])
        self.graph.replay()
        self.copy_back(flat)
        for p, _none, _ptr, g in self.leaves:
            if p.grad is not g:
                p.grad = g
        return _unflatten(self.out_spec, iter(self.outputs_for(flat)))

    def copy_back(self, flat):
        """Inputs the function wrote into get the static buffers' values."""
        for i in self.mutated:
            _copy_into(flat[i], self._static[i])

    def outputs_for(self, flat):
        outs = []
        diff = None
        if self.backward is not None:
            self.backward.generation += 1
            diff = _ReplayedForward.apply(self.backward, *self.backward.leaves)
            if isinstance(diff, Tensor):
                diff = (diff,)
        for kind, value in self.outputs:
            if kind == "grad":
                outs.append(diff[value])
                continue
            if kind == "copy":
                outs.append(_fresh_copy(value))
            elif kind == "input":
                outs.append(flat[value])
            else:
                outs.append(value)
        return outs

    def release(self):
        self.graph.release()
        if self.backward is not None:
            self.backward.graph.release()


def _hyperparameters(opt):
    return [tuple((k, v) for k, v in g.items() if k != "params") for g in opt.param_groups]


def _copy_into(dst, src):
    n = dst._numel * dst._dtype.itemsize
    if dst._contig and src._contig and n:
        core_lib.check(core_lib.lib.ec_copy_contig(n, dst._ptr, 1, src._ptr, 1), "ember.compile")
    elif n:
        with ag.no_grad():
            dst.copy_(src)


def _fresh_copy(t):
    if t._contig:
        out = _empty(t._shape, t._dtype)
        _copy_into(out, t)
        return out
    with ag.no_grad():
        return t.clone()


def _warn_once(owner, key, message):
    if key not in owner._warned:
        owner._warned.add(key)
        warnings.warn(message, stacklevel=3)


_EXTRA_NAMESPACES = [
    (nn_optimizer, "lib", nn_ffi),
    (nn_algorithms, "lib", nn_ffi),
]


class CompiledFunction:
    """A function compiled by ``ember.compile`` (Note [ember.compile])."""

    def __init__(self, fn, fullgraph=False):
        self._fn = fn
        self._fullgraph = fullgraph
        self._entries = collections.OrderedDict()  # key -> _Entry
        self._progress = {}  # key -> (calls seen, previous recording or None, tries)
        self._rerecords = collections.Counter()
        self._eager_reason = None
        self._warned = set()
        self._last_key = None
        self._known_leaves = {}  # id -> leaf tensor whose .grad the function may set
        if isinstance(fn, nn_module.Module):
            self._known_leaves = {id(p): p for p in fn.parameters()}
        functools.update_wrapper(self, fn)
        _compiled.add(self)

    def _reset(self):
        """Forget every recording and any decision to run eagerly (compiler.reset)."""
        for e in self._entries.values():
            e.release()
        self._entries.clear()
        self._progress.clear()
        self._rerecords.clear()
        self._eager_reason = None
        self._warned.clear()
        self._last_key = None

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _give_up(self, why):
        if self._fullgraph:
            raise CompileError(f"ember.compile(fullgraph=True): {why}")
        self._eager_reason = why
        _warn_once(self, "eager", f"ember.compile: {why}; this function runs eagerly from now on")
        for e in self._entries.values():
            e.release()
        self._entries.clear()

    def __call__(self, *args, **kwargs):
        if self._eager_reason is not None or _graph.capturing():
            return self._fn(*args, **kwargs)
        if not kwargs and all(type(a) is Tensor for a in args):  # the common case, quickly
            flat, spec = args, _POSITIONAL_TENSORS
            key = (
                _global_key(),
                tuple((x._shape, x._stride, x._dtype, x._storage._device, x._rg) for x in args),
            )
        else:
            flat = []
            spec = _flatten((args, kwargs), flat)
            key = (_global_key(), tuple(_leaf_key(x) for x in flat))
        entry = self._entries.get(key)
        if entry is not None:
            why = entry.check()
            if why is None:
                self._entries.move_to_end(key)
                return entry.run(flat)
            # a guard failed: record this key again
            del self._entries[key]
            entry.release()
            self._rerecords[key] += 1
            if self._rerecords[key] > CACHE_SIZE:
                _warn_once(
                    self,
                    ("guard", why),
                    f"ember.compile: {why}; recorded {CACHE_SIZE} times already, so this call "
                    "runs eagerly",
                )
                return self._fn(*args, **kwargs)
            self._progress.pop(key, None)
        elif key not in self._progress and len(self._entries) + len(self._progress) >= CACHE_SIZE:
            why = _describe_miss(self._last_key, key) if self._last_key else "a new input"
            _warn_once(
                self,
                ("cache", why),
                f"ember.compile: {why}; {CACHE_SIZE} graphs are recorded already (the cache is "
                "full), so this call runs eagerly",
            )
            return self._fn(*args, **kwargs)
        self._last_key = key
        return self._advance(key, args, kwargs, flat, spec)

    def _advance(self, key, args, kwargs, flat, spec):
        seen, previous, tries, restarts = self._progress.get(key, (0, None, 0, 0))
        if seen == 0:  # warm-up: eager
            self._progress[key] = (1, None, 0, 0)
            return self._fn(*args, **kwargs)
        if previous is not None:
            why = previous.check()
            if why is not None:  # a guard changed since the last recording
                previous.release()
                previous = None
                restarts += 1
                if restarts > CACHE_SIZE:
                    del self._progress[key]
                    self._give_up(f"{why} on every call")
                    return self._fn(*args, **kwargs)
        result, entry = self._record(flat, spec)
        if entry is None:
            return result
        if previous is None:
            self._progress[key] = (seen + 1, entry, tries, restarts)
            return result
        same, where = _same_recording(previous.graph, entry.graph)
        if same and (previous.backward is None) != (entry.backward is None):
            same, where = False, "one recording has a backward, the other not"
        elif same and entry.backward is not None:
            same, where = _same_recording(
                previous.backward.graph, entry.backward.graph, previous.graph, entry.graph
            )
        previous.release()
        if same:
            del self._progress[key]
            self._entries[key] = entry
            return result
        if tries + 1 >= _RECORD_TRIES:
            del self._progress[key]
            entry.release()
            self._give_up(
                f"the kernels' arguments change from call to call ({where}): a Python value "
                "that changes between calls feeds a kernel"
            )
            return result
        self._progress[key] = (seen + 1, entry, tries + 1, restarts)
        return result

    def _record(self, flat, spec):
        """Run the function once while recording; (its result, an _Entry or None)."""
        optimizers = {}
        modules = {}
        known = self._known_leaves
        entry_grads = {k: p.grad for k, p in known.items()}

        hyper_before = {}

        def opt_hook(opt, args, kwargs):
            optimizers[id(opt)] = opt
            hyper_before.setdefault(id(opt), _hyperparameters(opt))

        def module_hook(m, args):
            modules[id(m)] = m

        h1 = nn_optimizer.register_optimizer_step_pre_hook(opt_hook)
        h2 = nn_module.register_module_forward_pre_hook(module_hook)
        cap = _graph.capture(_EXTRA_NAMESPACES)
        watch = _SchedulerWatch(cap.rec)
        # Which buffers autograd may reuse depends on reference counts, which a
        # collection of reference cycles changes: recordings start from a
        # collected heap and collect nothing while they run, so two recordings
        # of the same call see the same counts.
        gc_was_on = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            with cap as rec, watch:
                # static inputs: the graph's own memory, filled without recording
                rec.paused = True
                statics = []
                call_flat = list(flat)
                for i, x in enumerate(flat):
                    if isinstance(x, Tensor):
                        if x.requires_grad:
                            rec.fail("an input requires grad (a replay builds no autograd graph)")
                        if x._storage._device.type != "cpu":
                            rec.fail(
                                f"an input is on {x._storage._device} (replay covers the CPU's "
                                "kernels; CUDA graphs are not implemented yet)"
                            )
                            continue
                        s = ec.empty_strided(x._shape, x._stride, dtype=x._dtype, device="cpu")
                        _copy_into(s, x)
                        statics.append((i, s))
                        call_flat[i] = s
                versions = [s._storage._version for _, s in statics]
                rec.paused = False
                args, kwargs = _unflatten(spec, iter(call_flat))
                out = self._fn(*args, **kwargs)
        except BaseException:
            cap.pool.close()  # the call raised, as it would eagerly: nothing is kept
            raise
        finally:
            if gc_was_on:
                gc.enable()
            h1.remove()
            h2.remove()
        for t in rec.seen.values():
            if t.requires_grad and t.grad_fn is None:
                known.setdefault(id(t), t)
        for opt in optimizers.values():
            for g in opt.param_groups:
                for p in g["params"]:
                    known.setdefault(id(p), p)
        for k, opt in optimizers.items():
            if _hyperparameters(opt) != hyper_before[k]:
                rec.fail(
                    f"it changes {type(opt).__name__}'s hyperparameters (lr, ...), which a "
                    "replay would not do"
                )
        pool = cap.pool
        if rec.failure is not None:
            pool.close()
            self._give_up(rec.failure)
            return out, None
        try:
            graph = _graph.Graph(rec)
        except _graph.CaptureError as e:
            pool.close()
            self._give_up(str(e))
            return out, None
        words = graph.words_sorted()
        leaves = []  # the leaves whose .grad the call computes: restored after a replay
        for k, p in known.items():
            g = p.grad
            if g is None or not graph.references(g._ptr, g._storage._nbytes, words):
                continue  # the call leaves this gradient alone
            g0 = entry_grads.get(k, _UNKNOWN)
            ptr = 0
            known_grad = g0 is not None and g0 is not _UNKNOWN
            if known_grad and graph.references(g0._ptr, g0._storage._nbytes, words):
                ptr = g0._ptr  # the call reads the gradient it finds: the same memory
            leaves.append((p, None if g0 is _UNKNOWN else g0 is None, ptr, g))
        # outputs
        out_flat = []
        out_spec = _flatten(out, out_flat)
        static_ids = {id(s._storage): i for i, s in statics}
        outputs = []
        differentiable = [o for o in out_flat if isinstance(o, Tensor) and o.grad_fn is not None]
        backward = None
        if differentiable and not leaves:
            # a forward whose backward runs outside it (a compiled module in training):
            # record that backward too, replayed by the outputs' autograd node
            backward = self._record_backward(rec, differentiable)
            if backward is None:
                graph.release()
                return out, None
        for o in out_flat:
            if not isinstance(o, Tensor):
                outputs.append(("same", o))
            elif backward is not None and o.grad_fn is not None:
                outputs.append(("grad", differentiable.index(o)))
            elif id(o._storage) in static_ids and o._ptr == o._storage._ptr:
                outputs.append(("input", static_ids[id(o._storage)]))
            elif pool.locate(o._ptr) is not None:
                outputs.append(("copy", o.detach()))
            else:
                outputs.append(("same", o))
        # every tensor from outside the graph that an op read: parameters too
        externals = [(t, t._ptr) for t in rec.seen.values()]
        mutated = [i for (i, s), v in zip(statics, versions) if s._storage._version != v]
        entry = _Entry(
            graph,
            statics,
            mutated,
            outputs,
            out_spec,
            leaves,
            externals,
            [(m, m.training) for m in modules.values()],
            [(opt, _hyperparameters(opt)) for opt in optimizers.values()],
            backward,
        )
        # what the eager call returns: its own values, apart from the graph's buffers
        entry.copy_back(flat)
        return _unflatten(out_spec, iter(entry.outputs_for(flat))), entry

    def _record_backward(self, rec, outputs):
        """Record the backward of a recorded forward: the gradients of ``outputs``
        with respect to the leaves the forward used, from static gradient buffers.
        Returns a _Backward, or None (and the function is eager) when it cannot."""
        leaves = [t for t in rec.seen.values() if t.requires_grad and t.grad_fn is None]
        if not leaves:
            self._give_up("its outputs require grad but it used no leaf that requires grad")
            return None
        cap = _graph.capture(_EXTRA_NAMESPACES)
        try:
            with cap as brec:
                brec.paused = True  # the gradient buffers are filled by each backward
                gouts = [ec.zeros_like(o).detach() for o in outputs]
                brec.paused = False
                grads = ag.grad(
                    outputs, leaves, grad_outputs=gouts, retain_graph=True, allow_unused=True
                )
        except BaseException:
            cap.pool.close()
            raise
        if brec.failure is not None:
            cap.pool.close()
            self._give_up(f"its backward cannot be replayed: {brec.failure}")
            return None
        try:
            graph = _graph.Graph(brec)
        except _graph.CaptureError as e:
            cap.pool.close()
            self._give_up(str(e))
            return None
        return _Backward(graph, gouts, [g.detach() if g is not None else None for g in grads],
                         leaves, [o.detach() for o in outputs])  # fmt: skip


_UNKNOWN = object()  # a leaf first seen in this recording: its entry grad is unknown


class _Backward:
    """The recorded backward of a recorded forward (Note [ember.compile])."""

    def __init__(self, graph, grad_outputs, grads, leaves, outputs):
        self.graph = graph
        self.grad_outputs = grad_outputs  # static buffers the incoming gradients fill
        self.grads = grads  # static results, one per leaf (None: unused)
        self.leaves = leaves
        self.outputs = outputs  # the forward's static outputs that require grad
        self.generation = 0  # forward replays so far: saved buffers hold the last one's


class _ReplayedForward(ag.Function):
    """Connects a replayed forward's outputs to autograd: its backward replays the
    recorded backward (the forward's saved tensors are the graph's buffers)."""

    @staticmethod
    def forward(ctx, backward, *leaves):
        ctx.backward = backward
        ctx.generation = backward.generation
        return tuple(_fresh_copy(o) for o in backward.outputs)

    @staticmethod
    def backward(ctx, *grads):
        b = ctx.backward
        if b.generation != ctx.generation:
            raise RuntimeError(
                "ember.compile: the compiled forward ran again before the backward of an "
                "earlier call; a replay keeps one call's saved tensors, so run each backward "
                "before the next forward (or compile the whole training step)"
            )
        for s, g in zip(b.grad_outputs, grads):
            if g is None:
                with ag.no_grad():
                    s.zero_()
            else:
                _copy_into(s, g)
        b.graph.replay()
        return (None,) + tuple(None if g is None else _fresh_copy(g) for g in b.grads)


class _SchedulerWatch:
    """While recording, a learning-rate scheduler's step fails the capture: its
    Python state (the epoch count behind the next lr) would not advance on a
    replay.  Schedulers step outside compiled functions."""

    def __init__(self, rec):
        self.rec = rec
        self.saved = []

    def __enter__(self):
        rec = self.rec
        todo = [nn_lr_scheduler.LRScheduler]
        while todo:
            cls = todo.pop()
            todo.extend(cls.__subclasses__())
            step = cls.__dict__.get("step")
            if step is None:
                continue

            def watched(sched, *args, _step=step, **kwargs):
                rec.fail(
                    f"{type(sched).__name__}.step() runs inside it (a replay would not step it)"
                )
                return _step(sched, *args, **kwargs)

            self.saved.append((cls, step))
            cls.step = watched
        return self

    def __exit__(self, *exc):
        for cls, step in self.saved:
            cls.step = step
        return False


def _same_recording(a, b, a_forward=None, b_forward=None):
    """(True, None) when two recordings ran the same kernels with the same
    arguments, else (False, where they first differ); a backward's recording is
    compared with addresses in its forward's memory as the forward's."""
    ca = a.canonical((a_forward.pool,) if a_forward else ())
    cb = b.canonical((b_forward.pool,) if b_forward else ())
    if len(ca) != len(cb):
        return False, f"{len(ca)} kernel calls, then {len(cb)}"
    for i, (x, y) in enumerate(zip(ca, cb)):
        if x == y:
            continue
        if x[0] != y[0]:
            return False, f"call {i} was {x[0]}, then {y[0]}"
        for k, (u, v) in enumerate(zip(x[1], y[1])):
            if u != v:
                return False, f"{x[0]}'s argument {k} was {u}, then {v}"
        return False, f"{x[0]}'s host arrays differ"
    return True, None


class OptimizedModule(nn_module.Module):
    """A module compiled by ``ember.compile``: calls run its compiled forward;
    attributes are the original module's (``_orig_mod``)."""

    def __init__(self, mod, fullgraph=False):
        super().__init__()
        self._orig_mod = mod
        self._compiled_call = CompiledFunction(mod, fullgraph)

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            mods = self.__dict__.get("_modules")
            if name.startswith("__") or not mods or "_orig_mod" not in mods:
                raise
            return getattr(mods["_orig_mod"], name)
