import errno
import os

import numpy as np
import pytest

from ember_data._utils import shm


def test_segments_are_unnamed_and_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_DATA_SHM_DIR", str(tmp_path))
    seg = shm.Segment(4096)
    try:
        assert os.listdir(tmp_path) == []  # nothing to leak
        seg.mapping[:5] = b"hello"
        other = shm.map_fd(seg.fd, 4096)
        assert other[:5] == b"hello"
    finally:
        seg.close()


def test_default_directory_is_dev_shm(monkeypatch):
    monkeypatch.delenv("EMBER_DATA_SHM_DIR", raising=False)
    if os.path.isdir("/dev/shm"):
        assert shm.shm_dir() == "/dev/shm"


def test_exhaustion_names_the_directory_and_its_free_space(monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(RuntimeError) as info:
        shm.Segment(1 << 20)
    text = str(info.value)
    st = os.statvfs(shm.shm_dir())
    assert shm.shm_dir() in text and "free of" in text and "1048576 bytes" in text
    assert st.f_bsize > 0


def test_empty_registers_for_the_transport():
    a = shm.empty((64, 1024), np.uint8)
    try:
        seg, off = shm.find(a.ctypes.data + 10, 100)
        assert seg is not None and off == 10
        assert shm.find(a.ctypes.data, a.nbytes + 1)[0] is None
    finally:
        shm.release_registered()
    assert not shm._registry
