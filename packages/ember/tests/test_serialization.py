"""ember.save / ember.load: round trips of tensors, state dicts, optimizer states
and nested containers; PyTorch's zip layout (read back here by zipfile and
pickletools, and with -m parity by torch.load); atomic writes and the file mode;
pickled values and the weights-only allowlist; ember's earlier safetensors-layout
format and PyTorch's own zip checkpoints; and the bad files -- truncated, tampered,
foreign, and pickles that would run code -- which must raise without executing
anything."""

import argparse
import collections
import io
import json
import math
import os
import pathlib
import pickle
import pickletools
import struct
import zipfile

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import CheckpointError


def arr(t):
    return np.asarray(
        t.detach().float().numpy() if t.dtype is ember.bfloat16 else t.detach().numpy()
    )


def roundtrip(obj, tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save(obj, path)
    return ember.load(path)


@pytest.mark.parametrize(
    "dtype",
    [
        ember.float32,
        ember.float64,
        ember.float16,
        ember.bfloat16,
        ember.int64,
        ember.int32,
        ember.int16,
        ember.int8,
        ember.uint8,
        ember.bool,
        ember.uint16,
        ember.uint32,
        ember.uint64,
        ember.complex64,
        ember.complex128,
    ],
)
def test_tensor_dtypes_round_trip(tmp_path, dtype):
    t = (ember.randn(3, 4) * 10).to(dtype)
    if dtype.is_complex:
        t = t + 1j * ember.randn(3, 4).to(dtype)
    back = roundtrip(t, tmp_path)
    assert back.dtype is dtype and back.shape == (3, 4)
    np.testing.assert_array_equal(arr(back), arr(t))


UNSIGNED_EXTREMES = {
    ember.uint16: [0, 1, 2**15, 2**16 - 1],
    ember.uint32: [0, 1, 2**31, 2**32 - 1],
    ember.uint64: [0, 1, 2**63, 2**64 - 1],
}


@pytest.mark.parametrize("dtype", list(UNSIGNED_EXTREMES))
def test_unsigned_tensors_are_untyped_storages_as_torch_writes(tmp_path, dtype):
    values = UNSIGNED_EXTREMES[dtype]
    base = ember.tensor(np.array(values * 3, dtype=dtype.numpy)).reshape(3, 4)
    obj = {"base": base, "col": base[:, 3], "tail": base[1:, ::2]}
    ember.save(obj, tmp_path / "u.pt")
    raw = zipfile.ZipFile(tmp_path / "u.pt").read("u/data.pkl")
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(raw)]
    # Note [Untyped storages]: one UntypedStorage counted in bytes, dtype in the rebuild
    assert ("GLOBAL", "torch._utils _rebuild_tensor_v3") in ops
    assert ("GLOBAL", "torch.storage UntypedStorage") in ops
    assert ("GLOBAL", f"torch {dtype.name}") in ops
    assert ("BININT1", 12 * dtype.itemsize) in ops  # the storage's size in bytes
    back = ember.load(tmp_path / "u.pt")
    assert back["base"].dtype is dtype and back["base"].tolist() == [values] * 3
    assert back["col"].tolist() == [values[3]] * 3
    assert back["tail"].tolist() == [[values[0], values[2]]] * 2
    assert back["tail"].data_ptr() == back["base"].data_ptr() + 4 * dtype.itemsize
    assert back["col"].data_ptr() == back["base"].data_ptr() + 3 * dtype.itemsize


def test_shapes_views_and_sharing(tmp_path):
    base = ember.arange(12.0).reshape(3, 4)
    obj = {
        "scalar": ember.tensor(3.5),
        "empty": ember.zeros(0, 5),
        "view": base.t(),
        "slice": base[:, 1::2],
        "same": base,
        "again": base,
    }
    back = roundtrip(obj, tmp_path)
    assert back["scalar"].shape == () and back["scalar"].item() == 3.5
    assert back["empty"].shape == (0, 5)
    np.testing.assert_array_equal(arr(back["view"]), arr(base).T)
    np.testing.assert_array_equal(arr(back["slice"]), arr(base)[:, 1::2])
    assert back["same"] is back["again"], "one tensor saved twice loads as one tensor"


