"""grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize on top
of ember's tape autograd.

Note [Transform levels]
torch.func wraps tensors per transform level.  ember gets the same results
from ordinary autograd: each transform makes its differentiated inputs fresh
graph nodes (a detached leaf that requires grad, or a clone of an input that
already requires grad, so an enclosing transform still sees the dependence),
runs ``f`` with grad enabled and differentiates with ``autograd.grad``.
Inside another transform (``_depth > 0``) or when an input requires grad, the
gradients are computed with create_graph=True, so an enclosing transform (or
the caller's own autograd) can differentiate them again: grad(grad(f)),
jacfwd(jacrev(f)) and vmap(grad(f)) compose.  At the outermost level, with no
input requiring grad, the results are plain tensors, as torch.func's are.
jvp uses the double-vjp identity (J v = d/du <J^T u, v>), and jacfwd computes
the same Jacobian as jacrev, by reverse mode.
"""

import contextlib
import functools

import ember_autograd as ag
import ember_core as ec
from ember.utils import _pytree as pytree

Tensor = ec.Tensor
_depth = [0]

_NO_HOOKS = (
    "torch.func.{grad, vjp, jacrev, hessian} don't yet support saved tensor hooks. Please open "
    "an issue with your use case."
)


@contextlib.contextmanager
def _level():
    """One transform level (Note [Transform levels]); yields whether it is nested."""
    nested = _depth[0] > 0
    _depth[0] += 1
    try:
        with ag.enable_grad(), ag.graph.disable_saved_tensors_hooks(_NO_HOOKS):
            yield nested
    finally:
        _depth[0] -= 1


# ----------------------------------------------------------------- argnums


def _wrap_argnum(argnum, n):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < n:
        return argnum
    if -n <= argnum < 0:
        return argnum + n
    raise RuntimeError(f"Got argnum={argnum}, but only {n} positional inputs")


def _slice_argnums(args, argnums, as_tuple=True):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        i = _wrap_argnum(argnums, len(args))
        return (args[i],) if as_tuple else args[i]
    idx = tuple(_wrap_argnum(a, len(args)) for a in argnums)
    if len(idx) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(idx)) != len(idx):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in idx)


def _replace_args(args, new, argnums):
    if isinstance(argnums, int):
        i = _wrap_argnum(argnums, len(args))
        return tuple(new if j == i else a for j, a in enumerate(args))
    idx = [_wrap_argnum(a, len(args)) for a in argnums]
    return tuple(new[idx.index(j)] if j in idx else a for j, a in enumerate(args))


# ------------------------------------------------------------ differentiation


def _create_differentiable(x):
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if x.requires_grad:
        return x.clone()  # a new node on top of the caller's graph
    return x.detach().requires_grad_(True)


def _any_requires_grad(tree):
    return any(isinstance(t, Tensor) and t.requires_grad for t in pytree.tree_leaves(tree))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=True, retain_graph=None):
    """autograd.grad that tolerates outputs not requiring grad and gives zeros
    for inputs that do not contribute (as functorch's)."""
    if grad_outputs is None:
        pairs = [(o, None) for o in outputs if o.requires_grad]
    else:
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(ec.zeros_like(i) for i in inputs)
    outs = [o for o, _ in pairs]
    gos = None if grad_outputs is None else [g for _, g in pairs]
    grads = ag.grad(
        outs,
        list(inputs),
        gos,
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )
    return tuple(g if g is not None else ec.zeros_like(i) for g, i in zip(grads, inputs))


def _undo(tree, keep):
    """Results handed back out of a level (Note [Transform levels])."""
    if keep:
        return tree
    return pytree.tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


# ---------------------------------------------------------------- grad


