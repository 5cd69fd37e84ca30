"""ember.hub (torch.hub): models published as a repository with a ``hubconf.py``, and
weights downloaded once into a cache.

- ``load(repo_or_dir, model, *args, source="github"|"local", ...)`` imports the
  repository's ``hubconf.py`` and calls its entrypoint ``model``; ``list`` names the
  entrypoints and ``help`` gives one's docstring.  A GitHub repository
  ("owner/repo[:ref]") is downloaded as an archive into ``get_dir()`` once (again with
  ``force_reload``); ``hubconf.dependencies`` lists the packages it needs.
- ``load_state_dict_from_url(url, ...)`` downloads into ``<hub dir>/checkpoints``
  unless the file is there already, checks the SHA-256 prefix in its name with
  ``check_hash`` (``name-<hex>.pth``), and loads it with ember.load.
- ``hubconf.py`` is code: loading a repository runs it.  ember keeps no list of
  trusted repositories and asks nothing (``trust_repo`` is accepted and ignored);
  load only repositories you trust.  ``list``/``help`` also take a local directory.
- The cache lives in ``$EMBER_HOME/hub`` (default ``~/.cache/ember/hub``, following
  ``$XDG_CACHE_HOME``), or where ``set_dir`` puts it.
"""

import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from urllib.parse import urlparse

from ember.serialization import load as _load

__all__ = [
    "download_url_to_file",
    "get_dir",
    "help",
    "list",
    "load",
    "load_state_dict_from_url",
    "set_dir",
]

_HUB_DIR = None
_HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")
_CHUNK = 1 << 16


def get_dir():
    """Where ember.hub keeps repositories and downloaded weights."""
    if _HUB_DIR is not None:
        return _HUB_DIR
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    home = os.path.expanduser(os.getenv("EMBER_HOME", os.path.join(cache, "ember")))
    return os.path.join(home, "hub")


def set_dir(d):
    """Keep the hub's files in ``d`` from now on."""
    global _HUB_DIR
    _HUB_DIR = os.path.expanduser(os.fspath(d))


# ---------------------------------------------------------------- downloads


def _progress(total, enabled):
    if not enabled:
        return contextlib.nullcontext(None)
    try:
        from tqdm import tqdm
    except ImportError:
        return contextlib.nullcontext(None)
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download ``url`` to the file ``dst`` (written whole or not at all); with
    ``hash_prefix`` the file's SHA-256 must start with it."""
    request = urllib.request.Request(url, headers={"User-Agent": "ember.hub"})
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha256()
    with urllib.request.urlopen(request) as response:
        size = response.headers.get("Content-Length") if hasattr(response, "headers") else None
        handle, partial = tempfile.mkstemp(prefix=os.path.basename(dst) + ".", dir=folder)
        try:
            with (
                os.fdopen(handle, "wb") as out,
                _progress(int(size) if size else None, progress) as bar,
            ):
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
            if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
                raise RuntimeError(
                    f'invalid hash value (expected "{hash_prefix}", got "{digest.hexdigest()}")'
                )
            shutil.move(partial, dst)
        finally:
            if os.path.exists(partial):
                os.remove(partial)


def load_state_dict_from_url(
    url,
    model_dir=None,
    map_location=None,
    progress=True,
    check_hash=False,
    file_name=None,
    weights_only=True,
):
    """The object saved at ``url`` (usually a state dict), downloaded into
    ``model_dir`` (default ``<hub dir>/checkpoints``) the first time."""
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        prefix = None
        if check_hash:
            match = _HASH_IN_NAME.search(name)
            prefix = match.group(1) if match else None
            if not prefix:
                raise RuntimeError(
                    f"ember.hub: check_hash=True but the file name {name!r} carries no "
                    "'-<sha256 prefix>.' to check against"
                )
        download_url_to_file(url, cached, prefix, progress=progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)


# ---------------------------------------------------------------- repositories


def _parse_repo(github):
    """("owner", "repo", "ref") of "owner/repo[:ref]" (ref defaults to main)."""
    repo, _, ref = github.partition(":")
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(
            f'ember.hub: "{github}" is not a GitHub repository: expected "owner/repo[:ref]"'
        )
    return owner, name, ref or "main"


def _archive_url(owner, name, ref):
    return f"https://github.com/{owner}/{name}/zipball/{ref}"


def _github_dir(github, force_reload, verbose):
    """The local copy of a GitHub repository, downloaded and unpacked once."""
    owner, name, ref = _parse_repo(github)
    hub = get_dir()
    target = os.path.join(hub, f"{owner}_{name}_{ref.replace('/', '_')}")
    if os.path.isdir(target) and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {target}\n")
        return target
    os.makedirs(hub, exist_ok=True)
    archive = os.path.join(hub, f"{ref.replace('/', '_')}.zip")
    download_url_to_file(_archive_url(owner, name, ref), archive, progress=False)
    with zipfile.ZipFile(archive) as zf:
        top = zf.namelist()[0].split("/")[0]
        unpacked = os.path.join(hub, top)
        shutil.rmtree(unpacked, ignore_errors=True)
        zf.extractall(hub)
    os.remove(archive)
    shutil.rmtree(target, ignore_errors=True)
    shutil.move(unpacked, target)
    return target


def _hubconf(repo_dir):
    path = os.path.join(repo_dir, "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ember.hub: {repo_dir} has no hubconf.py")
    sys.path.insert(0, repo_dir)  # hubconf imports the repository's own modules
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    missing = [
        dep for dep in getattr(module, "dependencies", []) if importlib.util.find_spec(dep) is None
    ]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _repo_dir(repo_or_dir, source, force_reload, verbose):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return os.path.expanduser(os.fspath(repo_or_dir))
    return _github_dir(repo_or_dir, force_reload, verbose)


def _entrypoint(hubconf, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(hubconf, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):
    """The entrypoints of a repository's hubconf.py (its public callables)."""
    hubconf = _hubconf(_repo_dir(github, _guess_source(github), force_reload, verbose))
    return [
        name
        for name in dir(hubconf)
        if callable(getattr(hubconf, name)) and not name.startswith("_")
    ]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):
    """The docstring of entrypoint ``model``."""
    hubconf = _hubconf(_repo_dir(github, _guess_source(github), force_reload, False))
    return _entrypoint(hubconf, model).__doc__


def load(
    repo_or_dir,
    model,
    *args,
    source="github",
    trust_repo=None,
    force_reload=False,
    verbose=True,
    skip_validation=False,
    **kwargs,
):
    """``model(*args, **kwargs)`` from the repository's hubconf.py."""
    hubconf = _hubconf(_repo_dir(repo_or_dir, source, force_reload, verbose))
    return _entrypoint(hubconf, model)(*args, **kwargs)


def _guess_source(github):
    return "local" if os.path.isdir(os.path.expanduser(os.fspath(github))) else "github"