def test_model_state_dict_round_trip(tmp_path):
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 6 * 6, 3)
    )
    model(ember.randn(2, 1, 8, 8))  # running stats move
    sd = model.state_dict()
    back = roundtrip(sd, tmp_path)
    assert isinstance(back, collections.OrderedDict) and list(back) == list(sd)
    fresh = nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 6 * 6, 3)
    )
    fresh.load_state_dict(back)
    for (k, a), (_, b) in zip(fresh.state_dict().items(), sd.items()):
        np.testing.assert_array_equal(arr(a), arr(b), err_msg=k)
    assert back["1.num_batches_tracked"].dtype is ember.int64


def test_optimizer_state_round_trip(tmp_path):
    model = nn.Linear(3, 2)
    opt = ember.optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.95), amsgrad=True)
    model(ember.randn(4, 3)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    back = roundtrip(sd, tmp_path)
    assert back["param_groups"][0]["betas"] == (0.8, 0.95)
    assert back["param_groups"][0]["foreach"] is None and back["param_groups"][0]["params"] == [
        0,
        1,
    ]
    assert set(back["state"]) == {0, 1} and back["state"][0]["step"].item() == 1
    opt2 = ember.optim.Adam(nn.Linear(3, 2).parameters(), lr=0.5)
    opt2.load_state_dict(back)
    assert opt2.param_groups[0]["lr"] == 0.01


Point = collections.namedtuple("Point", ["x", "y"])


def test_plain_values_and_nesting(tmp_path):
    obj = {
        "ints": [0, -1, 2**60, -(2**70)],
        "floats": [1.5, math.inf, -math.inf],
        "nan": math.nan,
        "none": None,
        "flags": (True, False),
        "text": "héllo",
        "nested": {"a": [{"b": (1, [2, {"c": 3}])}]},
        "int_keys": {1: "one", 2: "two"},
        "tuple_key": {(1, 2): "pair"},
        "set": {1, 2, 3},
        "dtype": ember.float16,
        "device": ember.device("cpu"),
        "size": ember.Size([2, 3]),
        "bytes": b"\x00\x01binary",
        "numpy": np.arange(4),
        "np_scalar": np.float32(2.5),
        "$tensor": "not a tensor",
    }
    back = roundtrip(obj, tmp_path)
    assert (
        back["ints"] == obj["ints"] and back["floats"] == obj["floats"] and math.isnan(back["nan"])
    )
    assert back["none"] is None and back["flags"] == (True, False) and back["text"] == "héllo"
    assert back["nested"] == obj["nested"] and back["int_keys"] == {1: "one", 2: "two"}
    assert back["tuple_key"] == {(1, 2): "pair"} and back["set"] == {1, 2, 3}
    assert back["dtype"] is ember.float16 and back["device"] == ember.device("cpu")
    assert back["size"] == ember.Size([2, 3]) and isinstance(back["size"], ember.Size)
    assert back["bytes"] == b"\x00\x01binary" and back["$tensor"] == "not a tensor"
    assert type(back["numpy"]) is np.ndarray, "a NumPy array loads as a NumPy array"
    np.testing.assert_array_equal(back["numpy"], np.arange(4))
    assert type(back["np_scalar"]) is np.float32 and back["np_scalar"] == 2.5


def test_numpy_arrays_come_back_as_numpy_arrays(tmp_path):
    # a widely copied time-series example saves NumPy arrays with torch.save
    data = {"series": np.linspace(0, 1, 12).reshape(3, 4), "ids": np.arange(3, dtype=np.int16)}
    back = roundtrip(data, tmp_path)
    assert all(type(v) is np.ndarray for v in back.values())
    np.testing.assert_array_equal(back["series"], data["series"])
    assert back["ids"].dtype == np.int16
    back = roundtrip(np.eye(2, dtype=np.float32), tmp_path)
    assert type(back) is np.ndarray and back.dtype == np.float32


def test_namedtuples_are_pickled_and_need_trust(tmp_path):
    ember.save({"point": Point(1, 2)}, tmp_path / "p.pt")
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        ember.load(tmp_path / "p.pt")
    with ember.serialization.safe_globals([Point]):
        assert ember.load(tmp_path / "p.pt")["point"] == Point(1, 2)


def test_protocol_2_pickles_naming_python_2_builtins_load(tmp_path):
    # protocol 2 writes set as __builtin__.set, bytes through _codecs.encode;
    # PyTorch 2.13 accepts both with weights_only=True, and so does ember
    ember.save({"s": {1, 2}, "b": b"\xff\x00", "f": frozenset([3])}, tmp_path / "s.pt")
    raw = zipfile.ZipFile(tmp_path / "s.pt").read("s/data.pkl")
    globals_ = [arg for op, arg, _ in pickletools.genops(raw) if op.name == "GLOBAL"]
    assert "__builtin__ set" in globals_ and "_codecs encode" in globals_
    assert ember.load(tmp_path / "s.pt") == {"s": {1, 2}, "b": b"\xff\x00", "f": frozenset([3])}


def test_parameters_and_requires_grad_survive(tmp_path):
    p = nn.Parameter(ember.randn(2))
    frozen = nn.Parameter(ember.randn(2), requires_grad=False)
    leaf = ember.randn(2, requires_grad=True)
    back = roundtrip({"p": p, "frozen": frozen, "leaf": leaf}, tmp_path)
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert isinstance(back["frozen"], nn.Parameter) and not back["frozen"].requires_grad
    assert back["leaf"].requires_grad and back["leaf"].is_leaf


def test_file_objects_and_bytes(tmp_path):
    buf = io.BytesIO()
    ember.save({"x": ember.ones(2)}, buf)
    buf.seek(0)
    assert ember.load(buf)["x"].tolist() == [1.0, 1.0]
    with open(tmp_path / "f.pt", "wb") as f:
        ember.save([1, 2], f)
    with open(tmp_path / "f.pt", "rb") as f:
        assert ember.load(f) == [1, 2]
    assert ember.load(str(tmp_path / "f.pt"), map_location="cpu", weights_only=True) == [1, 2]
    assert ember.load(tmp_path / "f.pt", map_location=ember.device("cpu")) == [1, 2]
    assert ember.load(tmp_path / "f.pt", map_location=lambda storage, loc: storage) == [1, 2]


@pytest.mark.skipif(ember.cuda.is_available(), reason="CUDA is available here")
def test_map_location_cuda_is_a_clear_error_without_cuda(tmp_path):
    ember.save({"x": ember.ones(1)}, tmp_path / "a")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ember.load(tmp_path / "a", map_location="cuda:0")


def _relocated(path, location):
    """The checkpoint at ``path`` rewritten as if its storages were saved on ``location``
    (the pickle's location strings patched; torch.save writes no seal, so none is kept)."""
    old, new = b"cpu", location.encode()
    with zipfile.ZipFile(path) as src:  # without ember's format record, as torch writes
        members = {n: src.read(n) for n in src.namelist() if "ember_format" not in n}
    for name, data in members.items():
        if name.endswith("data.pkl"):  # BINUNICODE: opcode X, 4-byte length, the text
            members[name] = data.replace(
                b"X" + struct.pack("<I", len(old)) + old,
                b"X" + struct.pack("<I", len(new)) + new,
            )
            assert members[name] != data
    out = path.with_suffix(".moved")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for name, data in members.items():
            dst.writestr(name, data)
    return out


def test_map_location_as_torch_load_reads_it(tmp_path):
    ember.save({"x": ember.arange(4.0), "y": ember.ones(2, dtype=ember.int64)}, tmp_path / "c.pt")
    on_gpu = _relocated(tmp_path / "c.pt", "cuda:0")  # as if saved from a GPU
    if not ember.cuda.is_available():  # as torch.load on a CPU-only machine
        with pytest.raises(RuntimeError, match="map_location=ember.device\\('cpu'\\)"):
            ember.load(on_gpu)
    for where in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}):
        back = ember.load(on_gpu, map_location=where)
        assert back["x"].tolist() == [0.0, 1.0, 2.0, 3.0] and back["x"].device.type == "cpu"
    seen = []

    def keep_on_host(storage, location):
        seen.append(location)
        return storage

    assert ember.load(on_gpu, map_location=keep_on_host)["y"].tolist() == [1, 1]
    assert seen == ["cuda:0", "cuda:0"]
    assert ember.load(tmp_path / "c.pt", map_location=lambda s, loc: None)["y"].tolist() == [1, 1]
    with pytest.raises(TypeError, match="map_location callable returned a str"):
        ember.load(on_gpu, map_location=lambda s, loc: "cpu")
    shapes = ember.load(tmp_path / "c.pt", map_location="meta")  # shapes, no data
    assert shapes["x"].is_meta and shapes["x"].shape == (4,) and shapes["y"].dtype == ember.int64
    with pytest.raises(RuntimeError, match="map_location='mps'"):
        ember.load(tmp_path / "c.pt", map_location="mps")
    with pytest.raises(TypeError, match="map_location must be"):
        ember.load(tmp_path / "c.pt", map_location=3.5)


