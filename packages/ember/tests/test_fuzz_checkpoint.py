"""Fault probes of ember.save/ember.load: every altered byte of a checkpoint
(PyTorch's zip format, sealed by ember; and ember's earlier format 2) raises
CheckpointError (Note [Checkpoint integrity]), and a save killed before its rename
leaves a temporary that the next save to the same target removes (Note [Save
temporaries])."""

import fcntl
import glob
import hashlib
import io
import json
import os
import pathlib
import random
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import CheckpointError, nn


def _training_checkpoint():
    """Bytes of a model + Adam state checkpoint, as a training script saves it."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    opt = ember.optim.Adam(model.parameters(), lr=0.001)
    model(ember.randn(5, 4)).sum().backward()
    opt.step()
    obj = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}
    return ember.serialization.save_to_bytes(obj)


CHECKPOINT = _training_checkpoint()
# the same kind of checkpoint as ember.save wrote it before it wrote the zip format
FORMAT_2 = (pathlib.Path(__file__).parent / "data" / "ember_format2.ckpt").read_bytes()


def _load(data):
    return ember.load(io.BytesIO(bytes(data)))


def _header(data):
    (n,) = struct.unpack("<Q", data[:8])
    return n, data[8 : 8 + n]


@pytest.mark.parametrize("checkpoint", [CHECKPOINT, FORMAT_2], ids=["zip", "format2"])
def test_every_single_bit_flip_raises(checkpoint):
    rng = random.Random(20)
    assert _load(checkpoint)["epoch"] == 3
    for pos in range(len(checkpoint)):
        data = bytearray(checkpoint)
        data[pos] ^= 1 << rng.randrange(8)
        with pytest.raises(CheckpointError):
            _load(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, len(CHECKPOINT) - 1), st.integers(1, 255)),
        min_size=1,
        unique_by=lambda change: change[0],
    )
)
def test_any_altered_bytes_raise(changes):
    data = bytearray(CHECKPOINT)
    for pos, xor in changes:
        data[pos] ^= xor
    with pytest.raises(CheckpointError):
        _load(data)


@pytest.mark.parametrize(
    "old, new",
    [
        (b"exp_avg", b"vxp_avg"),  # a renamed optimizer-state key
        (b"torch\nFloatStorage", b"torch\nLongStorage\n"),  # weights read as int64
        (struct.pack(">d", 0.001), struct.pack(">d", 0.009)),  # a changed hyperparameter
    ],
)
def test_one_byte_edits_from_the_issue_raise(old, new):
    assert len(old) == len(new) and old in CHECKPOINT, old
    with pytest.raises(CheckpointError, match="checksum"):
        _load(CHECKPOINT.replace(old, new, 1))


def test_a_file_of_ember_without_its_seal_raises():
    # the seal (the zip comment) cut off, the archive's directory made to match
    size = len(CHECKPOINT)
    end = CHECKPOINT[size - 99 : size - 77]
    unsealed = CHECKPOINT[: size - 99] + end[:20] + b"\x00\x00"
    with pytest.raises(CheckpointError, match="checksum"):
        _load(unsealed)


def _unsealed_zip():
    """A zip checkpoint as torch.save writes it (no ember seal): records and a pickle."""
    import pickle
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"epoch": 3, "lr": 0.5}, protocol=2))
        archive.writestr("archive/byteorder", b"little")
        archive.writestr("archive/version", b"3\n")
    return buf.getvalue()


def test_flipped_bytes_of_a_foreign_zip_load_unchanged_or_raise_checkpoint_error():
    # without ember's seal only the zip's own checks (CRC-32s, structure) apply: a flip
    # in an unchecked field (a timestamp) loads the same object; anything else must be
    # a CheckpointError, never another exception or other values
    data = _unsealed_zip()
    assert _load(data) == {"epoch": 3, "lr": 0.5}
    for pos in range(len(data)):
        for bit in (0, 7):
            damaged = bytearray(data)
            damaged[pos] ^= 1 << bit
            try:
                back = _load(damaged)
            except CheckpointError:
                continue
            assert back == {"epoch": 3, "lr": 0.5}, pos


def test_format_1_files_still_load_and_check_their_data():
    # format 1 carried "ember.sha256" of the data region only
    n, header = _header(FORMAT_2)
    head = json.loads(header)
    meta = head["__metadata__"]
    body = FORMAT_2[8 + n :]
    del meta["ember.file_sha256"]
    meta["ember.version"] = "1"
    meta["ember.sha256"] = hashlib.sha256(body).hexdigest()
    text = json.dumps(head, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    old = struct.pack("<Q", len(text)) + text + body
    assert _load(old)["epoch"] == 3
    damaged = bytearray(old)
    damaged[-3] ^= 0x10
    with pytest.raises(CheckpointError, match="checksum"):
        _load(damaged)


def test_a_format_2_file_without_its_checksum_raises():
    n, header = _header(FORMAT_2)
    head = json.loads(header)
    del head["__metadata__"]["ember.file_sha256"]
    text = json.dumps(head).encode()
    with pytest.raises(CheckpointError, match="checksum is missing"):
        _load(struct.pack("<Q", len(text)) + text + FORMAT_2[8 + n :])


def test_plain_safetensors_files_without_a_checksum_load():
    t = np.arange(6, dtype=np.float32)
    head = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
    text = json.dumps(head).encode()
    back = _load(struct.pack("<Q", len(text)) + text + t.tobytes())
    np.testing.assert_array_equal(back["w"].numpy(), t.reshape(2, 3))


# ------------------------------------------------------------ temporaries


def _temporaries(target):
    d, name = os.path.split(target)
    return sorted(glob.glob(os.path.join(glob.escape(d), f".{glob.escape(name)}.ember-save-*")))


_KILLED_SAVE = textwrap.dedent(
    """
    import os, sys, time
    import ember
    import ember.serialization as s

    def stall(fd):  # the data is written; stop before the rename
        print("writing", flush=True)
        time.sleep(60)

    s.os.fsync = stall
    ember.save({"w": ember.ones(1000)}, sys.argv[1])
    """
)


def _kill_while_writing(target):
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SAVE, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()


def test_a_killed_save_leaves_a_recognisable_temporary_the_next_save_removes(tmp_path):
    target = tmp_path / "ckpt.pt"
    ember.save({"w": ember.zeros(2)}, target)
    _kill_while_writing(target)
    first = _temporaries(target)
    assert len(first) == 1 and first[0].endswith(".tmp"), first
    assert ember.load(target)["w"].tolist() == [0.0, 0.0], "the target is untouched"
    _kill_while_writing(target)  # removed the first one, left its own
    second = _temporaries(target)
    assert len(second) == 1 and second != first, (first, second)
    ember.save({"w": ember.ones(2)}, target)
    assert _temporaries(target) == []
    assert ember.load(target)["w"].tolist() == [1.0, 1.0]
    assert sorted(os.listdir(tmp_path)) == ["ckpt.pt"]


def test_only_abandoned_temporaries_of_the_same_target_are_removed(tmp_path):
    target, other = tmp_path / "a.pt", tmp_path / "b.pt"
    _kill_while_writing(other)
    live = tmp_path / ".a.pt.ember-save-live.tmp"
    live.write_bytes(b"being written")
    with open(live, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # a save in progress holds its lock
        ember.save({"x": 1}, target)
        assert live.exists()
    assert len(_temporaries(other)) == 1
    ember.save({"x": 2}, target)
    assert not live.exists()
    assert len(_temporaries(other)) == 1
    ember.save({"x": 3}, other)
    assert _temporaries(other) == []


_SAVE_LOOP = textwrap.dedent(
    """
    import sys
    import ember
    w = ember.randn(2_000_000)
    print("ready", flush=True)
    while True:
        ember.save({"w": w}, sys.argv[1])
    """
)


def test_kills_at_random_moments_leave_nothing_after_the_next_save(tmp_path):
    # the issue's probe: 20 kills during saves left 5 orphans; here temporaries
    # never pile up (each save removes the one before it) and one save clears them
    target = tmp_path / "big.pt"
    rng = random.Random(0)
    orphaned = set()
    for _ in range(40):
        proc = subprocess.Popen(
            [sys.executable, "-c", _SAVE_LOOP, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        left = _temporaries(target)
        assert len(left) <= 1, left
        orphaned.update(left)
        if target.exists():
            assert ember.load(target)["w"].shape == (2_000_000,), "never a partial checkpoint"
        if len(orphaned) >= 3:
            break
    assert len(orphaned) >= 3, "too few kills landed during a write"
    ember.save({"done": True}, target)
    assert sorted(os.listdir(tmp_path)) == ["big.pt"]
    assert ember.load(target) == {"done": True}
