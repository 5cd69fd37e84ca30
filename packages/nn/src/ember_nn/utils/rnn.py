"""Sequence padding helpers (ember.nn.utils.rnn)."""

import ember_core as ec


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length tensors (L_i, *) into (L_max, B, *) (or (B, L_max, *))."""
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    out = ec.full((len(sequences), max_len) + trailing, padding_value, dtype=sequences[0].dtype)
    for i, s in enumerate(sequences):
        n = s.shape[0]
        if padding_side == "right":
            out[i, :n] = s
        else:
            out[i, max_len - n :] = s
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, : int(n)] for i, n in enumerate(lengths)]