def grad_and_value(func, argnums=0, has_aux=False):
    """Like :func:`grad`, but the function returns ``(gradients, value)``
    (``(gradients, (value, aux))`` with ``has_aux``)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)

    return wrapper


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    with _level() as nested:
        keep = nested or _any_requires_grad((args, kwargs))
        diff_args = _slice_argnums(args, argnums, as_tuple=False)
        diff_args = pytree.tree_map(_create_differentiable, diff_args)
        args = _replace_args(args, diff_args, argnums)
        output = func(*args, **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(
                    "grad_and_value(f)(*args): output of function f should be a tuple: "
                    "(output, aux) if has_aux is True"
                )
            output, aux = output
        if not isinstance(output, Tensor):
            raise RuntimeError(
                f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                f"{type(output)}"
            )
        if output.dim() != 0:
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                "APIs instead?"
            )
        flat_diff, spec = pytree.tree_flatten(diff_args)
        flat_grads = _autograd_grad((output,), flat_diff, create_graph=keep)
        grads = pytree.tree_unflatten(list(flat_grads), spec)
        result = _undo(grads, keep), _undo(output, keep)
        if has_aux:
            return result[0], (result[1], _undo(aux, keep))
        return result


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar function with respect to its ``argnums``
    argument(s) (``torch.func.grad``); arguments may be tensors or nested
    dicts/tuples of tensors (e.g. a model's parameters).

    >>> grad(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
    tensor([ 3., 12.])
    >>> grad(grad(lambda x: x.sin()))(ember.tensor(0.5))   # -sin(0.5)
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


# ---------------------------------------------------------------- vjp


def _check_tensor_outputs(flat, api):
    if not flat:
        raise RuntimeError(
            f"{api}: Expected f to be a function that has non-empty output (got output = [])"
        )
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(o)}"
            )


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)`` where ``vjp_fn(cotangents)`` returns the
    vector-Jacobian products, one per primal, as a tuple.

    >>> out, vjp_fn = vjp(ember.sin, x)
    >>> (gx,) = vjp_fn(ember.ones_like(out))      # cos(x)
    """
    return _vjp(func, primals, None, has_aux)


def _vjp(func, primals, argnums, has_aux):
    with _level() as nested:
        keep = nested or _any_requires_grad(primals)
        if argnums is None:
            diff = pytree.tree_map(_create_differentiable, primals)
            primals = diff
        else:
            diff = _slice_argnums(primals, argnums, as_tuple=False)
            diff = pytree.tree_map(_create_differentiable, diff)
            primals = _replace_args(primals, diff, argnums)
        out = func(*primals)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    "vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                    "has_aux is True"
                )
            out, aux = out
        flat_out, out_spec = pytree.tree_flatten(out)
        _check_tensor_outputs(flat_out, "vjp(f, *primals)")
        for o in flat_out:
            if not o.dtype.is_floating_point:
                raise RuntimeError(
                    "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                    f"got Tensor with dtype {o.dtype}"
                )
        flat_diff, diff_spec = pytree.tree_flatten(diff)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = keep or _depth[0] > 0
        flat_ct, ct_spec = pytree.tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        for o, c in zip(flat_out, flat_ct):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and output[0] "
                    f"has a shape of {o.shape}."
                )
        with ag.enable_grad():
            grads = _autograd_grad(
                flat_out, flat_diff, flat_ct, create_graph=create_graph, retain_graph=retain_graph
            )
        result = pytree.tree_unflatten(list(grads), diff_spec)
        return _undo(result, create_graph)

    results = (_undo(out, keep), vjp_fn)
    if has_aux:
        return results + (_undo(aux, keep),)
    return results


# ---------------------------------------------------------------- jvp


def _check_primals(primals, api, argname):
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{api}: Expected {argname} to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    flat = pytree.tree_leaves(primals)
    if not flat:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for p in flat:
        if not isinstance(p, Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(p)}")


def _linearized(func, primals, has_aux, api):
    """Run func once and return (out, aux, push) where push(flat_tangents)
    gives the flat Jacobian-vector products (double-vjp, graph retained)."""
    with _level() as nested:
        keep = nested or _any_requires_grad(primals)
        diff = pytree.tree_map(_create_differentiable, primals)
        flat_diff = pytree.tree_leaves(diff)
        out = func(*diff)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    f"{api}: output of function f should be a tuple: (output, aux) if has_aux "
                    "is True"
                )
            out, aux = out
        flat_out, out_spec = pytree.tree_flatten(out)
        _check_tensor_outputs(flat_out, api)
        dummies = [ec.zeros_like(o).requires_grad_(True) for o in flat_out]
        diff_outs = [(o, u) for o, u in zip(flat_out, dummies) if o.requires_grad]
        if diff_outs:
            g = ag.grad(
                [o for o, _ in diff_outs],
                flat_diff,
                [u for _, u in diff_outs],
                create_graph=True,
                allow_unused=True,
            )
        else:
            g = [None] * len(flat_diff)

    def push(flat_tangents, create_graph=None):
        if create_graph is None:
            create_graph = keep or _depth[0] > 0
        pairs = [(gi, t) for gi, t in zip(g, flat_tangents) if gi is not None and gi.requires_grad]
        with ag.enable_grad():
            if pairs:
                jv = ag.grad(
                    [gi for gi, _ in pairs],
                    dummies,
                    [t for _, t in pairs],
                    retain_graph=True,
                    create_graph=create_graph,
                    allow_unused=True,
                )
            else:
                jv = [None] * len(dummies)
        jv = [j if j is not None else ec.zeros_like(o) for j, o in zip(jv, flat_out)]
        return _undo(pytree.tree_unflatten(jv, out_spec), create_graph)

    return _undo(out, keep), _undo(aux, keep), push, flat_diff


