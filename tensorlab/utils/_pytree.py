"""torch.utils._pytree: nested containers flattened to a list of leaves and a TreeSpec that rebuilds them.

Container ("node") types: tuple, list, dict (keys in insertion order), OrderedDict, defaultdict, deque,
namedtuples, and whatever register_pytree_node adds; everything else (None, numbers, tensors) is a
leaf. tree_flatten(tree) -> (leaves, spec); tree_unflatten(leaves, spec) rebuilds the same structure;
tree_map applies a function to every leaf (of one tree, or of several trees of one structure)."""
from __future__ import annotations

import collections
import threading

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_only", "tree_all", "tree_any", "tree_iter", "is_namedtuple",
           "SUPPORTED_NODES"]


class _Node:
    __slots__ = ("flatten", "unflatten")

    def __init__(self, flatten, unflatten):
        self.flatten, self.unflatten = flatten, unflatten


_lock = threading.Lock()
SUPPORTED_NODES = {
    tuple: _Node(lambda t: (list(t), None), lambda items, ctx: tuple(items)),
    list: _Node(lambda t: (list(t), None), lambda items, ctx: list(items)),
    dict: _Node(lambda d: (list(d.values()), list(d.keys())), lambda items, keys: dict(zip(keys, items))),
    collections.OrderedDict: _Node(lambda d: (list(d.values()), list(d.keys())),
                                   lambda items, keys: collections.OrderedDict(zip(keys, items))),
    collections.defaultdict: _Node(lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                                   lambda items, ctx: collections.defaultdict(ctx[0], zip(ctx[1], items))),
    collections.deque: _Node(lambda d: (list(d), d.maxlen), lambda items, maxlen: collections.deque(items, maxlen)),
}
_NAMEDTUPLE = _Node(lambda t: (list(t), type(t)), lambda items, cls: cls(*items))
SUPPORTED_NODES[collections.namedtuple] = _NAMEDTUPLE  # every namedtuple class: the spec's context is the class


def is_namedtuple(obj):
    """Whether obj (an instance or a class) is a namedtuple."""
    cls = obj if isinstance(obj, type) else type(obj)
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_make")


def _node_of(tree):
    t = type(tree)
    node = SUPPORTED_NODES.get(t)
    if node is None and is_namedtuple(t):
        return collections.namedtuple, _NAMEDTUPLE
    return t, node


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Make cls a node: flatten_fn(obj) -> (children, context), unflatten_fn(children, context) -> obj."""
    with _lock:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
        SUPPORTED_NODES[cls] = _Node(flatten_fn, lambda items, ctx: unflatten_fn(items, ctx))


class TreeSpec:
    """A tree's structure: its node type, the node's context (dict keys, ...) and the children's specs."""

    def __init__(self, type, context, children_specs):  # noqa: A002 - torch's parameter name
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_children = len(self.children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)

    def is_leaf(self):
        return False

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and not other.is_leaf() and self.type is other.type and
                self.context == other.context and self.children_specs == other.children_specs)

    def __hash__(self):
        return hash((self.type, self.num_leaves, self.num_nodes))

    def __repr__(self, indent=0):
        name = self.type.__name__
        kids = ",\n".join(" " * (indent + 2) + c.__repr__(indent + 2) if not c.is_leaf() else
                          " " * (indent + 2) + "*" for c in self.children_specs).lstrip()
        return f"TreeSpec({name}, {self.context!r}, [{kids}])"


class LeafSpec(TreeSpec):
    """The spec of a leaf (prints as *)."""

    def __init__(self):
        self.type, self.context, self.children_specs = None, None, []
        self.num_children, self.num_leaves, self.num_nodes = 0, 1, 1

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return hash(LeafSpec)

    def __repr__(self, indent=0):
        return "*"


_LEAF = LeafSpec()


def _flatten(tree, is_leaf, leaves):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    t, node = _node_of(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    children, context = node.flatten(tree)
    return TreeSpec(t, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree, is_leaf=None):
    """(leaves, spec): the tree's leaves left to right and the spec tree_unflatten rebuilds it from."""
    leaves = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """The tree treespec describes, with these leaves (as many as it has) in order."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")
    it = iter(leaves)

    def build(spec):
        if spec.is_leaf():
            return next(it)
        kids = [build(c) for c in spec.children_specs]
        return SUPPORTED_NODES[spec.type].unflatten(kids, spec.context)
    return build(treespec)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree, is_leaf=None):
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """func applied to each leaf (with the matching leaves of `rests`, which must have tree's structure)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = []
    for r in rests:
        rl, rs = tree_flatten(r, is_leaf)
        if rs != spec:
            raise ValueError(f"tree_map: the trees have different structures: {spec} and {rs}")
        others.append(rl)
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """func applied to the leaves that are instances of type_or_types; other leaves unchanged."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf))
