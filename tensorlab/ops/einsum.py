"""torch.einsum over views, sums and the batched matrix product.

Contraction order: pairwise and greedy (opt_einsum's 'greedy' idea, which torch uses when
opt_einsum is installed): each step contracts the two remaining operands whose result is smallest,
the leftmost pair on ties, so two operands (and chains of equal sizes) go left to right. Every
label that no other remaining operand and not the output uses is summed out first; each pairwise
product is one bmm over (batch labels, left-only labels, contracted labels) x (batch, contracted,
right-only). A label
repeated within one operand takes that operand's diagonal first. Size-1 dims broadcast, as torch's
einsum allows. Every step is a differentiable op, so einsum needs no derivative of its own."""
from __future__ import annotations

from ..tensor import Tensor
from ._common import strictly_same_device

_LETTERS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _label_key(lab):
    """torch's implicit output order: ellipsis dims first, then uppercase, then lowercase."""
    if isinstance(lab, tuple):
        return (0, lab[1], "")
    return (1, 0 if lab.isupper() else 1, lab)


def _parse_term(term, start, k=None):
    who = "the output" if k is None else f"operand {k}"
    labels, ell = [], False
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if ell:
                raise RuntimeError(f"einsum(): found '.' for {who} for which an ellipsis was already found")
            if term[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for {who} that is not part of any ellipsis")
            labels.append("...")
            ell = True
            i += 3
            continue
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given at index {start + i} in the equation string, "
                               f"subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels


def _sublist(args):
    """The sublist form einsum(op1, [0, 1], op2, [1, 2], [0, 2]) as an equation string."""
    def lab(v):
        if v is Ellipsis:
            return "..."
        if not isinstance(v, int) or not 0 <= v < 52:
            raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), got {v}")
        return chr(ord("A") + v) if v < 26 else chr(ord("a") + v - 26)
    ops, terms = [], []
    args = list(args)
    while len(args) >= 2:
        ops.append(args.pop(0))
        terms.append("".join(lab(v) for v in args.pop(0)))
    eq = ",".join(terms)
    if args:
        eq += "->" + "".join(lab(v) for v in args[0])
    return eq, ops


