"""ember.jit: TorchScript's Python API with its eager meaning.

ember has no TorchScript compiler and no TorchScript serialisation.  Scripts
written for TorchScript still run, because every function here does what
TorchScript code does when it runs as plain Python:

- ``is_scripting()`` is False; ``is_tracing()`` is False except while
  ``trace`` runs its example inputs.
- ``script(fn)`` returns a ScriptFunction that calls ``fn``; ``script(module)``
  and ``script(cls)`` return the module / class itself (same parameters, same
  state_dict keys, same results).  ``ScriptModule`` is an nn.Module, so
  ``class M(jit.ScriptModule)`` with ``@jit.script_method`` works.
- ``trace(fn, example_inputs)`` validates its arguments as PyTorch does, runs
  the example once, and returns an object that runs ``fn`` eagerly.  Unlike a
  real trace, data-dependent control flow is re-evaluated on every call.
- ``ignore``, ``unused``, ``export`` mark the function as PyTorch does and
  return it; ``annotate(type, value)`` returns ``value``; ``Final`` is
  ``typing.Final``; ``fork`` runs the call at once and returns a completed
  ``Future`` whose ``wait()`` returns the result.
- ``save``, ``load``, ``freeze``, ``optimize_for_inference`` and
  ``CompilationUnit`` raise RuntimeError: save models with ``ember.save(
  model.state_dict(), path)`` and load them with ``load_state_dict``.
"""

import builtins
import contextlib
import functools
import types
import typing
import warnings
from collections import namedtuple
from typing import Final  # noqa: F401 - torch.jit.Final

import ember_nn

__all__ = [
    "Attribute",
    "CompilationUnit",
    "Error",
    "Future",
    "ScriptFunction",
    "ScriptModule",
    "annotate",
    "enable_onednn_fusion",
    "export",
    "export_opnames",
    "fork",
    "freeze",
    "interface",
    "ignore",
    "isinstance",
    "load",
    "onednn_fusion_enabled",
    "optimize_for_inference",
    "save",
    "script",
    "script_if_tracing",
    "set_fusion_strategy",
    "strict_fusion",
    "trace",
    "trace_module",
    "unused",
    "wait",
]

_NO_TORCHSCRIPT = (
    "ember has no TorchScript serialisation: {what} is not available. Save the weights with "
    "ember.save(model.state_dict(), path) and restore them with "
    "model.load_state_dict(ember.load(path)) (ember.save/ember.load also take whole objects)."
)


class Error(RuntimeError):
    """torch.jit.Error (TorchScript's exception type)."""


class TracerWarning(Warning):
    pass


