"""ember.utils.tensorboard (torch.utils.tensorboard): ``SummaryWriter`` writes
TensorBoard event files through the ``tensorboard`` package, an optional
dependency (``pip install tensorboard``), as in PyTorch.  Ember tensors are
converted through NumPy."""

try:
    import tensorboard as _tensorboard
    from tensorboard.summary.writer.record_writer import RecordWriter
except ImportError:
    raise ImportError(
        "ember.utils.tensorboard needs the tensorboard package, which is not installed: "
        "pip install tensorboard"
    ) from None

if tuple(int(p) for p in _tensorboard.__version__.split(".")[:2] if p.isdigit()) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del _tensorboard

from ember.utils.tensorboard.writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