def einsum(*args):
    """torch.einsum(equation, *operands) (operands also as one list, or the sublist form)."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation, operands = _sublist(args)
    else:
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): argument 'tensors' must be tuple of Tensors, but found element of type "
                            f"{type(t).__name__} at pos {i}")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->", 1)
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    strictly_same_device(operands[0], operands[1:], "einsum")

    # per operand: one label per dim; ellipsis dims become ("...", k) counted from the right
    ops, labs = [], []
    n_ell = 0
    pos = 0
    for k, (term, t) in enumerate(zip(terms, operands)):
        parsed = _parse_term(term, pos, k)
        pos += len(term) + 1
        named = [p for p in parsed if p != "..."]
        if "..." in parsed:
            ne = t.dim() - len(named)
            if ne < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(named)}) is more than "
                                   f"the number of dimensions ({t.dim()}) for operand {k}")
            n_ell = max(n_ell, ne)
            i = parsed.index("...")
            lab = parsed[:i] + [("...", ne - 1 - j) for j in range(ne)] + parsed[i + 1:]
        else:
            if len(named) != t.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(named)}) does not match "
                                   f"the number of dimensions ({t.dim()}) for operand {k} and no ellipsis was given")
            lab = named
        ops.append(t)
        labs.append(lab)

    for k, (t, lab) in enumerate(zip(ops, labs)):
        seen = {}
        for lb, s in zip(lab, t.shape):
            if lb in seen and seen[lb] != s:
                raise RuntimeError(f"einsum(): subscript {lb} is repeated for operand {k} but the sizes don't match, "
                                   f"{s} != {seen[lb]}")
            seen[lb] = s
    sizes = {}
    for k, (t, lab) in enumerate(zip(ops, labs)):
        for lb, s in zip(lab, t.shape):
            prev = sizes.get(lb)
            if prev is None or prev == 1:
                sizes[lb] = s
            elif s != 1 and s != prev:
                name = "..." if isinstance(lb, tuple) else lb
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {name} has size {s} for operand {k} which does not broadcast with "
                                   f"previously seen size {prev}")
    ell_labels = [("...", n_ell - 1 - j) for j in range(n_ell)]
    if rhs is None:
        counts = {}
        for lab in labs:
            for lb in lab:
                counts[lb] = counts.get(lb, 0) + 1
        out = ell_labels + sorted((lb for lb, c in counts.items() if c == 1 and not isinstance(lb, tuple)),
                                  key=_label_key)
    else:
        parsed = _parse_term(rhs, len(lhs) + 2)
        out = []
        for lb in parsed:
            if lb == "...":
                out += ell_labels
                continue
            if lb in out:
                raise RuntimeError(f"einsum(): output subscript {lb} appears more than once in the output")
            if lb not in sizes:
                raise RuntimeError(f"einsum(): output subscript {lb} does not appear in the equation for any input "
                                   f"operand")
            out.append(lb)

    # repeated labels within one operand: take the diagonal (it moves to the last dim)
    for k in range(len(ops)):
        t, lab = ops[k], list(labs[k])
        i = 0
        while i < len(lab):
            j = next((j for j in range(i + 1, len(lab)) if lab[j] == lab[i]), None)
            if j is None:
                i += 1
                continue
            a, b = t.shape[i], t.shape[j]
            if a != b:
                raise RuntimeError(f"einsum(): subscript {lab[i]} is repeated for operand {k} but the sizes don't match, "
                                   f"{a} != {b}")
            t = t.diagonal(0, i, j)
            lb = lab[i]
            lab = [x for m, x in enumerate(lab) if m not in (i, j)] + [lb]
        ops[k], labs[k] = t, lab

    out_set = set(out)

    def sum_unused(t, lab, keep):
        drop = [i for i, lb in enumerate(lab) if lb not in keep]
        if drop:
            t = t.sum(drop)
            lab = [lb for lb in lab if lb in keep]
        return t, lab

    items = list(zip(ops, labs))

    def wanted(skip):
        """The output's labels and those of every operand but the ones in `skip`."""
        s = set(out_set)
        for i, (_, lab) in enumerate(items):
            if i not in skip:
                s.update(lab)
        return s

    items = [sum_unused(t, lab, wanted({i})) for i, (t, lab) in enumerate(items)]
    while len(items) > 1:
        # greedy: contract the pair whose result is smallest (ties: the leftmost pair)
        best = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                keep = wanted({i, j})
                res = [lb for lb in dict.fromkeys(items[i][1] + items[j][1]) if lb in keep]
                size = _n(sizes[lb] for lb in res)
                if best is None or size < best[0]:
                    best = (size, i, j, keep)
        _, i, j, keep = best
        (a, alab), (b, blab) = items[i], items[j]
        items[i] = sum_unused(*_pair(a, alab, b, blab, keep, sizes), keep)
        del items[j]
    cur, cur_lab = items[0]
    cur, cur_lab = sum_unused(cur, cur_lab, out_set)
    # size-1 (broadcast) labels the output wants but the operands lost: expand at the end
    for lb in out:
        if lb not in cur_lab:
            cur = cur.unsqueeze(-1)
            cur_lab = cur_lab + [lb]
    perm = [cur_lab.index(lb) for lb in out]
    cur = cur.permute(perm) if perm != list(range(len(perm))) else cur
    want = [sizes[lb] for lb in out]
    if list(cur.shape) != want:
        cur = cur.expand(want)
    return cur


def _pair(a, alab, b, blab, keep, sizes):
    """a (labels alab) times b (labels blab), summing the shared labels not in `keep`."""
    shared = [lb for lb in alab if lb in blab]
    batch = [lb for lb in shared if lb in keep]
    contr = [lb for lb in shared if lb not in keep]
    aonly = [lb for lb in alab if lb not in blab]
    bonly = [lb for lb in blab if lb not in alab]

    def arrange(t, lab, order):
        t = t.permute([lab.index(lb) for lb in order])
        want = [sizes[lb] if lb in shared else t.shape[i] for i, lb in enumerate(order)]
        if list(t.shape) != want:
            t = t.expand(want)
        return t

    def prod(ls):
        n = 1
        for lb in ls:
            n *= sizes[lb]
        return n

    # a size-1 label on one side only stays a plain dim; shared labels were broadcast by arrange
    at = arrange(a, alab, batch + aonly + contr)
    bt = arrange(b, blab, batch + contr + bonly)
    ash = list(at.shape)
    bsh = list(bt.shape)
    nb = len(batch)
    na, nc = len(aonly), len(contr)
    B = prod(batch)
    M = _n(ash[nb:nb + na])
    K = prod(contr)
    N = _n(bsh[nb + nc:])
    r = at.reshape(B, M, K).bmm(bt.reshape(B, K, N))
    shape = [sizes[lb] for lb in batch] + ash[nb:nb + na] + bsh[nb + nc:]
    return r.reshape(shape), batch + aonly + bonly


def _n(dims):
    n = 1
    for d in dims:
        n *= d
    return n


FUNCTIONS = ("einsum",)
METHODS = {}