def test_objects_the_layout_cannot_hold_are_pickled_and_need_trust(tmp_path):
    model = nn.Linear(2, 2)
    obj = {"args": argparse.Namespace(lr=0.1, steps=3), "model": model, "w": model.weight}
    ember.save(obj, tmp_path / "m")
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL argparse\.Namespace"):
        ember.load(tmp_path / "m")  # weights_only=True is the default, as in PyTorch 2.6+
    back = ember.load(tmp_path / "m", weights_only=False)
    assert vars(back["args"]) == {"lr": 0.1, "steps": 3}
    assert isinstance(back["model"], nn.Linear)
    np.testing.assert_array_equal(arr(back["model"].weight), arr(model.weight))
    x = ember.randn(4, 2)
    np.testing.assert_array_equal(arr(back["model"](x)), arr(model(x)))
    assert back["w"] is back["model"].weight, "a tensor inside and outside the pickle is one"
    # The tensors' bytes are records of their own: the pickle holds only references.
    names = zipfile.ZipFile(tmp_path / "m").namelist()
    assert sorted(n for n in names if "/data/" in n) == ["m/data/0", "m/data/1"]


def test_a_whole_model_saved_by_ember_loads_with_weights_only_false(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU())
    model(ember.randn(6, 3))
    model.eval()
    ember.save(model, tmp_path / "model.pt")
    back = ember.load(tmp_path / "model.pt", weights_only=False)
    assert isinstance(back, nn.Sequential) and isinstance(back[0].weight, nn.Parameter)
    x = ember.randn(5, 3)
    np.testing.assert_array_equal(arr(back(x)), arr(model(x)))


