"""AdaptiveLogSoftmaxWithLoss: the efficient softmax approximation of Grave et
al. (2016) for large vocabularies.  Frequent classes sit in the head next to one
logit per tail cluster; each tail cluster projects the input down by div_value**i
before its own softmax.  Module layout, state-dict keys and errors follow
torch.nn.AdaptiveLogSoftmaxWithLoss."""

import collections

import ember_core as ec
from ember_nn import functional as F
from ember_nn.modules.container import ModuleList, Sequential
from ember_nn.modules.linear import Linear
from ember_nn.modules.module import Module

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input, target) -> (output, loss): `output` is the log-probability of
    each target, `loss` the mean negative log-likelihood.

    >>> asm = AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 40])
    >>> out, loss = asm(ember.randn(8, 16), ember.randint(0, 100, (8,)))
    """

    def __init__(
        self,
        in_features,
        n_classes,
        cutoffs,
        div_value=4.0,
        head_bias=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **kw),
                    Linear(hidden, size, bias=False, **kw),
                )
            )

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension."
                )
            if input_.dim() != 2:
                raise RuntimeError(
                    "1D target tensor expects 2D input tensors, but found inputs with size "
                    f"{input_.size()}"
                )
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(
                    "0D target tensor expects 1D input tensors, but found inputs with size "
                    f"{input_.size()}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

        is_batched = targ_dim > 0
        input = input_ if is_batched else input_.unsqueeze(0)
        target = target_ if is_batched else target_.unsqueeze(0)
        batch_size = target.size(0)
        # output collects each row's log-probability inside its tail cluster (0 for
        # head rows); gather_inds the head column that row reads: its own class in the
        # shortlist, or its cluster's logit
        output = input.new_zeros(batch_size)
        gather_inds = target.new_zeros(batch_size)
        used_rows = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            if i == 0:
                gather_inds.index_copy_(0, rows, target[mask])
            else:
                relative = target[mask] - low
                cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), 1)
                gather_inds.index_fill_(0, rows, self.shortlist_size + i - 1)
                output.index_copy_(0, rows, cluster_logprob.gather(1, relative.unsqueeze(1))[:, 0])
            used_rows += rows.numel()
        if used_rows != batch_size:
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. "
            )
        head_logprob = F.log_softmax(self.head(input), 1)
        output = output + head_logprob.gather(1, gather_inds.unsqueeze(1))[:, 0]
        loss = (-output).mean()
        if not is_batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        """log-probabilities of all n_classes from the input and the head's output."""
        head_logprob = F.log_softmax(head_output, 1)
        pieces = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), 1)
            pieces.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return ec.cat(pieces, 1)

    def log_prob(self, input):
        """(N, in_features) -> (N, n_classes) log-probabilities of every class."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row: log_prob(input).argmax(1), computing the
        tail clusters only for rows whose head prediction is a cluster."""
        head_output = self.head(input)
        output = ec.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not bool(not_in_shortlist.any()):
            return output
        if bool(not_in_shortlist.all()):
            return ec.argmax(self._get_full_log_prob(input, head_output), dim=1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist], head_output[not_in_shortlist])
        output[not_in_shortlist] = ec.argmax(log_prob, dim=1)
        return output