class FunctionModifiers:
    """How TorchScript would treat a function (set by ignore/unused/export)."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from an exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = (
        "if this method is not scripted, copy the python method onto the scripted model"
    )
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


# ------------------------------------------------------------------ state


def _deprecated(name, instead="Please use `torch.compile` instead."):
    """PyTorch 2.13 deprecates the TorchScript API with these warnings."""
    warnings.warn(f"`torch.jit.{name}` is deprecated. {instead}", DeprecationWarning, stacklevel=3)


_SWITCH = "Please switch to `torch.compile` or `torch.export`."

_tracing = [0]


def is_scripting():
    """False: ember code never runs as TorchScript."""
    return False


def is_tracing():
    """True only while ``trace`` runs its example inputs."""
    return _tracing[0] > 0


# ------------------------------------------------------------- decorators


def ignore(drop=False, **kwargs):
    """Mark a function for TorchScript to leave as Python; returns it."""
    if callable(drop):
        fn = drop
        fn._torchscript_modifier = FunctionModifiers.IGNORE
        return fn
    if not builtins.isinstance(drop, bool):
        raise RuntimeError(
            f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}"
        )
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn(
            "ignore(drop_on_export=True) has been deprecated. TorchScript will now drop the "
            "function call on compilation. Use torch.jit.unused now. {}",
            FutureWarning,
            stacklevel=2,
        )
        drop = drop_on_export
    elif drop:
        warnings.warn(
            "ignore(True) has been deprecated. TorchScript will now drop the function call on "
            "compilation. Use torch.jit.unused now. {}",
            FutureWarning,
            stacklevel=2,
        )

    def decorator(fn):
        fn._torchscript_modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE
        return fn

    return decorator


def unused(fn):
    """Mark a function (or property) TorchScript would replace by a raise; returns it."""
    if builtins.isinstance(fn, property):
        fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def export(fn):
    """Mark a method for TorchScript to compile; returns it."""
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def _drop(fn):
    fn._torchscript_modifier = FunctionModifiers._DROP
    return fn


def interface(obj):
    """A TorchScript interface declaration: the class itself, eagerly."""
    _deprecated("interface")
    if not _isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    return obj


def _isclass(obj):
    return builtins.isinstance(obj, type)


def _overload(func):
    return func


def _overload_method(func):
    return func


def script_method(fn):
    """Old-style ``ScriptModule`` method: the method itself."""
    _deprecated("script_method", _SWITCH)
    return fn


def script_if_tracing(fn):
    return fn


def annotate(the_type, the_value):
    """A TorchScript type hint: returns ``the_value``."""
    return the_value


Attribute = namedtuple("Attribute", ["value", "type"])


def _check_isinstance(obj, target):
    """isinstance for typing containers (List[int], Dict[str, Tensor], Optional[...])."""
    origin = typing.get_origin(target)
    if origin is None:
        if target is typing.Any:
            return True
        if target is None or target is type(None):
            return obj is None
        return builtins.isinstance(obj, target)
    targs = typing.get_args(target)
    if origin is typing.Union or origin is types.UnionType:
        return any(_check_isinstance(obj, t) for t in targs)
    if origin in (list, list):
        return builtins.isinstance(obj, list) and all(_check_isinstance(x, targs[0]) for x in obj)
    if origin in (dict, dict):
        return builtins.isinstance(obj, dict) and all(
            _check_isinstance(k, targs[0]) and _check_isinstance(v, targs[1])
            for k, v in obj.items()
        )
    if origin in (tuple, tuple):
        if not builtins.isinstance(obj, tuple):
            return False
        if len(targs) == 2 and targs[1] is Ellipsis:
            return all(_check_isinstance(x, targs[0]) for x in obj)
        return len(obj) == len(targs) and all(_check_isinstance(x, t) for x, t in zip(obj, targs))
    return builtins.isinstance(obj, origin)


def isinstance(obj, target_type):  # noqa: A001 - torch.jit.isinstance
    """``isinstance`` that understands TorchScript's container types.

    >>> jit.isinstance([ember.ones(1)], List[ember.Tensor])
    True
    """
    return _check_isinstance(obj, target_type)


# ---------------------------------------------------------- script / trace


class ScriptModule(ember_nn.Module):
    """Base of scripted modules; eagerly just an nn.Module."""

    def save(self, f, _extra_files=None):
        raise RuntimeError(_NO_TORCHSCRIPT.format(what="ScriptModule.save"))

    @property
    def code(self):
        raise RuntimeError("ember has no TorchScript code to show: it runs modules eagerly")


class RecursiveScriptModule(ScriptModule):
    pass


class TracedModule(ScriptModule):
    pass


class TopLevelTracedModule(TracedModule):
    pass


class ScriptFunction:
    """What ``script(fn)``/``trace(fn, ...)`` return: calls ``fn`` eagerly."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)
        self.qualified_name = f"__torch__.{self.name}"

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __get__(self, obj, objtype=None):  # usable as a method, like the function
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f"<ember.jit.ScriptFunction {self.name} (runs eagerly)>"

    @property
    def code(self):
        import inspect

        return inspect.getsource(self._fn)

    def save(self, f, _extra_files=None):
        raise RuntimeError(_NO_TORCHSCRIPT.format(what="ScriptFunction.save"))


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """TorchScript compilation, eagerly: a module or class is returned as it
    is, a function wrapped in a ScriptFunction that calls it."""
    _deprecated("script", _SWITCH)
    if optimize is not None:
        warnings.warn(
            "`optimize` is deprecated and has no effect. Use `with torch.jit.optimized_execution()"
            "` instead",
            FutureWarning,
            stacklevel=2,
        )
    if builtins.isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if builtins.isinstance(obj, ember_nn.Module) or _isclass(obj):
        return obj
    if builtins.isinstance(obj, dict):
        return obj
    if builtins.isinstance(obj, list):
        return obj
    if not callable(obj):
        raise RuntimeError(f"Type '{type(obj)}' cannot be compiled since it is not a function")
    return ScriptFunction(obj)


def _run_example(fn, args, kwargs=None):
    _tracing[0] += 1
    try:
        return fn(*args, **(kwargs or {}))
    finally:
        _tracing[0] -= 1