def _check_tangents(flat_primals, flat_tangents, api):
    for p, t in zip(flat_primals, flat_tangents):
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected tangents to only contain Tensors, got {type(t)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                f"the given forward gradient is of size {list(t.shape)}."
            )


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product.

    >>> out, jv = jvp(ember.sin, (x,), (ember.ones_like(x),))     # cos(x)
    """
    api = "jvp(f, primals, tangents)"
    _check_primals(primals, api, "primals")
    _check_primals(tangents, api, "tangents")
    flat_p, p_spec = pytree.tree_flatten(primals)
    flat_t, t_spec = pytree.tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {p_spec} and tangents with structure {t_spec}"
        )
    _check_tangents(flat_p, flat_t, api)
    out, aux, push, _ = _linearized(func, primals, has_aux, api)
    jv = push(flat_t)
    return (out, jv, aux) if has_aux else (out, jv)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` evaluates J @ tangents
    at ``primals`` without running ``func`` again."""
    api = "linearize(func, *primals)"
    _check_primals(primals, api, "primals")
    out, _, push, flat_p = _linearized(func, primals, False, api)
    p_spec = pytree.tree_structure(primals)

    def jvp_fn(*tangents):
        flat_t, t_spec = pytree.tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(
                f"linearize: Expected tangents to have the same structure as primals, got "
                f"{t_spec} and {p_spec}"
            )
        _check_tangents(flat_p, flat_t, "linearize")
        return push(flat_t)

    return out, jvp_fn


# ---------------------------------------------------------------- jacobians


def _jacobian(func, argnums, has_aux, args, api):
    # no level of its own: the rows are vjp_fn calls at the caller's depth
    out_vjp = _vjp(func, args, argnums, has_aux)
    if has_aux:
        out, vjp_fn, aux = out_vjp
    else:
        (out, vjp_fn), aux = out_vjp, None
    flat_out, out_spec = pytree.tree_flatten(out)
    diff = _slice_argnums(args, argnums, as_tuple=False)
    flat_in, in_spec = pytree.tree_flatten(diff)
    # rows[j][k]: d out_j / d input_k, as out_j.numel() rows of input_k's shape
    rows = [[[] for _ in flat_in] for _ in flat_out]
    for j, o in enumerate(flat_out):
        n = o.numel()
        for e in range(n):
            basis = [ec.zeros_like(x) for x in flat_out]
            basis[j].view(-1)[e] = 1
            ct = pytree.tree_unflatten(basis, out_spec)
            flat_g = pytree.tree_leaves(vjp_fn(ct))
            for k, g in enumerate(flat_g):
                rows[j][k].append(g)
    jac = []
    for j, o in enumerate(flat_out):
        per_in = []
        for k, x in enumerate(flat_in):
            r = rows[j][k]
            if r:
                m = ec.stack(r, 0)
            else:
                m = ec.zeros((0,) + tuple(x.shape), dtype=x.dtype, device=x.device)
            per_in.append(m.reshape(tuple(o.shape) + tuple(x.shape)))
        jac.append(pytree.tree_unflatten(per_in, in_spec))
    result = pytree.tree_unflatten(jac, out_spec)
    return (result, aux) if has_aux else result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to its ``argnums`` argument(s), by
    reverse mode: for output o and input x, a tensor of shape o.shape + x.shape
    (nested as the outputs, then as the differentiated arguments).

    >>> jacrev(ember.sin)(x)        # diag(cos(x))
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, args, "jacrev")

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` (same values and layout as :func:`jacrev`;
    ember computes it by reverse mode too, see Note [Transform levels])."""
    from ember.func._vmap import _check_randomness_arg

    _check_randomness_arg(randomness)

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, args, "jacfwd")

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function: ``jacfwd(jacrev(func, argnums), argnums)``.

    >>> hessian(lambda x: x.sin().sum())(x)        # diag(-sin(x))
    """
    return jacfwd(jacrev(func, argnums), argnums)
