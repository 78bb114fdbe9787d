"""torch's tensor layouts as values: tl.strided (dense tensors), tl.sparse_coo and tl.sparse_csr (the sparse
tensors of tensorlab/sparse) and the other sparse and jagged ones torch names, so that `x.layout ==
torch.sparse_coo` and `layout=torch.strided` in user code work. A dense factory given a layout other than
strided refuses it by name (check)."""
from __future__ import annotations


class TensorLayout:
    """One of torch.layout's values (torch.strided, torch.sparse_coo, ...); compared by identity."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tensorlab.{self.name}"

    def __reduce__(self):  # pickles as the module-level singleton
        return self.name


strided = TensorLayout("strided")
sparse_coo = TensorLayout("sparse_coo")
sparse_csr = TensorLayout("sparse_csr")
sparse_csc = TensorLayout("sparse_csc")
sparse_bsr = TensorLayout("sparse_bsr")
sparse_bsc = TensorLayout("sparse_bsc")
jagged = TensorLayout("jagged")
_mkldnn = TensorLayout("_mkldnn")


def check(layout, op):
    """layout= of a factory: None or strided; any other layout (or a non-layout) is refused with torch's
    exception kinds, naming the op and the fix."""
    if layout is None or layout is strided:
        return
    if isinstance(layout, TensorLayout) or str(layout).split(".")[-1] in (
            "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged", "_mkldnn"):
        raise RuntimeError(f"{op}(): tensorlab's factories make strided (dense) tensors, got layout={layout}; "
                           "pass layout=tensorlab.strided or leave layout out (sparse tensors: sparse_coo_tensor, "
                           "sparse_csr_tensor or .to_sparse())")
    if str(layout).split(".")[-1] == "strided":  # torch.strided itself, outside the compat runner
        return
    raise TypeError(f"{op}(): argument 'layout' must be torch.layout, not {type(layout).__name__}")


__all__ = ["TensorLayout", "check", "jagged", "sparse_bsc", "sparse_bsr", "sparse_coo", "sparse_csc", "sparse_csr",
           "strided"]
