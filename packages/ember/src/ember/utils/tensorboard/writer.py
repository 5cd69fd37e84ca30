"""SummaryWriter: what a training script logs, written as TensorBoard event
files under ``log_dir`` (default ``runs/<date>_<host><comment>``)."""

import os
import socket
import time
from datetime import datetime

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ember.utils.tensorboard import summary as _summary

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """One event file in ``log_dir``: Events and Summaries, queued and written
    by tensorboard's EventFileWriter."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        log_dir = str(log_dir)
        self.event_writer = EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _step(global_step):
    if global_step is None:
        return None
    if hasattr(global_step, "item"):
        global_step = global_step.item()
    return int(global_step)


class SummaryWriter:
    """Write scalars, histograms, images, text, figures, hyperparameters and
    embeddings for TensorBoard.

    >>> writer = SummaryWriter("runs/exp1")
    >>> for step in range(100):
    ...     writer.add_scalar("loss/train", loss.item(), step)
    >>> writer.close()
    """

    def __init__(
        self,
        log_dir=None,
        comment="",
        purge_step=None,
        max_queue=10,
        flush_secs=120,
        filename_suffix="",
    ):
        if not log_dir:
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = None
        self.all_writers = None
        self._get_file_writer()

    def _get_file_writer(self):
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(
                self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix
            )
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # Steps at or after purge_step written by an earlier run are hidden.
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(
                    Event(step=step, session_log=SessionLog(status=SessionLog.START))
                )
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def _write(self, summary, global_step, walltime):
        self._get_file_writer().add_summary(summary, _step(global_step), walltime)

    def add_scalar(
        self,
        tag,
        scalar_value,
        global_step=None,
        walltime=None,
        new_style=False,
        double_precision=False,
    ):
        """Log one number under ``tag`` at ``global_step``."""
        self._write(
            _summary.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime
        )

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several numbers on one chart: each key gets its own run directory
        ``<log_dir>/<main_tag>_<key>`` with the scalar under ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(logdir, main_tag.replace("/", "_") + "_" + tag)
            writer = self.all_writers.get(path)
            if writer is None:
                writer = FileWriter(path, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[path] = writer
            writer.add_summary(_summary.scalar(main_tag, value), _step(global_step), walltime)

    def add_histogram(
        self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None
    ):
        """Log the distribution of ``values``; ``bins`` is 'tensorflow' (PyTorch's
        default buckets), a NumPy bins spec or the edges."""
        self._write(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(
        self,
        tag,
        min,
        max,
        num,
        sum,
        sum_squares,
        bucket_limits,
        bucket_counts,
        global_step=None,
        walltime=None,
    ):
        from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary

        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("add_histogram_raw: len(bucket_limits) != len(bucket_counts)")
        hist = HistogramProto(
            min=min,
            max=max,
            num=num,
            sum=sum,
            sum_squares=sum_squares,
            bucket_limit=list(bucket_limits),
            bucket=list(bucket_counts),
        )
        self._write(Summary(value=[Summary.Value(tag=tag, histo=hist)]), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log an image: float values in [0, 1] or uint8 pixels, laid out as ``dataformats``."""
        self._write(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Log a batch of images, tiled into one grid image (8 per row)."""
        self._write(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """Log a matplotlib figure (or a list of them, as a grid) as an image."""
        if isinstance(figure, list):
            images = np.stack([_summary.figure_to_chw(f, close) for f in figure])
            self.add_images(tag, images, global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, _summary.figure_to_chw(figure, close), global_step, walltime, "CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log a (markdown) string; TensorBoard shows it under ``<tag>/text_summary``."""
        self._write(_summary.text(tag, text_string), global_step, walltime)

    def add_hparams(
        self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None
    ):
        """Log one trial's hyperparameters and final metrics, in a run of its own
        (``<log_dir>/<run_name or time>``) as PyTorch does."""
        exp, start, end = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            fw = w._get_file_writer()
            fw.add_summary(exp, global_step)
            fw.add_summary(start, global_step)
            fw.add_summary(end, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_embedding(
        self,
        mat,
        metadata=None,
        label_img=None,
        global_step=None,
        tag="default",
        metadata_header=None,
    ):
        """Write vectors (N x D) for TensorBoard's projector: tensors.tsv,
        metadata.tsv and sprite.png under ``<log_dir>/<step>/<tag>``, and an entry in
        projector_config.pbtxt."""
        mat = _summary.to_numpy(mat)
        if mat.ndim != 2:
            raise ValueError(f"add_embedding: mat should be 2-D (N x D), got shape {mat.shape}")
        step = 0 if global_step is None else _step(global_step)
        subdir = f"{str(step).zfill(5)}/{_safe(tag)}"
        root = self._get_file_writer().get_logdir()
        save_path = os.path.join(root, subdir)
        os.makedirs(save_path, exist_ok=True)
        np.savetxt(os.path.join(save_path, "tensors.tsv"), mat, delimiter="\t", fmt="%g")
        entry = [f'  tensor_name: "{tag}:{str(step).zfill(5)}"']
        if metadata is not None:
            if len(metadata) != mat.shape[0]:
                raise ValueError(
                    f"add_embedding: {len(metadata)} metadata rows for {mat.shape[0]} vectors"
                )
            with open(os.path.join(save_path, "metadata.tsv"), "w") as f:
                if metadata_header is not None:
                    f.write("\t".join(str(h) for h in metadata_header) + "\n")
                for row in metadata:
                    if isinstance(row, (list, tuple)):
                        f.write("\t".join(str(x) for x in row) + "\n")
                    else:
                        f.write(f"{row}\n")
            entry.append(f'  metadata_path: "{subdir}/metadata.tsv"')
        if label_img is not None:
            imgs = _summary.to_numpy(label_img)
            if imgs.ndim != 4 or imgs.shape[0] != mat.shape[0]:
                raise ValueError(
                    f"add_embedding: label_img should be N x C x H x W, got {imgs.shape}"
                )
            n, _, h, w = imgs.shape
            side = int(np.ceil(np.sqrt(n)))
            padded = np.zeros((side * side,) + imgs.shape[1:], dtype=imgs.dtype)
            padded[:n] = imgs
            grid = _summary._grid(padded, ncols=side).transpose(1, 2, 0)
            scale = 1 if imgs.dtype == np.uint8 else 255
            pixels = (grid.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
            with open(os.path.join(save_path, "sprite.png"), "wb") as f:
                f.write(_summary.encode_png(np.ascontiguousarray(pixels)))
            entry.append(
                f'  sprite {{\n    image_path: "{subdir}/sprite.png"\n'
                f"    single_image_dim: {w}\n    single_image_dim: {h}\n  }}"
            )
        entry.append(f'  tensor_path: "{subdir}/tensors.tsv"')
        with open(os.path.join(root, "projector_config.pbtxt"), "a") as f:
            f.write("embeddings {\n" + "\n".join(entry) + "\n}\n")

    def flush(self):
        """Write everything queued so far to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self):
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _safe(tag):
    return tag.replace("/", "%2F").replace("\\", "%5C")