def test_safe_globals_allowlist(tmp_path):
    ember.save({"args": argparse.Namespace(lr=0.5)}, tmp_path / "a")
    with ember.serialization.safe_globals([argparse.Namespace]):
        assert ember.load(tmp_path / "a")["args"].lr == 0.5
    with pytest.raises(pickle.UnpicklingError):
        ember.load(tmp_path / "a")  # the context manager's allowance has ended
    ember.serialization.add_safe_globals([argparse.Namespace])
    try:
        assert ember.serialization.get_safe_globals() == [argparse.Namespace]
        assert ember.load(tmp_path / "a")["args"].lr == 0.5
    finally:
        ember.serialization.clear_safe_globals()
    assert ember.serialization.get_safe_globals() == []


def test_unpicklable_objects_fail_at_save_and_write_nothing(tmp_path):
    with pytest.raises((AttributeError, pickle.PicklingError, TypeError)) as info:
        ember.save({"f": lambda x: x}, tmp_path / "m")
    assert any("obj['f']" in note for note in getattr(info.value, "__notes__", []))
    assert not (tmp_path / "m").exists()


def test_a_pickled_value_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    ember.save({"x": _Exploit(str(marker))}, tmp_path / "evil")
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL io\.open"):
        ember.load(tmp_path / "evil")
    assert not marker.exists(), "a weights-only load must never execute code from the file"


