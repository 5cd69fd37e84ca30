"""PyTorch's legacy typed tensor constructors (``torch.FloatTensor``,
``torch.LongTensor``, ...), still common in older scripts.

Each is a class whose call builds a CPU tensor of its dtype, as PyTorch's do:
``FloatTensor(2, 3)`` (uninitialised, of that shape), ``FloatTensor([1, 2])`` or
``FloatTensor(ndarray)`` (a copy converted to the dtype), ``FloatTensor()`` (empty);
and ``isinstance(t, LongTensor)`` holds for a CPU int64 tensor.

>>> LongTensor([1, 2]).dtype
ember.int64
"""

import ember_core as ec


class _LegacyTensorType(type):
    """The metaclass: calls construct tensors; isinstance compares dtype and device."""

    def __call__(cls, *args, size=None, device=None):
        if device is not None and ec.device(device).type != "cpu":
            raise RuntimeError(
                f"{cls.__name__}: legacy constructor expects device type: cpu but "
                f"device type: {ec.device(device).type} was passed"
            )
        if size is not None:
            if args:
                raise TypeError(f"{cls.__name__}() got both positional arguments and size=")
            return ec.empty(tuple(size), dtype=cls.dtype)
        if not args:
            return ec.empty(0, dtype=cls.dtype)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return ec.empty(args, dtype=cls.dtype)
        if len(args) == 1 and isinstance(args[0], ec.Size):
            return ec.empty(tuple(args[0]), dtype=cls.dtype)
        if len(args) != 1:
            raise TypeError(
                f"{cls.__name__}(): expected sizes (ints) or one sequence of data, got "
                f"{', '.join(type(a).__name__ for a in args)}"
            )
        data = args[0]
        if isinstance(data, ec.Tensor):
            if data.dtype is not cls.dtype:
                raise TypeError(
                    f"expected {cls.dtype} (got {data.dtype}): {cls.__name__}(tensor) does not "
                    "convert; use tensor.to(dtype)"
                )
            return data.detach()  # PyTorch returns an alias of the same data
        return ec.tensor(data, dtype=cls.dtype)

    def __instancecheck__(cls, obj):
        return isinstance(obj, ec.Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def _make(name, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype, "is_cuda": False, "__module__": "ember"})


FloatTensor = _make("FloatTensor", ec.float32)
DoubleTensor = _make("DoubleTensor", ec.float64)
HalfTensor = _make("HalfTensor", ec.float16)
BFloat16Tensor = _make("BFloat16Tensor", ec.bfloat16)
ByteTensor = _make("ByteTensor", ec.uint8)
CharTensor = _make("CharTensor", ec.int8)
ShortTensor = _make("ShortTensor", ec.int16)
IntTensor = _make("IntTensor", ec.int32)
LongTensor = _make("LongTensor", ec.int64)
BoolTensor = _make("BoolTensor", ec.bool)

__all__ = [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
]
