"""The op table and its one interception point.

Note [Op table]
Every public op is declared once with ``defop`` on its implementation, and the
declaration holds every fact about the op: its signature (the implementation's
own ``def`` line; a string only where the public form differs, e.g. ``*size``),
whether it is a Tensor method too (or only a method: ``function=False``), its
in-place form (``inplace_of``), whether
it returns a view, whether it is differentiable, whether it is a composite of
other ops, its other names (``aliases``: the function, the method and the
in-place form are bound under each), its ``tags`` (``pointwise``,
``reduction``, ...), its autocast policy, the keyword PyTorch accepts for its
``*args`` (``star_keyword``), the dtypes it has no kernel for (``rejects``)
and its name in the array API standard where that differs.  Lists of op names
kept elsewhere are queries of this table (``ops_tagged``, ``op.autocast``).
The kernels an op runs come from its tensors' device (Note [Kernel interface
per device] in _tensor/device.py), so the declaration is the same for every device.

From the declaration ``defop`` generates the public function, with the
declared signature, which becomes ``ember_core.<name>`` and, for methods,
``Tensor.<name>``.  The implementation is called with every parameter
positionally, in order (keyword-only ones too): ``defop`` makes a positional
twin of it (Note [Positional twin]).

Note [Dispatch]
Handlers (autograd, profilers, anomaly checks, tracers) register with
``register_handler``.  A generated function checks one flag; with no handler it
calls the implementation directly.  With handlers it calls
``handler(op, args, kwargs, call)`` for the most recently registered one, where
``args`` holds every parameter in declaration order (keyword-only ones too, so
handlers never need to bind a signature), ``kwargs`` is empty, and
``call(args, kwargs)`` runs the next handler down, and finally the
implementation.  A handler may inspect or change the arguments, skip the call,
or post-process the result.  A handler may come with a ``sole_dispatch(op,
args)`` that does what the chain does while it is the only handler (autograd's,
in C): generated functions then call it directly.  Composite ops are not
intercepted themselves: the public ops they call are.  (Composites on
autocast's lists are the exception: their generated function checks the `_ac`
flag; see Note [Autocast].)
"""

import inspect
import os
import threading
import types

OPS = {}
ALIASES = {}  # alias name -> op name (the in-place aliases too: "clip_" -> "clamp_")

# The tags an op may carry (a declaration with another one is an error).
TAGS = frozenset(
    {
        "pointwise",  # elementwise with broadcasting: out[i] = f(in[i], ...)
        "reduction",  # reduces over dims
        "linear",  # linear in its first tensor input, the others not differentiable
        # (views, sums, copies): applied to a tangent, the op gives the output's
        # tangent (forward_ad derives its rule from this)
        "float-result",  # integer inputs give a floating result
        "creation",  # makes a new tensor from sizes/values, no tensor inputs
        "random",  # draws from a generator
        "nondeterministic-output-shape",  # nonzero, unique, masked_select...
        # PyTorch writes it without its internal-overlap check (fills, index fills,
        # reductions into out=): writing through an expanded tensor is allowed
        "unchecked-overlap",
    }
)
# Autocast policies (Note [Autocast] in _base/autocast.py).
AUTOCAST_POLICIES = ("lower_precision_fp", "fp32", "promote")

# The namespace every generated function runs in: `_h` is the one check.
_ns = {"_h": False, "inf": float("inf"), "nan": float("nan")}
# Autocast (Note [Autocast] in _base/autocast.py): `_ac` is up while a region is active.
_ns["_ac"] = False
_ns["_autocast_call"] = None  # set by _base/autocast.py, which uses this module


def _bad_argument(op, args, exc):
    """Note [Argument errors] (in _base/argcheck.py, imported only when one happens)."""
    from ember_core._base import argcheck as _argcheck

    _argcheck.bad_argument(op, args, exc)


_ns["_bad_argument"] = _bad_argument
_handlers = []
_lock = threading.Lock()


