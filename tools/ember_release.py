"""This release's version, and what follows from it, for every package's setup.py.

Note [One version]
``VERSION`` at the repository root is the one place ember's version is written.
Each package directory links to it and to this file (``packages/<dir>/VERSION``
and ``packages/<dir>/ember_release.py`` are symbolic links; an sdist carries
them as plain files), and its setup.py calls ``setup_kwargs``, which gives:

- the distribution's version, read from VERSION;
- its dependencies, from the ``[tool.ember]`` table of its pyproject.toml, where
  ember's own distributions are named without a version (``"ember-tensor-core"``,
  ``"ember-distributed[mpi]"``) and pinned here to ``==VERSION``: the packages of
  one release are installed together;
- the classifiers every ember distribution shares, plus "Programming Language :: C"
  for those that build C (cffi among their build requirements) and "Typing :: Typed"
  for those that ship a ``py.typed`` marker.

At run time each package's ``__version__`` is its installed metadata's version
(``importlib.metadata``), so nothing else repeats the number.
"""

import pathlib
import re

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

CLASSIFIERS = [
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Developers",
    "Intended Audience :: Science/Research",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
    "Topic :: Scientific/Engineering :: Mathematics",
    "Topic :: Software Development :: Libraries :: Python Modules",
]

# An ember distribution named without a version: "ember-nn", "ember-distributed[mpi]"
_SIBLING = re.compile(r"^(ember(?:-[a-z]+)*)(\[[a-z0-9,\s-]*\])?$")


def read_version(package_dir):
    text = (pathlib.Path(package_dir) / "VERSION").read_text().strip()
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?", text):
        raise ValueError(f"VERSION: {text!r} is not a release version (e.g. 0.1.0)")
    return text


def pin(requirement, version):
    """``requirement`` with an ember sibling pinned to ``version``; others unchanged."""
    req = requirement.strip()
    if not req.lower().startswith("ember"):
        return req
    match = _SIBLING.fullmatch(req)
    if match is None:
        raise ValueError(
            f"[tool.ember] {req!r}: name ember distributions without a version "
            "(it is pinned to VERSION, Note [One version])"
        )
    return f"{match.group(1)}{match.group(2) or ''}=={version}"


def setup_kwargs(package_dir):
    """setup() arguments for the package in ``package_dir`` (Note [One version])."""
    package_dir = pathlib.Path(package_dir)
    version = read_version(package_dir)
    table = tomllib.loads((package_dir / "pyproject.toml").read_text())
    ember = table.get("tool", {}).get("ember", {})
    classifiers = list(CLASSIFIERS)
    if any(r.startswith("cffi") for r in table["build-system"]["requires"]):
        classifiers.append("Programming Language :: C")
    if list(package_dir.glob("src/*/py.typed")):
        classifiers.append("Typing :: Typed")
    kwargs = {"version": version, "classifiers": sorted(classifiers)}
    if "dependencies" in ember:
        kwargs["install_requires"] = [pin(r, version) for r in ember["dependencies"]]
    if "optional-dependencies" in ember:
        kwargs["extras_require"] = {
            extra: [pin(r, version) for r in reqs]
            for extra, reqs in ember["optional-dependencies"].items()
        }
    return kwargs
