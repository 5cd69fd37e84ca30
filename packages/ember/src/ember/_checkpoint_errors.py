"""The error every checkpoint reader raises for a bad file (ember.CheckpointError)."""


class CheckpointError(RuntimeError):
    """The file is not a valid checkpoint (truncated, tampered, or foreign)."""


def fail(source, why):
    raise CheckpointError(f"ember.load({source}): {why}")
