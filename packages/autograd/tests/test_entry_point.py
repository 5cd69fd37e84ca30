"""Note [Autograd entry point]: with ember_core and ember_autograd installed (no
umbrella), backward() works without importing ember_autograd first; ember_core
finds it through the `ember_core.autograd` entry point."""

import importlib.metadata
import subprocess
import sys
import textwrap


def test_the_entry_point_is_declared():
    entries = importlib.metadata.entry_points(group="ember_core.autograd")
    assert [e.value for e in entries] == ["ember_autograd"]


def _run(code):
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_backward_works_with_only_ember_core_imported():
    out = _run(
        """
        import sys
        import ember_core as ec
        assert "ember_autograd" not in sys.modules
        x = ec.tensor([1.0, 2.0, 3.0], requires_grad=True)  # loads autograd here
        assert "ember_autograd" in sys.modules
        (x * x).sum().backward()
        w = ec.ones(3).requires_grad_()
        (w * x.detach()).sum().backward()
        print(x.grad.tolist(), w.grad.tolist())
        """
    )
    assert out.split("\n")[0] == "[2.0, 4.0, 6.0] [1.0, 2.0, 3.0]"


def test_backward_first_loads_autograd_and_says_why_it_cannot_differentiate():
    out = _run(
        """
        import ember_core as ec
        try:
            ec.ones(2).sum().backward()
        except RuntimeError as exc:
            print(exc)
        """
    )
    assert "does not require grad" in out
