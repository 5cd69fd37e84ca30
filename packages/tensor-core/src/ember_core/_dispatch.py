"""The op table and its one interception point.

Note [Op table]
Every public op is declared once with ``defop``: its Python signature, its
implementation, and facts about it (a Tensor method too? an in-place variant of
which op? does it return a view of its first input? is it differentiable? is it
a composite of other public ops?).  From the declaration ``defop`` generates the
public function, with the declared signature, which becomes ``ember_core.<name>``
and, for methods, ``Tensor.<name>``.

Note [Dispatch]
Handlers (autograd, profilers, anomaly checks, tracers) register with
``register_handler``.  A generated function checks one flag; with no handler it
calls the implementation directly.  With handlers it calls
``handler(op, args, kwargs, call)`` for the most recently registered one, where
``args`` holds every parameter in declaration order (keyword-only ones too, so
handlers never need to bind a signature), ``kwargs`` is empty, and
``call(args, kwargs)`` runs the next handler down, and finally the
implementation.  A handler may inspect or change the arguments, skip the call,
or post-process the result.  Composite ops are not intercepted themselves: the
public ops they call are.  (Composites on autocast's lists are the exception:
their generated function checks the `_ac` flag; see Note [Autocast].)
"""

import inspect
import os
import threading

from ember_core import _argcheck, _autocast

OPS = {}

# The namespace every generated function runs in: `_h` is the one check.
_ns = {"_h": False, "inf": float("inf"), "nan": float("nan")}
# Autocast (Note [Autocast] in _autocast.py): `_ac` is up while a region is active.
_ns["_ac"] = False
_ns["_autocast_call"] = _autocast.call_composite
# An argument of the wrong type: Note [Argument errors] in _argcheck.py.
_ns["_bad_argument"] = _argcheck.bad_argument
_handlers = []
_lock = threading.Lock()


class Op:
    """One entry of the op table."""

    __slots__ = (
        "name",
        "params",
        "impl",
        "method",
        "inplace_of",
        "view",
        "differentiable",
        "composite",
        "public",
        "signature",
        "doc",
        "__weakref__",
    )

    def __repr__(self):
        return f"<op {self.name}{self.signature}>"

    def call_impl(self, args, kwargs=None):
        """Run the implementation itself (the end of the handler chain)."""
        return self.impl(*args)


# Generated functions report this (non-existent) file in tracebacks, inside the
# package, so frame walkers can tell them from user code.
_GENERATED = os.path.join(os.path.dirname(__file__), "_generated_ops.py")


_NO_KWARGS = {}  # handlers get an empty kwargs dict (canonical args carry everything)


def _run(op, args, level):
    if level < 0:
        return op.impl(*args)
    if level == 0:  # the last handler calls the implementation itself: no closure
        return _handlers[0](op, args, _NO_KWARGS, op.call_impl)
    return _handlers[level](op, args, _NO_KWARGS, lambda a, kw=None: _run(op, a, level - 1))


def dispatch(op, args):
    """Call ``op`` with canonical ``args`` through the registered handlers."""
    handlers = _handlers
    if len(handlers) == 1:  # the common case (autograd alone): one call, no closure
        return handlers[0](op, args, _NO_KWARGS, op.call_impl)
    return _run(op, args, len(handlers) - 1)


_ns["_dispatch"] = dispatch


def register_handler(handler):
    """Add ``handler(op, args, kwargs, call)`` to the chain (it runs first)."""
    with _lock:
        _handlers.append(handler)
        _ns["_h"] = True


def remove_handler(handler):
    with _lock:
        _handlers.remove(handler)
        _ns["_h"] = bool(_handlers)


def handlers():
    return tuple(_handlers)


# PyTorch's keyword for the sizes/dims an op otherwise takes as *args:
# x.view(size=(2, 3)), x.permute(dims=(1, 0)), x.repeat(repeats=(2, 1)), ...
STAR_KEYWORDS = {
    "view": "size",
    "reshape": "shape",
    "expand": "size",
    "repeat": "repeats",
    "permute": "dims",
    "flip": "dims",
    "tile": "dims",
    "resize_": "size",
}


def star_keyword(op, given, kwargs):
    """The *args of ``op`` when they came as PyTorch's keyword (see STAR_KEYWORDS)."""
    key = STAR_KEYWORDS.get(op)
    for k in kwargs:
        if k != key:
            raise TypeError(f"{op}() got an unexpected keyword argument {k!r}")
    if given:
        raise TypeError(f"{op}() got multiple values for argument {key!r}")
    return (kwargs[key],)


_ns["_star_keyword"] = star_keyword


