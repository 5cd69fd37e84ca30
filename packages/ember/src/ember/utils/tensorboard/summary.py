"""Summary protos for ember.utils.tensorboard, built from NumPy arrays with the
tensorboard package's protos and plugin metadata: scalars, histograms, images
(PNG written here with zlib), text and hyperparameters."""

import struct
import zlib

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto


def to_numpy(x):
    """An ember tensor (or anything array-like) as a NumPy array, detached."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "cpu") and hasattr(x, "numpy"):
        return x.cpu().numpy()
    return np.asarray(x)


def to_float(x):
    if hasattr(x, "item"):
        return float(x.item())
    return float(x)


# -- scalars ------------------------------------------------------------------


def scalar(tag, value, new_style=False, double_precision=False):
    value = to_numpy(value).squeeze()
    if value.ndim != 0:
        raise ValueError(f"add_scalar: scalar_value should be a scalar, got shape {value.shape}")
    value = float(value)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=value)])
    from tensorboard.plugins.scalar.metadata import PLUGIN_NAME

    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=PLUGIN_NAME))
    if double_precision:
        tensor = TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        tensor = TensorProto(float_val=[value], dtype="DT_FLOAT")
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=metadata)])


# -- histograms -----------------------------------------------------------------


def _tensorflow_bins():
    """TensorFlow's default bucket edges: +-1e-12 * 1.1**k up to 1e20, and 0."""
    edges = []
    v = 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


def histogram(tag, values, bins="tensorflow", max_bins=None):
    values = to_numpy(values).astype(np.float64).ravel()
    if values.size == 0:
        raise ValueError("add_histogram: the input has no element")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = _tensorflow_bins()
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins  # PyTorch merges floor(bins / max_bins) at a time
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError("add_histogram: the values fall outside every bin")
    # TensorBoard stores right edges only: keep one empty bucket left of the data
    # (so the leftmost edge shows), none right, as PyTorch does; bucket -1 is an
    # empty one ending at the first edge.
    first, last = int(nonzero[0]), int(nonzero[-1])
    lo = first - 1
    right_edges = limits[lo + 1 : last + 2]
    counts = counts[max(lo, 0) : last + 1]
    if lo == -1:
        counts = np.concatenate([[0], counts])
    hist = HistogramProto(
        min=float(values.min()),
        max=float(values.max()),
        num=float(values.size),
        sum=float(values.sum()),
        sum_squares=float(np.dot(values, values)),
        bucket_limit=right_edges.tolist(),
        bucket=counts.astype(np.float64).tolist(),
    )
    return Summary(value=[Summary.Value(tag=tag, histo=hist)])


# -- images -------------------------------------------------------------------


def encode_png(hwc):
    """A PNG (8-bit gray, RGB or RGBA) of a uint8 HxWxC array."""
    h, w, c = hwc.shape
    color_type = {1: 0, 3: 2, 4: 6}[c]
    raw = np.zeros((h, 1 + w * c), dtype=np.uint8)  # filter byte 0 on each row
    raw[:, 1:] = hwc.reshape(h, w * c)

    def chunk(kind, data):
        body = kind + data
        return (
            struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + chunk(b"IEND", b"")
    )


def _grid(nchw, ncols=8):
    """Tile N images (NCHW) into one CHW image, ``ncols`` per row."""
    n, c, h, w = nchw.shape
    if c == 1:
        nchw = np.repeat(nchw, 3, axis=1)
        c = 3
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=nchw.dtype)
    for i in range(n):
        r, col = divmod(i, ncols)
        canvas[:, r * h : (r + 1) * h, col * w : (col + 1) * w] = nchw[i]
    return canvas