def test_layout_is_pytorchs_zip(tmp_path):
    """An independent reader (zipfile, pickletools): the records torch.save writes,
    storages aligned to 64 bytes, torch's globals in data.pkl, views sharing one
    storage record, and ember's seal in the archive comment."""
    base = ember.arange(6.0).reshape(2, 3)
    tensors = {"w": base, "row": base[1], "i": ember.tensor([1, 2, 3], dtype=ember.int32)}
    ember.save(tensors, tmp_path / "s.pt")
    raw = (tmp_path / "s.pt").read_bytes()
    archive = zipfile.ZipFile(tmp_path / "s.pt")
    names = archive.namelist()
    assert names[0] == "s/data.pkl" and {"s/byteorder", "s/version"} <= set(names)
    assert archive.read("s/byteorder") == b"little" and archive.read("s/version") == b"3\n"
    assert len(archive.read("s/.data/serialization_id")) == 40
    assert sorted(n for n in names if "/data/" in n) == ["s/data/0", "s/data/1"]
    for info in archive.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        if "/data/" in info.filename:
            n, m = struct.unpack("<HH", raw[info.header_offset + 26 : info.header_offset + 30])
            assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename
    assert np.frombuffer(archive.read("s/data/0"), np.float32).tolist() == [0, 1, 2, 3, 4, 5]
    assert np.frombuffer(archive.read("s/data/1"), np.int32).tolist() == [1, 2, 3]
    ops = list(pickletools.genops(archive.read("s/data.pkl")))
    globals_ = {arg for op, arg, _ in ops if op.name == "GLOBAL"}
    assert {"torch._utils _rebuild_tensor_v2", "torch FloatStorage", "torch IntStorage"} <= (
        globals_
    )
    assert archive.comment.startswith(b"ember-sha256:") and len(archive.comment) == 77


def test_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        ember.save({"x": 1}, tmp_path / "a.pt")
    finally:
        os.umask(old)
    assert (tmp_path / "a.pt").stat().st_mode & 0o777 == 0o640
    os.umask(0o022)
    try:
        ember.save({"x": 1}, tmp_path / "b.pt")
    finally:
        os.umask(old)
    assert (tmp_path / "b.pt").stat().st_mode & 0o777 == 0o644


def test_tensors_viewing_one_storage_as_two_dtypes_are_refused(tmp_path):
    x = ember.zeros(4)
    with pytest.raises(RuntimeError, match="same storage as different dtypes"):
        ember.save([x, x.view(ember.int32)], tmp_path / "v.pt")


def test_plain_safetensors_file_loads_as_dict(tmp_path):
    data = np.arange(4, dtype=np.float32)
    header = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}
    text = json.dumps(header).encode()
    (tmp_path / "plain.safetensors").write_bytes(
        struct.pack("<Q", len(text)) + text + data.tobytes()
    )
    back = ember.load(tmp_path / "plain.safetensors")
    assert list(back) == ["a"] and back["a"].tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_writes_are_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    ember.save({"v": 1}, path)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        ember.save({"v": 2}, path)
    assert ember.load(path) == {"v": 1}, "a failed save leaves the old file intact"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"], (
        "no temporary file is left behind"
    )


# ------------------------------------------------------------------ bad files


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good"
    ember.save({"w": ember.randn(16, 16), "step": 3}, path)
    return path


@pytest.mark.parametrize("cut", [0, 4, 8, 20, -100, -1])
def test_truncated_file(good_file, cut):
    data = good_file.read_bytes()
    good_file.write_bytes(data[:cut])
    with pytest.raises(CheckpointError, match="truncated|too short|header|checksum"):
        ember.load(good_file)


def test_tampered_tensor_bytes(good_file):
    data = bytearray(good_file.read_bytes())
    info = zipfile.ZipFile(good_file).getinfo("good/data/0")
    data[info.header_offset + 200] ^= 0xFF  # inside the 1 KiB of the tensor's bytes
    good_file.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum"):
        ember.load(good_file)


