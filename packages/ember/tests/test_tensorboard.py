"""ember.utils.tensorboard.SummaryWriter: what is logged is read back with
tensorboard's own EventAccumulator and checked (values, steps, shapes, pixels);
histograms match NumPy's counts; without tensorboard the import error names
the fix."""

import io
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402
from ember.utils.tensorboard import summary as S  # noqa: E402


def _read(path):
    acc = EventAccumulator(str(path), size_guidance={"images": 0, "tensors": 0, "scalars": 0})
    acc.Reload()
    return acc


def _decode_png(data):
    """Pixels of a PNG written by ember's encoder (filter 0 rows), via zlib."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        chunks.setdefault(kind, b"")
        chunks[kind] += data[pos + 8 : pos + 8 + n]
        pos += 12 + n
    w, h = int.from_bytes(chunks[b"IHDR"][:4], "big"), int.from_bytes(chunks[b"IHDR"][4:8], "big")
    c = {0: 1, 2: 3, 6: 4}[chunks[b"IHDR"][9]]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + w * c)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, c)


def test_scalars_from_numbers_and_tensors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(4):
            w.add_scalar("loss/train", ember.tensor(1.0 / (step + 1)), step)
        w.add_scalar("lr", 0.5, global_step=ember.tensor(7))
        w.add_scalar("np", np.float32(2.5), 1)
    acc = _read(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("loss/train")] == [
        (0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3)), (3, 0.25)
    ]  # fmt: skip
    assert [(e.step, e.value) for e in acc.Scalars("lr")] == [(7, 0.5)]
    assert acc.Scalars("np")[0].value == 2.5
    with SummaryWriter(tmp_path / "bad") as w, pytest.raises(ValueError, match="scalar"):
        w.add_scalar("x", ember.ones(3), 0)


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalars("loss", {"train": 1.0, "val": 2.0}, 3)
    assert {"loss_train", "loss_val"} <= set(os.listdir(tmp_path))
    assert _read(tmp_path / "loss_train").Scalars("loss")[0].value == 1.0
    assert _read(tmp_path / "loss_val").Scalars("loss")[0].step == 3


def test_histogram_counts_match_numpy(tmp_path):
    values = np.random.default_rng(0).standard_normal(500).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", ember.tensor(values), 0)
        w.add_histogram("w10", ember.tensor(values), 0, bins=10)
    h = _read(tmp_path).Histograms("w")[0].histogram_value
    assert (h.min, h.max, h.num) == (values.min(), values.max(), 500)
    assert h.sum == pytest.approx(values.astype(np.float64).sum())
    assert h.sum_squares == pytest.approx((values.astype(np.float64) ** 2).sum())
    assert sum(h.bucket) == 500
    counts, edges = np.histogram(values.astype(np.float64), bins=10)
    h10 = _read(tmp_path).Histograms("w10")[0].histogram_value
    assert list(h10.bucket) == [0] + counts.tolist()  # one empty bucket left, as PyTorch
    np.testing.assert_allclose(h10.bucket_limit, edges)


@pytest.mark.parametrize(
    "shape, fmt, expect_hw",
    [
        ((3, 4, 5), "CHW", (4, 5)),
        ((4, 5, 3), "HWC", (4, 5)),
        ((1, 4, 5), "CHW", (4, 5)),
        ((4, 5), "HW", (4, 5)),
    ],
)
def test_images_layouts(tmp_path, shape, fmt, expect_hw):
    rng = np.random.default_rng(1)
    img = rng.random(shape).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", ember.tensor(img), 0, dataformats=fmt)
    ev = _read(tmp_path).Images("img")[0]
    assert (ev.height, ev.width) == expect_hw
    pixels = _decode_png(ev.encoded_image_string)
    hwc = img.transpose([fmt.index(c) for c in "HWC"]) if "C" in fmt else img[:, :, None]
    expected = (np.broadcast_to(hwc, expect_hw + (3,)) * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(pixels, expected)


def test_add_images_tiles_a_batch_and_uint8_is_kept(tmp_path):
    batch = np.arange(10 * 3 * 2 * 2, dtype=np.uint8).reshape(10, 3, 2, 2)
    with SummaryWriter(tmp_path) as w:
        w.add_images("grid", ember.from_numpy(batch), 0)
        w.add_images(
            "nhwc", ember.from_numpy(batch.transpose(0, 2, 3, 1).copy()), 0, dataformats="NHWC"
        )
    for tag in ("grid", "nhwc"):
        ev = _read(tmp_path).Images(tag)[0]
        assert (ev.height, ev.width) == (4, 16)  # 2 rows of 8
        pixels = _decode_png(ev.encoded_image_string)
        np.testing.assert_array_equal(pixels[2:4, 2:4], batch[9].transpose(1, 2, 0))
        np.testing.assert_array_equal(pixels[2:4, 4:], 0)
    with SummaryWriter(tmp_path / "bad") as w, pytest.raises(ValueError, match="dataformats"):
        w.add_image("x", ember.ones(3, 4, 5), 0, dataformats="HW")


def test_text_and_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "lr **0.1**", 5)
        w.add_figure("fig", fig, 1)
    acc = _read(tmp_path)
    (t,) = acc.Tensors("notes/text_summary")
    assert t.step == 5 and t.tensor_proto.string_val == [b"lr **0.1**"]
    ev = acc.Images("fig")[0]
    assert (ev.width, ev.height) == (100, 50)
    assert not plt.fignum_exists(fig.number)  # closed after rendering (close=True)


def test_hparams_in_a_run_of_their_own(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2

    with SummaryWriter(tmp_path) as w:
        w.add_hparams(
            {"lr": 0.1, "bs": 32, "opt": "sgd", "nesterov": True}, {"hp/acc": 0.75}, run_name="t0"
        )
    acc = _read(tmp_path / "t0")
    assert acc.Scalars("hp/acc")[0].value == 0.75
    meta = acc.SummaryMetadata("_hparams_/session_start_info")
    data = plugin_data_pb2.HParamsPluginData.FromString(meta.plugin_data.content)
    hp = data.session_start_info.hparams
    assert hp["lr"].number_value == 0.1 and hp["bs"].number_value == 32
    assert hp["opt"].string_value == "sgd" and hp["nesterov"].bool_value is True
    exp = plugin_data_pb2.HParamsPluginData.FromString(
        acc.SummaryMetadata("_hparams_/experiment").plugin_data.content
    ).experiment
    assert [i.name for i in exp.hparam_infos] == ["lr", "bs", "opt", "nesterov"]
    assert [m.name.tag for m in exp.metric_infos] == ["hp/acc"]


def test_embedding_files(tmp_path):
    mat = np.arange(12, dtype=np.float32).reshape(4, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(
            ember.tensor(mat), metadata=["a", "b", "c", "d"], label_img=ember.ones(4, 3, 2, 2)
        )
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "00000/default/tensors.tsv"), mat)
    assert (tmp_path / "00000/default/metadata.tsv").read_text().split() == ["a", "b", "c", "d"]
    sprite = _decode_png((tmp_path / "00000/default/sprite.png").read_bytes())
    assert sprite.shape == (4, 4, 3) and (sprite == 255).all()
    config = (tmp_path / "projector_config.pbtxt").read_text()
    assert 'tensor_path: "00000/default/tensors.tsv"' in config


def test_flush_close_and_default_logdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
    w.add_scalar("a", 1.0, 0)
    w.flush()
    assert _read(w.get_logdir()).Scalars("a")[0].value == 1.0
    w.close()
    w.close()  # closing twice is harmless


def test_png_encoder_round_trips_through_pil():
    Image = pytest.importorskip("PIL.Image")
    img = np.random.default_rng(2).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(S.encode_png(img)))), img)


def test_import_error_names_the_fix():
    code = (
        "import sys; sys.modules['tensorboard'] = None\n"
        "try:\n    import ember.utils.tensorboard\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install tensorboard" in out.stdout


@pytest.mark.parity
@pytest.mark.parametrize(
    "bins, max_bins", [("tensorflow", None), ("tensorflow", 30), (10, None), (64, 10), (9, 3)]
)
def test_histogram_buckets_match_torch(tmp_path, bins, max_bins):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    values = np.random.default_rng(3).standard_normal(400).astype(np.float32)
    with SummaryWriter(tmp_path / "ember") as w:
        w.add_histogram("h", ember.tensor(values), 0, bins=bins, max_bins=max_bins)
    with TorchWriter(str(tmp_path / "torch")) as w:
        w.add_histogram("h", torch.tensor(values), 0, bins=bins, max_bins=max_bins)
    mine = _read(tmp_path / "ember").Histograms("h")[0].histogram_value
    theirs = _read(tmp_path / "torch").Histograms("h")[0].histogram_value
    assert list(mine.bucket) == list(theirs.bucket)
    np.testing.assert_allclose(mine.bucket_limit, theirs.bucket_limit)
    assert (mine.min, mine.max, mine.num) == (theirs.min, theirs.max, theirs.num)


@pytest.mark.parity
def test_images_match_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    img = np.random.default_rng(4).random((6, 3, 5, 4)).astype(np.float32)
    cases = [
        ("chw", img[0], "CHW"),
        ("hwc", img[0].transpose(1, 2, 0), "HWC"),
        ("hw", img[0, 0], "HW"),
    ]
    for lib, writer_cls, root in ((ember, SummaryWriter, "ember"), (torch, TorchWriter, "torch")):
        with writer_cls(str(tmp_path / root)) as w:
            for tag, array, fmt in cases:
                w.add_image(tag, lib.tensor(np.ascontiguousarray(array)), 0, dataformats=fmt)
            w.add_images("batch", lib.tensor(img), 0)
    Image = pytest.importorskip("PIL.Image")
    for tag in ("chw", "hwc", "hw", "batch"):
        mine = _read(tmp_path / "ember").Images(tag)[0]
        theirs = _read(tmp_path / "torch").Images(tag)[0]
        assert (mine.width, mine.height) == (theirs.width, theirs.height), tag
        a = np.asarray(Image.open(io.BytesIO(mine.encoded_image_string)).convert("RGB"))
        b = np.asarray(Image.open(io.BytesIO(theirs.encoded_image_string)).convert("RGB"))
        np.testing.assert_array_equal(a, b)