class Op:
    """One entry of the op table."""

    __slots__ = (
        "name",
        "params",
        "impl",
        "method",
        "function",
        "inplace_of",
        "view",
        "differentiable",
        "composite",
        "public",
        "signature",
        "doc",
        "aliases",
        "tags",
        "autocast",
        "star_keyword",
        "rejects",
        "complex_error",
        "array_api",
        "module",
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


_sole = {}  # handler -> its sole_dispatch


def register_handler(handler, *, sole_dispatch=None):
    """Add ``handler(op, args, kwargs, call)`` to the chain (it runs first).

    sole_dispatch: optionally, ``sole_dispatch(op, args)`` doing exactly what
    ``dispatch(op, args)`` does while ``handler`` is the only handler (a C fast
    path: autograd's); generated functions then call it directly."""
    with _lock:
        _handlers.append(handler)
        if sole_dispatch is not None:
            _sole[handler] = sole_dispatch
        _bind_dispatch()


def remove_handler(handler):
    with _lock:
        _handlers.remove(handler)
        if handler not in _handlers:
            _sole.pop(handler, None)
        _bind_dispatch()


def _bind_dispatch():
    _ns["_h"] = bool(_handlers)
    sole = _sole.get(_handlers[0]) if len(_handlers) == 1 else None
    _ns["_dispatch"] = sole if sole is not None else dispatch


def handlers():
    return tuple(_handlers)


def star_keyword(op, given, kwargs):
    """The *args of op ``op`` (a name) when they came as PyTorch's keyword, e.g.
    ``x.view(size=(2, 3))`` (the op's ``star_keyword`` fact)."""
    key = OPS[op].star_keyword
    for k in kwargs:
        if k != key:
            raise TypeError(f"{op}() got an unexpected keyword argument {k!r}")
    if given:
        raise TypeError(f"{op}() got multiple values for argument {key!r}")
    return (kwargs[key],)


_ns["_star_keyword"] = star_keyword


def _source(name, sig, op_var, impl_var, star_kw):
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
    if star is not None and star_kw is not None:
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


def _composite_function(name, impl, op_var):
    """A composite's public function: its implementation, called the way it is
    declared (its own ``def`` line), behind Note [Argument errors]."""
    sig = inspect.signature(impl)
    params, call, names = [], [], []
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            call.append(f"*{p.name}")
            names.append(p.name)
        elif p.kind is p.VAR_KEYWORD:
            params.append(f"**{p.name}")
            call.append(f"**{p.name}")
        else:
            if p.kind is p.KEYWORD_ONLY and not any(s.startswith("*") for s in params):
                params.append("*")
            # defaults are copied from impl below (their reprs need not be source)
            params.append(p.name if p.default is p.empty else f"{p.name}=None")
            call.append(p.name if p.kind is not p.KEYWORD_ONLY else f"{p.name}={p.name}")
            names.append(p.name)
    orig_var = f"_composite_{name}"
    _ns[orig_var] = impl
    tuple_src = "(" + "".join(f"{n}, " for n in names) + ")"
    source = (
        f"def {name}({', '.join(params)}):\n"
        f"    try:\n"
        f"        return {orig_var}({', '.join(call)})\n"
        f"{_argument_handler(op_var, tuple_src)}"
    )
    exec(compile(source, _GENERATED, "exec"), _ns)  # noqa: S102 - generated from the table
    fn = _ns[name]
    fn.__defaults__, fn.__kwdefaults__ = impl.__defaults__, impl.__kwdefaults__
    return fn


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


def _positional_twin(fn):
    """Note [Positional twin]: ``fn`` with its keyword-only parameters made
    positional (same code, same defaults), so the generated function can pass
    every parameter in order -- positional calls are the cheapest.  The body is
    untouched: CPython stores positional and keyword-only parameters in the same
    order among the locals, so only how arguments bind changes."""
    code = fn.__code__
    if not code.co_kwonlyargcount:
        return fn
    kwonly = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    kwdefaults = fn.__kwdefaults__ or {}
    defaults = fn.__defaults__ or ()
    # the positional form's defaults must be a suffix of its parameters
    first = len(kwonly) - len(kwdefaults)
    if set(kwonly[first:]) != set(kwdefaults) or (first and defaults):
        return None  # a required keyword-only after defaulted ones: no positional form
    defaults = defaults + tuple(kwdefaults[k] for k in kwonly[first:])
    twin = types.FunctionType(
        code.replace(co_argcount=code.co_argcount + code.co_kwonlyargcount, co_kwonlyargcount=0),
        fn.__globals__,
        fn.__name__,
        defaults or None,
        fn.__closure__,
    )
    twin.__doc__ = fn.__doc__
    twin.__module__ = fn.__module__
    return twin


def defop(
    signature=None,
    *,
    method=True,
    function=True,
    inplace_of=None,
    view=False,
    differentiable=True,
    composite=False,
    public=True,
    doc=None,
    aliases=(),
    tags=(),
    autocast=None,
    star_keyword=None,
    rejects=None,
    complex_error=None,
    array_api=None,
):
    """Declare an op (Note [Op table]) on its implementation::

        @defop(aliases=("absolute",), tags=("pointwise",))
        def abs(input, *, out=None): ...

    signature: the public signature as "name(params)" when it differs from the
    implementation's (``*size`` packed into one parameter); the implementation
    then takes every parameter positionally in that order.
    method: also a Tensor method; or the method itself, where PyTorch's takes
    the op's parameters in another order (``Tensor.where(condition, other)``).
    function: bound as a function of ember_core
    (False for ops PyTorch has only as Tensor methods, e.g. ``sum_to_size``).
    inplace_of: the op this is the in-place form of.  view: returns a view of
    its first input.  composite: written with other public ops (handlers see
    those instead).  public: bound as ember_core.<name>.
    aliases: other names; each is bound like the op (function, method), and for
    an op with an in-place form ``<alias>_`` names that form.  tags: from TAGS.
    autocast: the policy under autocast ("lower_precision_fp", "fp32",
    "promote"), or a function of the canonical args returning one (or None).
    star_keyword: the keyword PyTorch takes for the op's ``*args``.  rejects:
    (PyTorch's kernel name, dtypes) the op has no kernel for -- calling it on
    them raises PyTorch's NotImplementedError.  complex_error: PyTorch's error
    for complex inputs where it is not the generic kernel message: a message
    (NotImplementedError) or (exception class, message); which ops take complex
    tensors at all is the C complex list's (Note [CPU-only dtypes]).
    array_api: the op's name in the array API standard when it differs.
    """
    if callable(signature):  # bare @defop
        return defop()(signature)

    def register(impl):
        if signature is not None:
            name, sig = _signature(signature)
            positional = impl
        else:
            name, sig = impl.__name__, inspect.signature(impl)
            positional = _positional_twin(impl)
            if positional is None:
                raise ValueError(
                    f"defop {name}: a required keyword-only parameter follows defaulted ones; "
                    "give the public signature as a string"
                )
        if name in OPS:
            raise ValueError(f"op {name!r} declared twice")
        if not (method or function):
            raise ValueError(f"defop {name}: neither a function nor a method")
        bad = set(tags) - TAGS
        if bad:
            raise ValueError(f"defop {name}: unknown tags {sorted(bad)} (known: {sorted(TAGS)})")
        if isinstance(autocast, str) and autocast not in AUTOCAST_POLICIES:
            raise ValueError(f"defop {name}: unknown autocast policy {autocast!r}")
        op = Op()
        op.name = name
        op.params = tuple(sig.parameters)
        op.impl = positional
        op.method = method
        op.function = function
        op.inplace_of = inplace_of
        op.view = view
        op.differentiable = differentiable
        op.composite = composite
        op.public = public
        op.signature = str(sig)
        op.doc = doc or impl.__doc__
        op.aliases = tuple(aliases)
        op.tags = frozenset(tags)
        op.autocast = autocast
        op.star_keyword = star_keyword
        op.rejects = rejects
        op.complex_error = complex_error
        op.array_api = array_api
        op.module = impl.__module__
        op_var, impl_var = f"_op_{name}", f"_impl_{name}"
        _ns[op_var] = op
        _ns[impl_var] = positional
        plain_composite = composite and autocast is None
        if plain_composite:
            # composites call public ops: nothing to intercept, only argument errors
            fn = _composite_function(name, impl, op_var)
        else:
            if composite:
                code = _autocast_source(name, sig, op_var, impl_var)
            else:
                code = _source(name, sig, op_var, impl_var, star_keyword)
            exec(compile(code, _GENERATED, "exec"), _ns)  # noqa: S102 - generated from the table
            fn = _ns[name]
        fn.__qualname__ = name
        fn.__module__ = "ember_core"
        fn.__doc__ = op.doc
        OPS[name] = op
        _ns.setdefault("__public__", {})[name] = fn
        for alias in op.aliases:
            _add_alias(alias, name)
        # a plain composite's own module keeps calling its implementation directly
        return impl if plain_composite else fn

    return register


def _add_alias(alias, name):
    if alias in OPS or alias in ALIASES:
        raise ValueError(f"alias {alias!r} of {name!r}: the name is taken")
    ALIASES[alias] = name


def bind_aliases():
    """The in-place forms of aliases: ``arccos_`` names ``acos_`` when ``acos``
    is declared with alias ``arccos`` (called once the table is complete)."""
    for alias, name in list(ALIASES.items()):
        inplace = name + "_"
        if inplace in OPS and alias + "_" not in ALIASES and OPS[inplace].inplace_of == name:
            _add_alias(alias + "_", inplace)


def ops_tagged(tag):
    """The ops carrying ``tag`` (a TAGS member), in declaration order."""
    if tag not in TAGS:
        raise ValueError(f"unknown tag {tag!r}")
    return [op for op in OPS.values() if tag in op.tags]


def resolve(name):
    """The op named ``name`` or by one of its aliases (KeyError if neither)."""
    return OPS[ALIASES.get(name, name)]


def public_function(name):
    return _ns["__public__"][name]


def public_functions():
    return dict(_ns["__public__"])