FORMAT_2 = pathlib.Path(__file__).parent / "data" / "ember_format2.ckpt"


def test_ember_format_2_files_still_load():
    # written by ember.save before it wrote PyTorch's zip format (the safetensors layout)
    back = ember.load(FORMAT_2)
    assert back["epoch"] == 3 and back["tags"] == ("a", 2) and back["dt"] is ember.float16
    assert back["view"].tolist() == [3.0, 4.0, 5.0] and back["base"].shape == (2, 3)
    assert list(back["model"]) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert back["optimizer"]["param_groups"][0]["lr"] == 0.001
    pickled = FORMAT_2.with_name("ember_format2_pickled.ckpt")
    with pytest.raises(pickle.UnpicklingError, match="argparse"):
        ember.load(pickled)
    assert ember.load(pickled, weights_only=False)["args"].lr == 0.5


def test_tampered_format_2_header(tmp_path):
    data = FORMAT_2.read_bytes()
    path = tmp_path / "old.ckpt"
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header["t0"]["shape"] = [1, 4]  # claims fewer bytes than stored
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n :])
    with pytest.raises(CheckpointError, match="checksum"):  # it covers the header too
        ember.load(path)
    del header["__metadata__"]  # a plain safetensors file: no checksum, still checked
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n :])
    with pytest.raises(CheckpointError, match="altered|bytes"):
        ember.load(path)
    path.write_bytes(data[:8] + b"{not json" + data[17:])
    with pytest.raises(CheckpointError, match="JSON"):
        ember.load(path)


