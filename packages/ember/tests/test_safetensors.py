"""ember.utils.safetensors: files named by state_dict key, read back by ember and
(with -m parity) by the safetensors package's NumPy and PyTorch readers."""

import json
import struct

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.utils import safetensors


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))


def test_tensors_are_named_by_their_keys(tmp_path):
    model = _model()
    safetensors.save_model(model, tmp_path / "m.safetensors")
    raw = (tmp_path / "m.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    assert header.pop("__metadata__") == {"format": "pt"}
    assert list(header) == list(model.state_dict())
    assert header["3.weight"]["dtype"] == "F32" and header["3.weight"]["shape"] == [3, 8]
    assert header["1.num_batches_tracked"]["dtype"] == "I64"
    assert (tmp_path / "m.safetensors").stat().st_mode & 0o022 == 0  # 0644 less the umask


def test_round_trip_every_dtype_and_load_model(tmp_path):
    tensors = {
        str(d): (ember.arange(6) % 3).to(d).reshape(2, 3)
        for d in (
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
        )
    }
    tensors["complex64"] = ember.tensor([[1 + 2j, -3.5j]], dtype=ember.complex64)
    tensors["uint64 max"] = ember.tensor([2**64 - 1, 2**63], dtype=ember.uint64)
    tensors["strided"] = ember.arange(12.0).reshape(3, 4).t()
    safetensors.save_file(tensors, tmp_path / "t.safetensors", metadata={"k": "v"})
    back = safetensors.load_file(tmp_path / "t.safetensors")
    assert list(back) == list(tensors)
    for name, t in tensors.items():
        assert back[name].dtype is t.dtype and back[name].tolist() == t.tolist()
    assert safetensors.load(safetensors.save(tensors))["strided"].tolist() == (
        tensors["strided"].tolist()
    )
    model, fresh = (
        _model(),
        nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3)),
    )
    safetensors.save_model(model, tmp_path / "m.safetensors")
    assert safetensors.load_model(fresh, tmp_path / "m.safetensors") == ([], [])
    x = ember.randn(2, 1, 4, 4)
    model.eval(), fresh.eval()
    assert fresh(x).tolist() == model(x).tolist()


def test_bad_input_is_refused_clearly(tmp_path):
    with pytest.raises(TypeError, match="not a Tensor"):
        safetensors.save({"a": [1, 2]})
    with pytest.raises(TypeError, match="strings"):
        safetensors.save({"a": ember.ones(1)}, metadata={"n": 1})
    with pytest.raises(ember.CheckpointError, match="truncated|header"):
        safetensors.load(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    # the safetensors format (and package) has no code for complex128
    with pytest.raises(TypeError, match="'z' has dtype ember.complex128.*cannot store"):
        safetensors.save({"z": ember.zeros(2, dtype=ember.complex128)})


@pytest.mark.parity
def test_the_safetensors_package_reads_ember_models_by_name(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    st_torch = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    model = _model()
    safetensors.save_model(model, tmp_path / "m.safetensors")
    arrays = st_numpy.load_file(str(tmp_path / "m.safetensors"))
    assert list(arrays) == list(model.state_dict())
    for name, t in model.state_dict().items():
        np.testing.assert_array_equal(arrays[name], t.numpy(), err_msg=name)
    tmodel = torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Flatten(), torch.nn.Linear(8, 3)
    )
    tmodel.load_state_dict(st_torch.load_file(str(tmp_path / "m.safetensors")))
    tensors = {"b": torch.ones(2, dtype=torch.bfloat16), "w": torch.arange(4.0)}
    st_torch.save_file(tensors, str(tmp_path / "t.safetensors"))
    back = safetensors.load_file(tmp_path / "t.safetensors")
    assert back["b"].dtype is ember.bfloat16 and back["w"].tolist() == [0, 1, 2, 3]


@pytest.mark.parity
@pytest.mark.parametrize(
    "dtype, code",
    [
        (ember.uint16, "U16"),
        (ember.uint32, "U32"),
        (ember.uint64, "U64"),
        (ember.complex64, "C64"),
    ],
)
def test_unsigned_and_complex_dtypes_match_the_safetensors_package(tmp_path, dtype, code):
    st_numpy = pytest.importorskip("safetensors.numpy")
    st_torch = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    values = [1 + 2j, -3.5j] if dtype.is_complex else [0, 7, dtype.max]
    t = ember.tensor(values, dtype=dtype)
    try:  # the package's own file of the same array
        theirs = st_numpy.save({"t": np.array(values, dtype=dtype.numpy)})
    except Exception as exc:  # an older safetensors than the one this was checked with
        pytest.skip(f"the installed safetensors does not store {dtype}: {exc}")
    ours = safetensors.save({"t": t})
    assert ours == theirs, "the same bytes as the safetensors package writes"
    (n,) = struct.unpack("<Q", ours[:8])
    assert json.loads(ours[8 : 8 + n])["t"]["dtype"] == code
    assert st_numpy.load(ours)["t"].tolist() == values
    tdtype = getattr(torch, dtype.name)
    assert st_torch.load(ours)["t"].dtype == tdtype
    back = safetensors.load(st_torch.save({"t": torch.tensor(values, dtype=tdtype)}))
    assert back["t"].dtype is dtype and back["t"].tolist() == values
