"""ember.hub: hubconf repositories (local, and GitHub through a stand-in archive URL),
weights downloaded once into the cache, hash checks, the cache directory."""

import hashlib
import io
import os
import pathlib
import zipfile

import pytest

import ember
import ember.nn as nn
from ember import hub

HUBCONF = '''
"""A tiny hub repository."""
dependencies = ["numpy"]
from mylayers import make


def tiny(width=3, scale=1.0):
    """A Linear layer of the given width."""
    return make(width, scale)


def _private():
    pass
'''
LAYERS = """
import ember.nn as nn

def make(width, scale):
    layer = nn.Linear(width, width)
    layer.scale = scale
    return layer
"""


@pytest.fixture
def repo(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    (d / "hubconf.py").write_text(HUBCONF)
    (d / "mylayers.py").write_text(LAYERS)
    return d


@pytest.fixture(autouse=True)
def hub_dir(tmp_path):
    before = hub._HUB_DIR
    hub.set_dir(tmp_path / "hubdir")
    yield tmp_path / "hubdir"
    hub._HUB_DIR = before


def test_local_repository_list_help_load(repo):
    assert hub.list(str(repo)) == ["make", "tiny"]  # imported callables too, as torch.hub
    assert hub.help(str(repo), "tiny") == "A Linear layer of the given width."
    layer = hub.load(str(repo), "tiny", 4, source="local", scale=2.0)
    assert isinstance(layer, nn.Linear) and layer.in_features == 4 and layer.scale == 2.0
    with pytest.raises(RuntimeError, match="Cannot find callable nope"):
        hub.load(str(repo), "nope", source="local")
    with pytest.raises(ValueError, match="Unknown source"):
        hub.load(str(repo), "tiny", source="s3")


def test_missing_dependencies_are_named(repo):
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_pkg_xyz"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg_xyz"):
        hub.load(str(repo), "tiny", source="local")


def test_github_repository_is_downloaded_once(repo, tmp_path, monkeypatch):
    archive = tmp_path / "main.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # GitHub's layout: one top folder
        for f in repo.iterdir():
            zf.write(f, f"owner-repo-abc123/{f.name}")
    urls = []

    def fake_url(owner, name, ref):
        urls.append((owner, name, ref))
        return archive.as_uri()

    monkeypatch.setattr(hub, "_archive_url", fake_url)
    layer = hub.load("owner/repo", "tiny", 2, verbose=False)
    assert layer.out_features == 2 and urls == [("owner", "repo", "main")]
    assert (pathlib.Path(hub.get_dir()) / "owner_repo_main" / "hubconf.py").exists()
    hub.load("owner/repo", "tiny", verbose=False)  # from the cache
    assert len(urls) == 1
    hub.load("owner/repo:main", "tiny", force_reload=True, verbose=False)
    assert len(urls) == 2
    with pytest.raises(ValueError, match="owner/repo"):
        hub.load("not-a-repo", "tiny")


def test_load_state_dict_from_url_caches_and_checks_hashes(tmp_path):
    model = nn.Linear(3, 2)
    buf = io.BytesIO()
    ember.save(model.state_dict(), buf)
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    src = tmp_path / f"weights-{digest[:8]}.pth"
    src.write_bytes(data)
    state = hub.load_state_dict_from_url(src.as_uri(), check_hash=True, progress=False)
    assert ember.equal(state["weight"], model.weight)
    cached = pathlib.Path(hub.get_dir()) / "checkpoints" / src.name
    assert cached.exists()
    src.unlink()  # a second call reads the cache, not the URL
    again = hub.load_state_dict_from_url(src.as_uri(), progress=False)
    assert ember.equal(again["bias"], model.bias)
    bad = tmp_path / "other-deadbeef.pth"
    bad.write_bytes(data)
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef"'):
        hub.load_state_dict_from_url(bad.as_uri(), check_hash=True, progress=False)
    assert not (pathlib.Path(hub.get_dir()) / "checkpoints" / bad.name).exists()
    target = tmp_path / "sub" / "copy.pth"
    hub.download_url_to_file(bad.as_uri(), target, progress=False)
    assert target.read_bytes() == data


def test_default_directory_follows_the_environment(monkeypatch, tmp_path):
    hub._HUB_DIR = None
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "eh"))
    assert hub.get_dir() == os.path.join(str(tmp_path / "eh"), "hub")
    monkeypatch.delenv("EMBER_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == os.path.join(str(tmp_path / "xdg"), "ember", "hub")
