"""ember.profiler (torch.profiler): profile training steps with a schedule.

>>> from ember.profiler import profile, schedule, ProfilerActivity, record_function
>>> with profile(activities=[ProfilerActivity.CPU],
...              schedule=schedule(wait=1, warmup=1, active=2),
...              on_trace_ready=lambda p: print(p.key_averages().table())) as prof:
...     for batch in loader:
...         train_step(batch)
...         prof.step()

Each cycle of the schedule records into a fresh trace (see Note [Profiler] in
ember/_profiler.py for what is recorded); ``on_trace_ready`` runs at the end of
each cycle, as in PyTorch, and ``.step()`` brackets each step in a
``ProfilerStep#N`` range.  ember is CPU only: CUDA activities record nothing.
"""

import enum
import os
import socket
import time
import warnings

from ember import _profiler as _prof
from ember._profiler import record_function
from ember._profiler_events import EventList, FunctionEvent, FunctionEventAvg

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"


class ProfilerAction(enum.Enum):
    """What the profiler does during a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities():
    """The activities this build can record: the CPU only."""
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> ProfilerAction function: skip ``skip_first`` steps, then cycle
    through ``wait`` idle, ``warmup`` and ``active`` recorded steps, ``repeat``
    times (0: until profiling ends); the last active step of a cycle is
    RECORD_AND_SAVE.  ``skip_first_wait`` drops the first cycle's wait."""

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        if mod_step < num_steps - 1:
            return ProfilerAction.RECORD
        return ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), "
            f"repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    return schedule_fn


def _default_schedule_fn(_step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` as
    ``<worker>.<time_ns>.pt.trace.json`` (gzipped with ``use_gzip``)."""

    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        path = os.path.join(dir_name, file_name)
        if use_gzip:
            import gzip
            import shutil

            prof.export_chrome_trace(path)
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
        else:
            prof.export_chrome_trace(path)

    return handler_fn


class _KinetoProfile:
    """The trace half of ``profile``: one autograd-profiler trace at a time."""

    def __init__(
        self,
        *,
        activities=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events=False,
        custom_trace_id_callback=None,
        post_processing_timeout_s=None,
    ):
        self.activities = set(activities) if activities else supported_activities()
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.profiler = None
        self.use_device = None
        self._metadata = {}

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is not None and not self.acc_events:
            _warn_once(
                "Warning: Profiler clears events at the end of each cycle. "
                "Only events from the current cycle will be reported. "
                "To keep events across cycles, set acc_events=True."
            )
        if self.profiler is None or not self.acc_events:
            self.profiler = _prof.profile(
                use_cpu=ProfilerActivity.CPU in self.activities,
                record_shapes=self.record_shapes,
                with_flops=self.with_flops,
                profile_memory=self.profile_memory,
                with_stack=self.with_stack,
                with_modules=self.with_modules,
                use_kineto=True,
                acc_events=self.acc_events,
            )
        self.profiler._prepare_trace()

    def start_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start_trace()

    def stop_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def _need(self, what):
        if self.profiler is None:
            raise AssertionError(f"Profiler must be initialized before {what}")

    def export_chrome_trace(self, path, use_python_export=False):
        """Write the last finished trace as Chrome trace JSON (``.gz``: gzipped)."""
        self._need("exporting chrome trace")
        if path.endswith(".gz"):
            import gzip

            tmp = path[:-3] + ".tmp"
            self.profiler.export_chrome_trace(tmp)
            with open(tmp, "rb") as src, gzip.open(path, "wb") as dst:
                dst.write(src.read())
            os.remove(tmp)
            return None
        return self.profiler.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._need("exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def key_averages(
        self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False
    ):
        """Events summed per name (and input shapes / top stack frames when asked)."""
        self._need("getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n)

    def events(self):
        """The unaggregated events of the last finished trace."""
        self._need("accessing events")
        return self.profiler.function_events

    def add_metadata(self, key, value):
        self._metadata[key] = '"' + value.replace('"', '\\"') + '"'

    def add_metadata_json(self, key, value):
        self._metadata[key] = value


_warned = set()


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, stacklevel=3)


class profile(_KinetoProfile):
    """torch.profiler.profile: a context manager (or start()/stop()) that
    records ops and ``record_function`` ranges following ``schedule`` and
    calls ``on_trace_ready(prof)`` at the end of each recorded cycle."""

    def __init__(
        self,
        *,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events=False,
        use_cuda=None,
        custom_trace_id_callback=None,
        post_processing_timeout_s=None,
    ):
        activities_set = set()
        if activities is not None:
            for item in activities:
                if isinstance(item, ProfilerActivity):
                    activities_set.add(item)
                elif isinstance(item, dict):
                    activities_set.update(item.keys())
        else:
            activities_set = supported_activities()
        if use_cuda is not None:
            warnings.warn(
                "`use_cuda` is deprecated, use `activities` argument instead",
                FutureWarning,
                stacklevel=2,
            )
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            else:
                activities_set.discard(ProfilerActivity.CUDA)
        if not activities_set:
            raise AssertionError("No valid profiler activities found")
        super().__init__(
            activities=activities_set,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
            with_flops=with_flops,
            with_modules=with_modules,
            experimental_config=experimental_config,
            execution_trace_observer=execution_trace_observer,
            acc_events=acc_events,
            custom_trace_id_callback=custom_trace_id_callback,
        )
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self.schedule(self.step_num)
        self._check_action(self.current_action)

        A = ProfilerAction
        prepare, start, stop, ready = (
            self.prepare_trace,
            self.start_trace,
            self.stop_trace,
            self._trace_ready,
        )

        def warn(message):
            return lambda: warnings.warn(message, stacklevel=4)

        # What each (previous action, next action) transition does, as in PyTorch.
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [prepare],
            (A.NONE, A.RECORD): [prepare, start],
            (A.NONE, A.RECORD_AND_SAVE): [prepare, start],
            (A.WARMUP, A.NONE): [warn("Incorrect schedule: WARMUP followed by NONE"), start, stop],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [start],
            (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [warn("Incorrect schedule: RECORD followed by NONE"), stop],
            (A.RECORD, A.WARMUP): [warn("Incorrect schedule: RECORD followed by WARMUP"), stop],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [stop, ready, prepare],
            (A.RECORD_AND_SAVE, A.RECORD): [stop, ready, prepare, start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [stop, ready, prepare, start],
            (A.WARMUP, None): [start, stop],
            (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready],
        }

    @staticmethod
    def _check_action(action):
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError(
                "ProfilerAction.DEVICE_STOPPED is set internally by the "
                "profiler and must not be returned by a user-provided schedule"
            )

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """Signal that the next step starts (closes ProfilerStep#N, opens N+1)."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        next_action = self.schedule(self.step_num + 1)
        self._check_action(next_action)
        self.step_num += 1
        self.current_action = next_action
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), ()):
            action()
