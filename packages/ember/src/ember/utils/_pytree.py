"""Nested Python containers as trees of leaves, as ``torch.utils._pytree``.

tuples, lists, dicts (in insertion order), OrderedDicts, namedtuples and None
(a node with no children) are nodes; everything else is a leaf.  ember.func
uses it for in_dims/out_dims, argnums and parameter dicts.

>>> leaves, spec = tree_flatten({"a": (1, 2), "b": 3})
>>> leaves
[1, 2, 3]
>>> tree_unflatten([x * 10 for x in leaves], spec)
{'a': (10, 20), 'b': 30}
"""

from collections import OrderedDict

__all__ = [
    "LeafSpec",
    "TreeSpec",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_map_",
    "tree_structure",
    "tree_unflatten",
]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node_kind(x):
    """(type, context, children) for a node, or None for a leaf."""
    if x is None:
        return (type(None), None, [])
    t = type(x)
    if t is tuple or t is list:
        return (t, None, list(x))
    if _is_namedtuple(x):
        return (t, t, list(x))
    if t is dict or t is OrderedDict:
        keys = list(x)
        return (t, keys, [x[k] for k in keys])
    return None


class TreeSpec:
    """The structure of a tree: node type, its context (dict keys) and children specs."""

    __slots__ = ("type", "context", "children_specs", "num_leaves")

    def __init__(self, type_, context, children_specs):
        self.type = type_
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs)

    def is_leaf(self):
        return False

    @property
    def num_children(self):
        return len(self.children_specs)

    def __eq__(self, other):
        return (
            isinstance(other, TreeSpec)
            and not other.is_leaf()
            and self.type is other.type
            and self.context == other.context
            and self.children_specs == other.children_specs
        )

    def __hash__(self):
        return hash((self.type, len(self.children_specs)))

    def __repr__(self):
        name = self.type.__name__ if self.type is not type(None) else "NoneType"
        ctx = repr(self.context) if not isinstance(self.context, type) else self.context.__name__
        children = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {ctx}, [{children}])"

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type = None
        self.context = None
        self.children_specs = []
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return 0

    def __repr__(self):
        return "*"


_LEAF = LeafSpec()


def _flatten(x, leaves, is_leaf):
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    kind = _node_kind(x)
    if kind is None:
        leaves.append(x)
        return _LEAF
    type_, context, children = kind
    return TreeSpec(type_, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_flatten(tree, is_leaf=None):
    """(list of leaves, TreeSpec)."""
    leaves = []
    spec = _flatten(tree, leaves, is_leaf)
    return leaves, spec


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def _build(spec, it):
    if spec.is_leaf():
        return next(it)
    children = [_build(c, it) for c in spec.children_specs]
    t = spec.type
    if t is type(None):
        return None
    if t is tuple or t is list:
        return t(children)
    if t is dict or t is OrderedDict:
        return t(zip(spec.context, children))
    return t(*children)  # a namedtuple


def tree_unflatten(leaves, treespec):
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(
            f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
            f"to a pytree that holds {treespec.num_leaves} items ({treespec})."
        )
    return _build(treespec, iter(leaves))


def tree_map(func, tree, *rests, is_leaf=None):
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r, is_leaf)[0] for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func, tree, *rests, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _broadcast_to_and_flatten(prefix, spec):
    """Expand ``prefix`` (a tree whose leaves stand for whole subtrees of
    ``spec``) to one value per leaf of ``spec``; None if it does not fit.
    A None in the prefix is a leaf (as in vmap's in_dims)."""
    out = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(prefix, spec, out):
    kind = None if prefix is None else _node_kind(prefix)
    if kind is None:  # a leaf of the prefix covers the whole subtree
        out.extend([prefix] * spec.num_leaves)
        return True
    if spec.is_leaf():
        return False
    type_, context, children = kind
    if type_ is not spec.type or context != spec.context:
        return False
    if len(children) != len(spec.children_specs):
        return False
    return all(_broadcast(p, s, out) for p, s in zip(children, spec.children_specs))
