"""Build-time generators, run when the wheel is built: the type stubs and
_opdocs.json (stubgen), and the op docstrings they hold (opdoc)."""
