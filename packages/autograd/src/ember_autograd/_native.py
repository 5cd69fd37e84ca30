"""ember_autograd's C extension (Note [C extension] in csrc/autograd.c): the
cffi-built module ``ember_autograd._C`` gets its types and functions once, here."""

from ember_autograd import _C

if not hasattr(_C, "handle") and _C.lib.ea_install() != 0:
    raise ImportError(_C.ffi.string(_C.lib.ea_last_message()).decode())

ThreadState = _C.ThreadState  # Note [Thread state]
NodeBase = _C.NodeBase  # Note [C nodes]
AccumulateGradBase = _C.AccumulateGradBase
accumulator = _C.accumulator
note_write = _C.note_write  # Note [Write notes]
SavedTensorBase = _C.SavedTensorBase
OpInfo = _C.OpInfo
handle = _C.handle  # the dispatch handler (_handler.py)
dispatch = _C.dispatch
setup = _C.setup
setup_engine = _C.setup_engine
execute = _C.execute  # Note [C engine]
