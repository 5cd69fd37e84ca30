"""Check that no package of the monorepo has an import cycle among its modules.

    python tools/check_imports.py            # every package under packages/
    python tools/check_imports.py --all      # count imports inside functions too

An edge A -> B means module A imports module B (``import B``, ``from B import
x``, ``from . import x`` where x is a module) at module level: those are the
imports that run when A is imported, and a cycle among them is what makes
import order fragile.  Imports placed inside functions are deferred; with
``--all`` they count too, and the tool reports their cycles as well, to show
what hiding an import in a function only papers over.  Exit status 1 when a
cycle is found (``make lint`` runs the module-level check).

Only the package's own modules are nodes; a package's ``__init__`` imports its
submodules by design, so edges into a package's own ``__init__`` from its
submodules are cycles like any other (a submodule should import siblings, not
the package).
"""

import argparse
import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def module_name(path, src_root):
    rel = path.relative_to(src_root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _toplevel_nodes(tree):
    """Statements that run at import: module body, and the bodies of if/try/with
    blocks there (not functions or classes' methods)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []) or []:
                    if isinstance(child, ast.ExceptHandler):
                        stack.extend(child.body)
                    else:
                        stack.append(child)
        elif isinstance(node, ast.ClassDef):
            stack.extend(n for n in node.body if not isinstance(n, ast.FunctionDef))


def defined_names(path):
    """Names a module binds at top level (assignments, defs, classes, imports)."""
    names = set()
    for node in _toplevel_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def imports(path, modname, is_package, modules, deferred, defined):
    tree = ast.parse(path.read_text(), str(path))
    nodes = ast.walk(tree) if deferred else _toplevel_nodes(tree)
    out = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = modname.split(".") if is_package else modname.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:
                # `from pkg import submodule` needs the submodule, not pkg's
                # __init__ to have finished; `from pkg import name` needs
                # __init__ only for a name __init__ defines (else it is a
                # compiled submodule such as ember_core._C)
                sub = f"{mod}.{alias.name}"
                if sub in modules:
                    out.add(sub)
                elif mod not in defined or alias.name in defined[mod] or alias.name == "*":
                    out.add(mod)
    # the package's own Python modules (a compiled extension such as
    # ember_core._C imports nothing of the package)
    return {name for name in out if name in modules and name != modname}


def graph(src_root, deferred):
    files = {
        module_name(p, src_root): p
        for p in src_root.rglob("*.py")
        if "build" not in p.parts and "__pycache__" not in p.parts
    }
    defined = {m: defined_names(p) for m, p in files.items() if p.name == "__init__.py"}
    return {
        m: imports(p, m, p.name == "__init__.py", files, deferred, defined)
        for m, p in files.items()
    }


def cycles(g):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(g[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="count imports inside functions")
    parser.add_argument("packages", nargs="*", help="package directories (default: all)")
    args = parser.parse_args(argv)
    dirs = [pathlib.Path(p) for p in args.packages] or sorted((ROOT / "packages").iterdir())
    found = False
    for d in dirs:
        src = d / "src"
        if not src.is_dir():
            continue
        for comp in cycles(graph(src, args.all)):
            found = True
            print(f"{d.name}: import cycle among {len(comp)} modules: {', '.join(comp)}")
    if not found:
        kind = "any" if args.all else "module-level"
        print(f"no {kind} import cycles in {len(dirs)} packages")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
