"""Joining, splitting and rearranging tensors (views live in _tensor.views)."""
