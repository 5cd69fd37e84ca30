"""Variable-length sequences for the recurrent layers (ember.nn.utils.rnn):
padding, and packed sequences (PackedSequence, pack_padded_sequence,
pad_packed_sequence, pack_sequence, unpack_sequence), as torch.nn.utils.rnn.

A PackedSequence holds the time steps of a batch of sequences sorted by
decreasing length back to back: step t contributes batch_sizes[t] rows (the
sequences still running), so an RNN never computes on padding."""

from collections import namedtuple

import ember_core as ec

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


def invert_permutation(permutation):
    if permutation is None:
        return None
    output = ec.empty_like(permutation)
    output.scatter_(0, permutation, ec.arange(permutation.numel(), dtype=permutation.dtype))
    return output


class PackedSequence(
    namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])
):
    """(data, batch_sizes, sorted_indices, unsorted_indices); build it with
    pack_padded_sequence or pack_sequence."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def double(self):
        return self.to(dtype=ec.float64)

    def float(self):
        return self.to(dtype=ec.float32)

    def cpu(self):
        return self

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def is_pinned(self):
        return self.data.is_pinned()


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) (or (B, T, *)) batch whose sequences have the given
    lengths; with enforce_sorted=False they may come in any order."""
    if isinstance(lengths, ec.Tensor):
        lengths = [int(n) for n in lengths.tolist()]
    else:
        lengths = [int(n) for n in lengths]
    sorted_indices = None
    if not enforce_sorted:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        lengths = [lengths[i] for i in order]
        sorted_indices = ec.tensor(order, dtype=ec.int64)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    elif any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
            "this requirement "
            "if you do not need ONNX exportability."
        )
    if not lengths or lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if batch_first:
        input = input.transpose(0, 1)
    if lengths[0] > input.shape[0]:
        raise RuntimeError(
            f"Expected sequence length to be at most {input.shape[0]}, but got {lengths[0]}"
        )
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    data = ec.cat([input[t, :b] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, ec.tensor(batch_sizes, dtype=ec.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded (T, B, *), lengths)."""
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                "input, but got "
                f"total_length={total_length} and max sequence length being {max_len}"
            )
        max_len = total_length
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])
    steps, offset = [], 0
    for b in batch_sizes:
        rows = data[offset : offset + b]
        if b < batch:
            rows = ec.cat(
                [rows, ec.full((batch - b,) + trailing, padding_value, dtype=data.dtype)], 0
            )
        steps.append(rows)
        offset += b
    for _ in range(max_len - len(batch_sizes)):
        steps.append(ec.full((batch,) + trailing, padding_value, dtype=data.dtype))
    padded = ec.stack(steps, 0)
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(batch)]
    lengths = ec.tensor(lengths, dtype=ec.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length tensors (L_i, *) into (L_max, B, *) (or (B, L_max, *))."""
    if isinstance(sequences, ec.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    rows = []
    for s in sequences:
        n = s.shape[0]
        if n == max_len:
            rows.append(s)
            continue
        pad = ec.full((max_len - n,) + trailing, padding_value, dtype=s.dtype)
        rows.append(ec.cat([s, pad] if padding_side == "right" else [pad, s], 0))
    out = ec.stack(rows, 0)
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [
        padded_sequences[i, : int(n)]
        for i, n in enumerate(lengths.tolist() if isinstance(lengths, ec.Tensor) else lengths)
    ]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of variable-length tensors (L_i, *)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of tensors a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