def to_hwc(array, dataformats):
    """An image array in ``dataformats`` (NCHW/NHWC/CHW/HWC/HW) as HxWxC, with C in 1, 3, 4
    (grayscale widened to RGB, and batches tiled into a grid, as PyTorch does)."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt):
        raise ValueError(f"dataformats {dataformats!r} repeats a dimension")
    if array.ndim != len(fmt):
        raise ValueError(
            f"image has {array.ndim} dimensions (shape {array.shape}) "
            f"but dataformats={dataformats!r} describes {len(fmt)}"
        )
    if len(fmt) == 4:
        array = _grid(array.transpose([fmt.index(ch) for ch in "NCHW"]))
        return array.transpose(1, 2, 0)
    if len(fmt) == 3:
        array = array.transpose([fmt.index(ch) for ch in "HWC"])
        if array.shape[2] == 1:
            array = np.concatenate([array] * 3, axis=2)
        return array
    if len(fmt) == 2:
        array = array.transpose([fmt.index(ch) for ch in "HW"])
        return np.stack([array] * 3, axis=2)
    raise ValueError(f"dataformats {dataformats!r}: expected 2, 3 or 4 dimensions")


def image(tag, img, dataformats="CHW"):
    array = to_numpy(img)
    hwc = to_hwc(array, dataformats)
    if hwc.shape[2] not in (1, 3, 4):
        raise ValueError(
            f"add_image: expected 1, 3 or 4 channels, got image of shape {array.shape}"
        )
    # uint8 images are pixel values; anything else is taken to lie in [0, 1].
    scale = 1 if array.dtype == np.uint8 else 255
    pixels = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    h, w, c = pixels.shape
    encoded = encode_png(np.ascontiguousarray(pixels))
    img_pb = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=encoded)
    return Summary(value=[Summary.Value(tag=tag, image=img_pb)])


def figure_to_chw(figure, close=True):
    """Render a matplotlib figure to a uint8 CHW RGB array."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    w, h = canvas.get_width_height()
    rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(h, w, 4)
    chw = np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return chw


# -- text and hyperparameters ----------------------------------------------------


def text(tag, text_string):
    from tensorboard.plugins.text.metadata import create_summary_metadata

    metadata = create_summary_metadata(display_name=None, description=None)
    tensor = TensorProto(
        dtype="DT_STRING",
        string_val=[text_string.encode("utf-8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    return Summary(
        value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)]
    )


def _hparam_value(name, v):
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, (bool, int, float, str)):
        return v
    if v is None:
        return "None"
    raise ValueError(
        f"add_hparams: value of hyperparameter {name!r} should be int, float, str, bool "
        f"or an ember tensor, got {type(v).__name__}"
    )


def _plugin_summary(tag, plugin_data):
    from tensorboard.plugins.hparams import metadata

    return Summary(
        value=[
            Summary.Value(
                tag=tag,
                metadata=metadata.create_summary_metadata(plugin_data),
                tensor=metadata.NULL_TENSOR,  # as tensorboard's own hparams summaries
            )
        ]
    )


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The three summaries the HParams plugin reads: experiment, session start,
    session end (built from its protos; tensorboard's helper module needs TensorFlow)."""
    import time

    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionaries")
    discrete = hparam_domain_discrete or {}
    start = plugin_data_pb2.SessionStartInfo(start_time_secs=time.time())
    infos = []
    for k, raw in hparam_dict.items():
        v = _hparam_value(k, raw)
        info = api_pb2.HParamInfo(name=k)
        if isinstance(v, bool):
            info.type = api_pb2.DATA_TYPE_BOOL
            start.hparams[k].bool_value = v
        elif isinstance(v, (int, float)):
            info.type = api_pb2.DATA_TYPE_FLOAT64
            start.hparams[k].number_value = v
        else:
            info.type = api_pb2.DATA_TYPE_STRING
            start.hparams[k].string_value = v
        if discrete.get(k):
            info.domain_discrete.extend(discrete[k])
        infos.append(info)
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS, end_time_secs=time.time())
    data = plugin_data_pb2.HParamsPluginData
    return (
        _plugin_summary(metadata.EXPERIMENT_TAG, data(experiment=experiment)),
        _plugin_summary(metadata.SESSION_START_INFO_TAG, data(session_start_info=start)),
        _plugin_summary(metadata.SESSION_END_INFO_TAG, data(session_end_info=end)),
    )