def trace(
    func,
    example_inputs=None,
    optimize=None,
    check_trace=True,
    check_inputs=None,
    check_tolerance=1e-5,
    strict=True,
    _force_outplace=False,
    _module_class=None,
    _compilation_unit=None,
    example_kwarg_inputs=None,
    _store_inputs=True,
):
    """Tracing, eagerly: checks the arguments as PyTorch does, runs
    ``func`` once on the example inputs and returns what runs it eagerly (a
    module is returned as it is)."""
    _deprecated("trace", _SWITCH)
    if builtins.isinstance(func, ScriptModule):
        warnings.warn(
            "The input to trace is already a ScriptModule, tracing it is a no-op. Returning the "
            "object as is.",
            stacklevel=2,
        )
        return func
    module = None
    if builtins.isinstance(func, ember_nn.Module):
        module = func
    elif (
        hasattr(func, "__self__")
        and builtins.isinstance(func.__self__, ember_nn.Module)
        and func.__name__ == "forward"
    ):
        module = func.__self__
    if module is not None:
        if example_inputs is None:
            if builtins.isinstance(example_kwarg_inputs, dict):
                example_inputs = example_kwarg_inputs
            else:
                raise RuntimeError("example_kwarg_inputs should be a dict")
        return trace_module(
            module,
            {"forward": example_inputs},
            example_inputs_is_kwarg=builtins.isinstance(example_kwarg_inputs, dict),
        )
    from ember_core import Tensor

    if builtins.isinstance(example_inputs, (Tensor, dict)) and example_kwarg_inputs is None:
        example_inputs = (example_inputs,)
    elif example_kwarg_inputs is None and not builtins.isinstance(example_inputs, tuple):
        example_inputs = tuple(example_inputs)
    if hasattr(func, "__self__") and builtins.isinstance(func.__self__, ember_nn.Module):
        raise AttributeError(
            "trace doesn't support compiling individual module's functions.\n"
            "Please use trace_module"
        )
    if builtins.isinstance(example_kwarg_inputs, dict):
        _run_example(func, (), example_kwarg_inputs)
    else:
        _run_example(func, example_inputs)
    return ScriptFunction(func)


def trace_module(
    mod,
    inputs,
    optimize=None,
    check_trace=True,
    check_inputs=None,
    check_tolerance=1e-5,
    strict=True,
    _force_outplace=False,
    _module_class=None,
    _compilation_unit=None,
    example_inputs_is_kwarg=False,
    _store_inputs=True,
):
    """Run each ``{method_name: example_inputs}`` once; returns ``mod``."""
    if not builtins.isinstance(mod, ember_nn.Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not builtins.isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    from ember_core import Tensor

    for name, example in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            _run_example(method, (), example)
        else:
            if builtins.isinstance(example, Tensor):
                example = (example,)
            _run_example(method, tuple(example))
    return mod


# ------------------------------------------------------------------ fork


class Future:
    """A result that is ready at once (``fork`` runs its call eagerly)."""

    def __init__(self, devices=None):
        self._done = False
        self._value = None
        self._callbacks = []

    def done(self):
        return self._done

    def wait(self):
        if not self._done:
            raise RuntimeError("ember.jit.Future: wait() on a future that has no result yet")
        return self._value

    def value(self):
        return self.wait()

    def set_result(self, result):
        self._value, self._done = result, True
        for cb in self._callbacks:
            cb(self)
        self._callbacks = []

    def then(self, callback):
        fut = Future()
        self.add_done_callback(lambda f: fut.set_result(callback(f)))
        return fut

    def add_done_callback(self, callback):
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` now; returns a completed Future of its result."""
    _deprecated("fork")
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    """The result of a Future from ``fork``."""
    _deprecated("wait")
    return future.wait()


# ------------------------------------------------------ no TorchScript here


def save(m, f, _extra_files=None):
    raise RuntimeError(_NO_TORCHSCRIPT.format(what="torch.jit.save"))


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    raise RuntimeError(_NO_TORCHSCRIPT.format(what="torch.jit.load"))


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    raise RuntimeError(_NO_TORCHSCRIPT.format(what="torch.jit.freeze"))


def optimize_for_inference(mod, other_methods=None):
    raise RuntimeError(_NO_TORCHSCRIPT.format(what="torch.jit.optimize_for_inference"))


def export_opnames(m):
    raise RuntimeError(_NO_TORCHSCRIPT.format(what="torch.jit.export_opnames"))


class CompilationUnit:
    def __init__(self, lang=None, _frames_up=0):
        raise RuntimeError(_NO_TORCHSCRIPT.format(what="torch.jit.CompilationUnit"))


# ------------------------------------------------- fusion settings (recorded)

_fusion_strategy = [[("STATIC", 2), ("DYNAMIC", 10)]]
_onednn = [False]


def set_fusion_strategy(strategy):
    """Record the fusion strategy (ember does not fuse); returns the previous one."""
    _deprecated("set_fusion_strategy")
    prev = _fusion_strategy[0]
    _fusion_strategy[0] = list(strategy)
    return prev


def enable_onednn_fusion(enabled):
    _onednn[0] = bool(enabled)


def onednn_fusion_enabled():
    return _onednn[0]


class strict_fusion:
    """No-op outside TorchScript, as in PyTorch."""

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


@contextlib.contextmanager
def optimized_execution(should_optimize):
    yield


@contextlib.contextmanager
def fuser(name):
    yield