def _source(name, sig, op_var, impl_var):
    params = list(sig.parameters.values())
    canonical = []
    star = None
    for p in params:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            raise ValueError(f"defop {name}: **kwargs are not supported in op signatures")
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            star = p.name
        canonical.append(p.name)
    tuple_src = "(" + "".join(f"{n}, " for n in canonical) + ")"
    call_src = ", ".join(canonical)
    if star is not None and name in STAR_KEYWORDS:
        return (
            f"def {name}{str(sig)[:-1]}, **_kw):\n"
            f"    if _kw:\n"
            f"        {star} = _star_keyword({name!r}, {star}, _kw)\n"
            f"    try:\n"
            f"        if _h:\n"
            f"            return _dispatch({op_var}, {tuple_src})\n"
            f"        return {impl_var}({call_src})\n"
            f"{_argument_handler(op_var, tuple_src)}"
        )
    return (
        f"def {name}{sig}:\n"
        f"    try:\n"
        f"        if _h:\n"
        f"            return _dispatch({op_var}, {tuple_src})\n"
        f"        return {impl_var}({call_src})\n"
        f"{_argument_handler(op_var, tuple_src)}"
    )


def _argument_handler(op_var, tuple_src):
    # Note [Argument errors]: free unless something is raised
    return (
        "    except (AttributeError, KeyError, OverflowError) as _e:\n"
        f"        _bad_argument({op_var}, {tuple_src}, _e)\n"
        "        raise\n"
    )


def _composite_source(name, sig, op_var, impl_var, impl):
    """A composite's function: its implementation, behind Note [Argument errors]."""
    names, call = [], []
    for p in sig.parameters.values():
        names.append(p.name)
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            call.append(f"*{p.name}")
        elif p.kind is inspect.Parameter.KEYWORD_ONLY:
            call.append(f"{p.name}={p.name}")
        else:
            call.append(p.name)
    head = str(sig)
    takes_kw = any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(impl).parameters.values()
    )
    if takes_kw:  # PyTorch's keywords for *sizes (STAR_KEYWORDS), handled by impl
        head = f"{head[:-1]}, **_kw)" if len(head) > 2 else "(**_kw)"
        call.append("**_kw")
    tuple_src = "(" + "".join(f"{n}, " for n in names) + ")"
    return (
        f"def {name}{head}:\n"
        f"    try:\n"
        f"        return {impl_var}({', '.join(call)})\n"
        f"{_argument_handler(op_var, tuple_src)}"
    )


def _autocast_source(name, sig, op_var, impl_var):
    """A composite on autocast's lists: one flag check in front of the implementation."""
    names = []
    for p in sig.parameters.values():
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ValueError(f"defop {name}: autocast composites take no *args/**kwargs")
        names.append(p.name)
    tuple_src = "(" + "".join(f"{n}, " for n in names) + ")"
    return (
        f"def {name}{sig}:\n"
        f"    try:\n"
        f"        if _ac:\n"
        f"            return _autocast_call({op_var}, {tuple_src})\n"
        f"        return {impl_var}({', '.join(names)})\n"
        f"{_argument_handler(op_var, tuple_src)}"
    )


def _signature(text):
    """Parse 'name(a, b, *, c=1)' into (name, inspect.Signature, defaults namespace)."""
    name = text[: text.index("(")].strip()
    holder = {}
    exec(f"def {name}{text[text.index('(') :]}: pass", holder)  # noqa: S102 - our own table
    return name, inspect.signature(holder[name])


def defop(
    signature,
    *,
    method=True,
    inplace_of=None,
    view=False,
    differentiable=True,
    composite=False,
    public=True,
    doc=None,
):
    """Declare an op: ``@defop("add(input, other, *, alpha=1, out=None)")`` on its
    implementation, which takes every parameter positionally in that order."""

    def register(impl):
        name, sig = _signature(signature)
        if name in OPS:
            raise ValueError(f"op {name!r} declared twice")
        op = Op()
        op.name = name
        op.params = tuple(sig.parameters)
        op.impl = impl
        op.method = method
        op.inplace_of = inplace_of
        op.view = view
        op.differentiable = differentiable
        op.composite = composite
        op.public = public
        op.signature = str(sig)
        op.doc = doc or impl.__doc__
        op_var, impl_var = f"_op_{name}", f"_impl_{name}"
        _ns[op_var] = op
        _ns[impl_var] = impl
        plain_composite = composite and name not in _autocast.POLICY
        if plain_composite:
            # composites call public ops: nothing to intercept, only argument errors
            source = _composite_source(name, sig, op_var, impl_var, impl)
        else:
            make = _autocast_source if composite else _source
            source = make(name, sig, op_var, impl_var)
        exec(compile(source, _GENERATED, "exec"), _ns)  # noqa: S102 - generated from the table
        fn = _ns[name]
        fn.__qualname__ = name
        fn.__module__ = "ember_core"
        fn.__doc__ = op.doc
        OPS[name] = op
        _ns.setdefault("__public__", {})[name] = fn
        # a plain composite's own module keeps calling its implementation directly
        return impl if plain_composite else fn

    return register


def public_function(name):
    return _ns["__public__"][name]


def public_functions():
    return dict(_ns["__public__"])
