"""ember.utils.benchmark (torch.utils.benchmark): time a statement with ``Timer``,
read the result as a ``Measurement`` (median, IQR, warnings), print several side by
side with ``Compare``.

>>> t = Timer("a @ b", globals={"a": x, "b": y}, label="matmul", description="ember")
>>> m = t.blocked_autorange(min_run_time=0.2)
>>> m.median  # seconds per run

The statement runs under ``num_threads`` ember threads (default 1, as PyTorch's
Timer) with ``timeit``'s machinery; callgrind collection is not supported.
"""

import dataclasses
import enum
import math
import statistics
import textwrap
import timeit

import ember_core as ec

__all__ = ["Compare", "Language", "Measurement", "TaskSpec", "Timer"]


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels that group results."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self):
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"


def _format_time(seconds, figures=None):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.2f} {unit}"
    return f"{seconds} s"


class Measurement:
    """The times of one statement: ``raw_times`` (seconds per block of
    ``number_per_run`` runs), read per run as ``times``, ``mean``, ``median``, ``iqr``."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name):  # label, sub_label, description, stmt, ... from the spec
        if name in {f.name for f in dataclasses.fields(TaskSpec)} | {"title"}:
            return getattr(self.task_spec, name)
        raise AttributeError(name)

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self):
        return statistics.fmean(self.times)

    @property
    def median(self):
        return statistics.median(self.times)

    def _quartiles(self):
        times = sorted(self.times)
        if len(times) < 2:
            return times[0], times[0]
        q = statistics.quantiles(times, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def iqr(self):
        low, high = self._quartiles()
        return high - low

    @property
    def significant_figures(self):
        """Digits of the median the spread supports (as PyTorch estimates them)."""
        if len(self.times) < 2:
            return 1
        n = len(self.times)
        spread = self.iqr / 1.349 / math.sqrt(n)  # the standard error of the median, roughly
        if spread <= 0:
            return 4
        return max(1, min(4, int(math.log10(self.median / spread))))

    @property
    def has_warnings(self):
        return bool(self._warnings())

    def _warnings(self):
        out = []
        if len(self.times) > 1 and self.median > 0 and self.iqr / self.median > 0.1:
            out.append(
                f"WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the "
                "median measurement.\n           This suggests significant environmental "
                "influence."
            )
        return out

    def __repr__(self):
        lines = [f"<ember.utils.benchmark.Measurement object at {hex(id(self))}>"]
        lines.append(self.task_spec.title)
        if self.task_spec.description:
            lines.append(self.task_spec.description)
        if self.task_spec.setup not in ("", "pass"):
            lines.append("setup:\n" + textwrap.indent(self.task_spec.setup, "  "))
        threads = self.task_spec.num_threads
        thread_word = "thread" if threads == 1 else "threads"
        if len(self.times) > 1:
            low, high = self._quartiles()
            lines.append(f"  Median: {_format_time(self.median)}")
            lines.append(
                f"  IQR:    {_format_time(self.iqr)} ({_format_time(low)} to {_format_time(high)})"
            )
            lines.append(
                f"  {len(self.times)} measurements, {self.number_per_run} runs per measurement, "
                f"{threads} {thread_word}"
            )
        else:
            lines.append(f"  {_format_time(self.median)}")
            lines.append(f"  1 measurement, {self.number_per_run} runs , {threads} {thread_word}")
        lines += ["  " + w for w in self._warnings()]
        return "\n".join(lines)


class Timer:
    """Times ``stmt`` (after ``setup``) in ``globals``, under ``num_threads`` threads."""

    def __init__(
        self,
        stmt="pass",
        setup="pass",
        global_setup="",
        timer=timeit.default_timer,
        globals=None,
        label=None,
        sub_label=None,
        description=None,
        env=None,
        num_threads=1,
        language=Language.PYTHON,
    ):
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError("ember.utils.benchmark.Timer times Python statements only")
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise ValueError("Timer: stmt and setup must be strings of Python code")
        self._task_spec = TaskSpec(
            stmt=textwrap.dedent(stmt).strip() or "pass",
            setup=textwrap.dedent(setup).strip() or "pass",
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=int(num_threads),
        )
        names = dict(globals or {})
        names.setdefault("torch", __import__("ember"))
        self._timer = timeit.Timer(
            stmt=self._task_spec.stmt, setup=self._task_spec.setup, timer=timer, globals=names
        )

    def _run(self, number):
        before = ec.get_num_threads()
        ec.set_num_threads(self._task_spec.num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            ec.set_num_threads(before)

    def timeit(self, number=1000000):
        """One measurement of ``number`` runs (after one warm-up run)."""
        self._run(1)
        return Measurement(number, [self._run(number)], self._task_spec)

    def _estimate_block(self, min_block_time):
        """Runs per block (a power of ten) so that one block takes ``min_block_time``."""
        number = 1
        while True:
            elapsed = self._run(number)
            if elapsed >= min_block_time or number >= 10**9:
                return number
            number *= 10

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of a fixed number of runs until ``min_run_time`` seconds have passed."""
        number = self._estimate_block(max(min_run_time / 1000, 2e-4))
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._run(number)
            total += t
            times.append(t)
            if callback is not None:
                callback(number, t)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(
        self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None
    ):
        """Blocks until the IQR is within ``threshold`` of the median (and at least
        ``min_run_time``), or ``max_run_time`` has passed."""
        number = self._estimate_block(max(min_run_time / 100, 2e-4))
        times, total = [], 0.0
        while total < max_run_time:
            t = self._run(number)
            total += t
            times.append(t)
            if callback is not None:
                callback(number, t)
            if len(times) > 3 and total >= min_run_time:
                m = Measurement(number, times, self._task_spec)
                if m.iqr / m.median < threshold:
                    return m
        return Measurement(number, times, self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("Timer.repeat: use timeit or blocked_autorange, as PyTorch")


class Compare:
    """A table of measurements: one table per label, a row per (sub_label, threads), a
    column per description."""

    def __init__(self, results):
        self._results = list(results)
        self._colorize = False
        self._trim_significant_figures = False

    def colorize(self, rowwise=False):
        self._colorize = True

    def trim_significant_figures(self):
        self._trim_significant_figures = True

    def highlight_warnings(self):
        pass

    def extend_results(self, results):
        self._results.extend(results)

    def __str__(self):
        blocks = []
        labels = []
        for m in self._results:
            if m.task_spec.label not in labels:
                labels.append(m.task_spec.label)
        for label in labels:
            group = [m for m in self._results if m.task_spec.label == label]
            blocks.append(self._table(label, group))
        return "\n".join(blocks)

    def _table(self, label, group):
        columns = []
        rows = []
        for m in group:
            if m.task_spec.description not in columns:
                columns.append(m.task_spec.description)
            key = (m.task_spec.num_threads, m.task_spec.sub_label or "")
            if key not in rows:
                rows.append(key)
        smallest = min(m.median for m in group)
        unit, scale = next(
            (u, s)
            for u, s in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
            if smallest >= s or u == "ns"
        )
        cell = {
            ((m.task_spec.num_threads, m.task_spec.sub_label or ""), m.task_spec.description): m
            for m in group
        }
        names = [c or "" for c in columns]
        row_names = [r[1] for r in rows]
        width0 = max([len(n) for n in row_names] + [1])
        widths = [max(len(n), 6) for n in names]
        header = " " * (width0 + 2) + "|" + "|".join(f"  {n:>{w}}  " for n, w in zip(names, widths))
        title = f" {label} " if label else ""
        lines = [f"[{title.center(len(header) - 2, '-')}]", header]
        threads_seen = None
        for r in rows:
            if r[0] != threads_seen:
                threads_seen = r[0]
                lines.append(f"{r[0]} threads: " + "-" * max(len(header) - 12, 4))
            values = []
            for c, w in zip(columns, widths):
                m = cell.get((r, c))
                values.append(f"  {'' if m is None else f'{m.median / scale:.1f}':>{w}}  ")
            lines.append(f"  {r[1]:>{width0}}|" + "|".join(values))
        unit_name = {
            "s": "seconds (s)",
            "ms": "milliseconds (ms)",
            "us": "microseconds (us)",
            "ns": "nanoseconds (ns)",
        }[unit]
        lines += ["", f"Times are in {unit_name}.", ""]
        return "\n".join(lines)

    def print(self):
        print(str(self))