def test_structure_with_unknown_tags_or_missing_tensors(tmp_path):
    for structure in ['{"$eval": "__import__(\'os\')"}', '{"$tensor": "t99"}', "[1, {}]"]:
        header = {
            "__metadata__": {
                "format": "ember",
                "ember.structure": structure,
                "ember.sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            }
        }
        text = json.dumps(header).encode()
        (tmp_path / "x").write_bytes(struct.pack("<Q", len(text)) + text)
        with pytest.raises(CheckpointError):
            ember.load(tmp_path / "x")


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    for protocol in (2, 4, 5):
        (tmp_path / "evil.pt").write_bytes(pickle.dumps(_Exploit(str(marker)), protocol=protocol))
        with pytest.raises(CheckpointError, match="pickle"):
            ember.load(tmp_path / "evil.pt")
    assert not marker.exists(), "loading must never execute code from the file"
    (tmp_path / "zip.pt").write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(CheckpointError, match="zip"):
        ember.load(tmp_path / "zip.pt")


@pytest.mark.parametrize("magic, pads", [(b"\x80", range(300)), (b"PK", range(19000, 19400))])
def test_header_lengths_that_look_like_pickle_or_zip_magic(magic, pads):
    # the 8-byte header length may begin with 0x80 (pickle's) or "PK" (zip's magic)
    from ember.utils import safetensors

    for pad in pads:
        data = safetensors.save({"t": ember.ones(2)}, metadata={"name": "x" * pad})
        if data.startswith(magic):
            break
    else:
        raise AssertionError(f"no padding gave a header length starting with {magic!r}")
    assert ember.load(io.BytesIO(data))["t"].tolist() == [1.0, 1.0]


def test_garbage_and_empty_files(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(CheckpointError):
        ember.load(tmp_path / "empty")
    (tmp_path / "huge").write_bytes(struct.pack("<Q", 2**62) + b"{}")
    with pytest.raises(CheckpointError):
        ember.load(tmp_path / "huge")
    (tmp_path / "text").write_bytes(b"hello world, this is not a checkpoint at all")
    with pytest.raises(CheckpointError):
        ember.load(tmp_path / "text")


@pytest.mark.parity
def test_torch_checkpoints_of_tensors_and_state_dicts_load(tmp_path):
    torch = pytest.importorskip("torch")
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    tmodel(torch.randn(8, 3))  # update the running statistics
    base = torch.arange(12.0).reshape(3, 4)
    obj = {
        "model": tmodel.state_dict(),
        "base": base,
        "view": base[:, 1::2],
        "ints": torch.arange(5),
        "half": torch.ones(2, dtype=torch.bfloat16),
        "mask": torch.tensor([True, False]),
        "empty": torch.zeros(0, 3),
        "param": torch.nn.Parameter(torch.ones(2)),
        "dtype": torch.float16,
        "size": torch.Size([2, 3]),
        "epoch": 7,
        "history": [0.5, 0.25],
    }
    torch.save(obj, tmp_path / "t.pt")
    back = ember.load(tmp_path / "t.pt")
    np.testing.assert_array_equal(arr(back["view"]), base[:, 1::2].numpy())
    assert back["view"].data_ptr() == back["base"].data_ptr() + 4, "views stay views"
    assert back["ints"].dtype is ember.int64 and back["half"].dtype is ember.bfloat16
    assert back["mask"].tolist() == [True, False] and back["empty"].shape == (0, 3)
    assert isinstance(back["param"], nn.Parameter) and back["param"].requires_grad
    assert back["dtype"] is ember.float16 and back["size"] == ember.Size([2, 3])
    assert back["epoch"] == 7 and back["history"] == [0.5, 0.25]
    emodel = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    emodel.load_state_dict(back["model"])
    tmodel.eval(), emodel.eval()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(
        arr(emodel(ember.tensor(x))), tmodel(torch.tensor(x)).detach().numpy(), rtol=1e-6
    )


@pytest.mark.parity
def test_torch_pickled_modules_are_refused_clearly(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Linear(2, 2), tmp_path / "m.pt")
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError, match=r"torch\.nn\.modules\.linear\.Linear"):
            ember.load(tmp_path / "m.pt", weights_only=weights_only)
    torch.save({"w": torch.ones(2)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match="bare pickle"):
        ember.load(tmp_path / "legacy.pt")


@pytest.mark.parity
def test_torch_load_reads_embers_checkpoints_with_weights_only(tmp_path):
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    model(ember.randn(8, 3))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(ember.randn(8, 3)).sum().backward()
    opt.step()
    base = ember.arange(12.0).reshape(3, 4)
    obj = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "base": base,
        "view": base[:, 1::2],
        "ints": ember.arange(5),
        "half": ember.ones(2, dtype=ember.bfloat16),
        "mask": ember.tensor([True, False]),
        "empty": ember.zeros(0, 3),
        "param": nn.Parameter(ember.ones(2)),
        "dtype": ember.float16,
        "size": ember.Size([2, 3]),
        "device": ember.device("cpu"),
        "epoch": 7,
        "history": [0.5, 0.25],
        "tags": {"a", "b"},
        "blob": b"\x00\xff",
        "pair": (1, "x"),
    }
    ember.save(obj, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt", weights_only=True)
    assert back["view"].tolist() == arr(base)[:, 1::2].tolist()
    assert back["view"].untyped_storage().data_ptr() == back["base"].untyped_storage().data_ptr()
    assert back["ints"].dtype == torch.int64 and back["half"].dtype == torch.bfloat16
    assert back["mask"].tolist() == [True, False] and back["empty"].shape == (0, 3)
    assert isinstance(back["param"], torch.nn.Parameter) and back["param"].requires_grad
    assert back["dtype"] == torch.float16 and back["size"] == torch.Size([2, 3])
    assert back["device"] == torch.device("cpu")
    assert back["epoch"] == 7 and back["history"] == [0.5, 0.25] and back["tags"] == {"a", "b"}
    assert back["blob"] == b"\x00\xff" and back["pair"] == (1, "x")
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    tmodel.load_state_dict(back["model"])
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.5, momentum=0.9)
    topt.load_state_dict(back["optimizer"])
    assert topt.param_groups[0]["lr"] == 0.1
    model.eval(), tmodel.eval()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(
        tmodel(torch.tensor(x)).detach().numpy(), arr(model(ember.tensor(x))), rtol=1e-6
    )
    # and back: torch saves what it loaded, ember reads it
    torch.save(back, tmp_path / "t.pt")
    again = ember.load(tmp_path / "t.pt")
    assert again["view"].tolist() == back["view"].tolist() and again["tags"] == {"a", "b"}


@pytest.mark.parity
@pytest.mark.parametrize("dtype", list(UNSIGNED_EXTREMES))
def test_unsigned_and_complex_tensors_cross_load_with_torch(tmp_path, dtype):
    torch = pytest.importorskip("torch")
    values = UNSIGNED_EXTREMES[dtype]
    tdtype = getattr(torch, dtype.name)
    tbase = torch.tensor([values] * 3, dtype=tdtype)
    tcomplex = torch.tensor([1 + 2j, -3.5j], dtype=torch.complex128)
    torch.save(
        {"base": tbase, "tail": tbase[1:, ::2], "z": tcomplex, "zf": tcomplex.to(torch.complex64)},
        tmp_path / "t.pt",
    )
    back = ember.load(tmp_path / "t.pt")
    assert back["base"].dtype is dtype and back["base"].tolist() == [values] * 3
    assert back["tail"].tolist() == [[values[0], values[2]]] * 2
    assert back["tail"].data_ptr() == back["base"].data_ptr() + 4 * dtype.itemsize
    assert back["z"].dtype is ember.complex128 and back["z"].tolist() == [1 + 2j, -3.5j]
    assert back["zf"].dtype is ember.complex64 and back["zf"].tolist() == [1 + 2j, -3.5j]
    ember.save(back, tmp_path / "e.pt")
    again = torch.load(tmp_path / "e.pt", weights_only=True)
    assert again["base"].dtype == tdtype and again["base"].tolist() == [values] * 3
    assert again["tail"].tolist() == [[values[0], values[2]]] * 2
    assert again["tail"].untyped_storage().data_ptr() == again["base"].untyped_storage().data_ptr()
    assert again["z"].dtype == torch.complex128 and again["z"].tolist() == [1 + 2j, -3.5j]
    assert again["zf"].dtype == torch.complex64 and again["zf"].tolist() == [1 + 2j, -3.5j]


@pytest.mark.parity
def test_numpy_arrays_saved_by_torch_load_as_numpy_arrays(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"x": np.arange(3.0)}, tmp_path / "n.pt")
    back = ember.load(tmp_path / "n.pt")
    assert type(back["x"]) is np.ndarray and back["x"].tolist() == [0.0, 1.0, 2.0]
    ember.save({"x": np.arange(3.0)}, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt", weights_only=False)
    assert type(back["x"]) is np.ndarray and back["x"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickle_protocols(tmp_path, protocol):
    x = ember.randn(30, 30)
    obj = {"x": x, "v": x[5:, ::2], "n": np.arange(3.0), "s": {1}, "b": b"\x01"}
    ember.save(obj, tmp_path / "p.pt", pickle_protocol=protocol)
    back = ember.load(tmp_path / "p.pt")
    assert back["v"].tolist() == x[5:, ::2].tolist() and back["v"].data_ptr() > 0
    assert type(back["n"]) is np.ndarray and back["s"] == {1} and back["b"] == b"\x01"


@pytest.mark.cuda
@pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_are_saved_with_their_location(tmp_path):
    x = ember.arange(12.0, device="cuda").reshape(3, 4)
    ember.save({"x": x, "col": x[:, 1]}, tmp_path / "c.pt")
    raw = zipfile.ZipFile(tmp_path / "c.pt").read("c/data.pkl")
    assert b"cuda:0" in raw  # the storage's location, as torch.save records it
    back = ember.load(tmp_path / "c.pt")  # back on the device it was saved from
    assert back["x"].device == x.device and back["col"].device == x.device
    assert back["x"].tolist() == x.cpu().tolist() and back["col"].tolist() == [1.0, 5.0, 9.0]
    back = ember.load(tmp_path / "c.pt", map_location="cpu")
    assert back["x"].device.type == "cpu" and back["col"].tolist() == [1.0, 5.0, 9.0]
    back = ember.load(tmp_path / "c.pt", map_location=lambda s, loc: s.cuda())
    assert back["x"].device.type == "cuda"
