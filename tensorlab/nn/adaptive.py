"""AdaptiveLogSoftmaxWithLoss (torch.nn.modules.adaptive): the efficient softmax approximation of Grave et
al. for large vocabularies. The `head` Linear scores the shortlist (classes below cutoffs[0]) plus one
logit per tail cluster; each tail cluster is a two-Linear bottleneck (in_features -> in_features //
div_value**(i+1) -> cluster size) in the `tail` ModuleList, so state_dict keys are torch's.

forward returns torch's namedtuple (output, loss): output[i] is the log-probability of target[i], loss the
mean negative log-likelihood. As torch, finding the rows of each cluster is data dependent: one host wait
(nonzero) per cluster on CUDA, and out-of-range targets raise RuntimeError."""
from __future__ import annotations

from collections import namedtuple

import tensorlab as _tl

from . import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over n_classes split at `cutoffs` (unique, increasing, in [1, n_classes - 1]);
    forward(input, target) -> (output, loss), log_prob(input) -> (N, n_classes) log-probabilities,
    predict(input) -> (N,) most likely class."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0 (AdaptiveLogSoftmaxWithLoss)")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             f"order, where each value is between 1 and n_classes-1 (AdaptiveLogSoftmaxWithLoss got "
                             f"cutoffs={cutoffs}, n_classes={n_classes})")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(self.in_features // self.div_value ** (i + 1))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(self.in_features, hidden, bias=False, device=device, dtype=dtype),
                                        Linear(hidden, size, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        """Re-initialize the head and every tail projection (Linear's default init)."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        """(output, loss) for a (N, in_features) input and (N,) targets, or a 1-D input and 0-D target."""
        tdim = target_.dim()
        if tdim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif tdim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = tdim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        batch = target.size(0)
        output = input.new_zeros(batch)
        # the head column each row reads: its own class in the shortlist, its cluster's logit otherwise
        gather_inds = target
        used = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            rows = ((target >= lo) & (target < hi)).nonzero().reshape(-1)
            n = rows.numel()
            if n == 0:
                continue
            used += n
            if i == 0:
                continue
            relative = target.index_select(0, rows) - lo
            cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            gather_inds = gather_inds.index_fill(0, rows, self.shortlist_size + i - 1)
            output = output.index_copy(0, rows, cluster_logprob.gather(1, relative.unsqueeze(1)).reshape(-1))
        if used != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, gather_inds.unsqueeze(1)).reshape(-1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            pieces.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _tl.cat(pieces, dim=1)

    def log_prob(self, input):
        """(N, n_classes) log-probabilities of every class for a (N, in_features) input."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row of a (N, in_features) input: the head's argmax when it falls
        in the shortlist, else the argmax of the full distribution (computed only for those rows)."""
        head_output = self.head(input)
        output = _tl.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not bool(not_in_shortlist.any()):
            return output
        if bool(not_in_shortlist.all()):
            return _tl.argmax(self._get_full_log_prob(input, head_output), dim=1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist], head_output[not_in_shortlist])
        return output.masked_scatter(not_in_shortlist, _tl.argmax(log_prob, dim=1))
