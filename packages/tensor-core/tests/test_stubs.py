"""The type stubs generated from the op table at build time (Note [Stubs],
ember_core/_codegen/stubgen.py): shipped in the installed package, valid Python, and
naming every public function and Tensor method the table binds."""

import ast
import importlib.resources
import inspect

import ember_core as ec
from ember_core._codegen import stubgen as _stubgen


def _stub(name):
    path = importlib.resources.files("ember_core") / name
    assert path.is_file(), f"ember_core/{name} is missing from the installed package"
    return ast.parse(path.read_text())


def _names(tree):
    out = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            out.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.AnnAssign):
            out.add(node.target.id)
    return out


def test_module_stub_names_everything_public():
    tree = _stub("__init__.pyi")
    assert _names(tree) >= set(ec.__all__)
    (exported,) = [
        n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "__all__"
    ]
    assert ast.literal_eval(exported) == list(ec.__all__)
    assert (importlib.resources.files("ember_core") / "py.typed").is_file()


def test_tensor_stub_has_every_method():
    tree = _stub("_tensor/tensor.pyi")
    (tensor,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor"]
    methods = {n.name for n in tensor.body if isinstance(n, ast.FunctionDef)}
    attributes = {n.target.id for n in tensor.body if isinstance(n, ast.AnnAssign)}
    public = {n for n in dir(ec.Tensor) if not n.startswith("_") and n not in ec.Tensor.__slots__}
    assert public - methods - attributes == set()
    for name in ("exp", "sum", "view", "add_", "backward", "__add__", "__getitem__"):
        assert name in methods


def _stub_function(tree, name):
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return fn


def test_signatures_and_result_types_follow_the_table():
    tree = _stub("__init__.pyi")
    exp = _stub_function(tree, "exp")  # pointwise: a Tensor
    assert ast.unparse(exp.returns) == "Tensor"
    assert [a.arg for a in exp.args.args] == list(inspect.signature(ec.exp).parameters)[:1]
    assert ast.unparse(_stub_function(tree, "ones").returns) == "Tensor"  # creation
    assert ast.unparse(_stub_function(tree, "is_nonzero").returns) == "builtins.bool"
    # max returns a Tensor or a named tuple, depending on `dim`: not claimed
    assert ast.unparse(_stub_function(tree, "max").returns) == "Any"
    assert ast.unparse(_stub_function(tree, "split").returns) == "Any"
    out = [a for a in _stub_function(tree, "add").args.kwonlyargs if a.arg == "out"]
    assert ast.unparse(out[0].annotation) == "Tensor | None"


def test_generator_is_deterministic(tmp_path):
    _stubgen.write(tmp_path)
    shipped = importlib.resources.files("ember_core")
    for name in ("__init__.pyi", "_tensor/tensor.pyi", "_opdocs.json"):
        assert (tmp_path / name).read_text() == (shipped / name).read_text()


def test_autograd_tensor_api_is_declared_without_autograd():
    # hooks raise and queries answer as for a tensor no graph knows, until (and unless)
    # ember_autograd loads and replaces them (Note [Autograd entry point])
    names = ("register_hook", "retain_grad", "is_inference", "register_post_accumulate_grad_hook")
    assert all(name in vars(ec.Tensor) or name in ec._CORE_TENSOR_MEMBERS for name in names)
    assert {"retains_grad", "output_nr"} <= set(ec._CORE_TENSOR_MEMBERS)
