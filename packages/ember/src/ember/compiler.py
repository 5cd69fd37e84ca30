"""ember.compiler (torch.compiler): the controls around ``ember.compile``.

ember compiles a whole function by recording the kernels one call runs and
replaying them (Note [ember.compile]); there are no graph breaks.  So:

- ``disable(fn)``: ``fn`` is never captured; a compiled function that calls it runs
  eagerly from then on (said once, or an error under ``fullgraph=True``).
- ``is_compiling()``: True while a capture records (the Python of the function runs
  then, and not during replays).
- ``allow_in_graph`` and ``assume_constant_result`` return the function unchanged:
  a capture records the kernels a function runs whatever Python made them, and a
  replay repeats the values Python computed during the recording.
- ``reset()`` drops every recorded graph (each compiled function records again).
"""

import functools

from ember._compile import _compiled
from ember._compile import compile as compile  # noqa: PLC0414 - torch.compiler.compile
from ember_core._tensor import graph as _graph

__all__ = [
    "allow_in_graph",
    "assume_constant_result",
    "compile",
    "cudagraph_mark_step_begin",
    "disable",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "list_backends",
    "reset",
]


def is_compiling():
    """Whether a capture is recording now (the caller runs inside ember.compile's
    recording call)."""
    return _graph.capturing()


is_dynamo_compiling = is_compiling


def is_exporting():
    """Whether torch.export is tracing: ember has no torch.export, so never."""
    return False


def disable(fn=None, recursive=True, *, reason=None):
    """``@ember.compiler.disable``: ``fn`` always runs eagerly; calling it inside a
    compiled function makes that function eager (ember has no graph breaks)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    name = getattr(fn, "__qualname__", repr(fn))
    why = f"it calls {name}, marked ember.compiler.disable" + (f" ({reason})" if reason else "")

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        rec = _graph._active
        if rec is not None:
            rec.fail(why)
        return fn(*args, **kwargs)

    eager._ember_compiler_disabled = True
    return eager


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def cudagraph_mark_step_begin():
    """Accepted: ember's replays keep their outputs in the graph's own buffers for each
    call, and there are no CUDA graph trees whose steps need marking."""


def list_backends(exclude_tags=("debug", "experimental")):
    """The backends ember.compile accepts that capture and replay."""
    return ["cudagraphs", "inductor"]


def reset():
    """Forget every recorded graph of every compiled function (they record again)."""
    for compiled in list(_compiled):
        compiled._reset()
