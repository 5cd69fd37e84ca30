"""Exceptions raised by ember_allocator."""


class AllocatorError(RuntimeError):
    """An allocator call failed (bad argument, OS or driver error)."""


class InvalidPointerError(AllocatorError, ValueError):
    """A pointer was freed twice or was never handed out by this allocator."""


class UnavailableError(AllocatorError):
    """The requested kind of memory cannot be used on this machine (e.g. no CUDA)."""


class OutOfMemoryError(MemoryError, RuntimeError):
    """An allocation could not be satisfied, even after releasing the cache.

    A MemoryError, and a RuntimeError like PyTorch's ``torch.OutOfMemoryError``,
    so either ``except`` clause catches it.

    The message states what was requested, what is allocated, what is reserved but
    free, the largest free block and the limit; the same figures are attributes.
    """

    def __init__(self, message: str, **figures: int) -> None:
        super().__init__(message)
        self.__dict__.update(figures)
