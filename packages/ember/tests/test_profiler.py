"""ember.profiler / ember.autograd.profiler: what a trace records (op counts of
known programs, shapes, nesting, self times, memory, backward ops, stacks),
schedules (which steps are recorded, when on_trace_ready runs), the table,
Chrome trace export; parity with PyTorch for schedules, table columns and errors."""

import json
import os
import warnings

import numpy as np
import pytest

import ember
import ember_core
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


def _counts(prof):
    return {avg.key: avg.count for avg in prof.key_averages()}


def test_records_each_op_call_of_a_known_program():
    a = ember.ones(3)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            b = a + a
            b = b * 2
        ember.matmul(ember.ones(2, 3), ember.ones(3, 4))
    counts = _counts(prof)
    assert counts["aten::add"] == 3
    assert counts["aten::mul"] == 3
    assert counts["aten::matmul"] == 1
    assert counts["aten::ones"] == 2
    assert len(prof.events()) == sum(counts.values())


def test_handler_only_while_recording_and_ranges_free_without_profiler():
    before = ember_core._base.dispatch.handlers()
    with profile() as prof:
        assert len(ember_core._base.dispatch.handlers()) == len(before) + 1
    assert ember_core._base.dispatch.handlers() == before
    # no profiler: a range records nothing and leaves nothing behind
    with record_function("idle") as rf:
        ember.ones(2) + 1
    assert rf._event is None
    assert "idle" not in _counts(prof)


def test_record_shapes_and_group_by_input_shape():
    with profile(record_shapes=True) as prof:
        ember.matmul(ember.ones(4, 3), ember.ones(3, 2))
        ember.matmul(ember.ones(4, 3), ember.ones(3, 2))
        ember.matmul(ember.ones(5, 3), ember.ones(3, 1))
    mm = [e for e in prof.events() if e.name == "aten::matmul"]
    assert [e.input_shapes for e in mm] == [[[4, 3], [3, 2]]] * 2 + [[[5, 3], [3, 1]]]
    grouped = [a for a in prof.key_averages(group_by_input_shape=True) if a.key == "aten::matmul"]
    assert sorted((a.count, str(a.input_shapes)) for a in grouped) == [
        (1, "[[5, 3], [3, 1]]"),
        (2, "[[4, 3], [3, 2]]"),
    ]
    # without grouping the shapes are dropped from the averages (PyTorch's rule)
    (flat,) = [a for a in prof.key_averages() if a.key == "aten::matmul"]
    assert flat.count == 3 and flat.input_shapes == ""


def test_ranges_nest_and_self_time_excludes_children():
    with profile() as prof, record_function("outer"):
        with record_function("inner"):
            ember.ones(8) + 1
        ember.ones(8) * 2
    events = {e.name: e for e in prof.events()}
    outer, inner = events["outer"], events["inner"]
    assert inner.cpu_parent is outer
    assert events["aten::add"].cpu_parent is inner
    assert events["aten::mul"].cpu_parent is outer
    assert {c.name for c in outer.cpu_children} == {"inner", "aten::ones", "aten::mul"}
    for e in prof.events():
        children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - children)
        assert e.time_range.start <= e.time_range.end
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end <= e.time_range.end
    # every op is inside outer, so outer's total covers the whole recorded time
    assert outer.cpu_time_total == pytest.approx(prof.key_averages().self_cpu_time_total, rel=1e-9)


def test_record_function_as_decorator():
    @record_function("my_fn")
    def fn(x):
        return x * 3

    with profile() as prof:
        fn(ember.ones(2))
        fn(ember.ones(2))
    assert _counts(prof)["my_fn"] == 2
    assert all(e.cpu_parent.name == "my_fn" for e in prof.events() if e.name == "aten::mul")


def test_backward_ops_are_recorded():
    x = ember.ones(4, 3, requires_grad=True)
    w = ember.ones(3, 2, requires_grad=True)
    with profile() as prof:
        with record_function("forward"):
            y = ember.matmul(x, w).sum()
        y.backward()
    counts = _counts(prof)
    # forward matmul + one matmul per input gradient in backward
    assert counts["aten::matmul"] == 3
    backward = [e for e in prof.events() if e.name == "aten::matmul" and e.cpu_parent is None]
    assert len(backward) == 2
    np.testing.assert_allclose(x.grad.numpy(), np.full((4, 3), 2.0))


def test_profile_memory_counts_what_the_op_allocated():
    with profile(profile_memory=True) as prof:
        keep = ember.empty(1000, dtype=ember.float32)
        with record_function("scratch"):
            tmp = ember.empty(250, dtype=ember.float64)
            del tmp
    events = {e.name: e for e in prof.events()}
    assert events["aten::empty"].cpu_memory_usage in (4000, 2000)
    empties = sorted(e.cpu_memory_usage for e in prof.events() if e.name == "aten::empty")
    assert empties == [2000, 4000]
    # the range allocated 2000 bytes and freed them again: net zero, self -2000
    assert events["scratch"].cpu_memory_usage == 0
    assert events["scratch"].self_cpu_memory_usage == -2000
    table = prof.key_averages().table()
    assert (
        "CPU Mem" in table and "Self CPU Mem" in table and "5.86 KB" in table
    )  # the two empties: 6000 B
    del keep


def test_with_stack_records_the_callers_line():
    with profile(with_stack=True) as prof:
        ember.ones(2) + 1
    (add,) = [e for e in prof.events() if e.name == "aten::add"]
    assert add.stack and os.path.basename(__file__) in add.stack[0]
    assert "test_with_stack_records_the_callers_line" in add.stack[0]
    assert not any("ember_core" in entry for entry in add.stack)
    table = prof.key_averages(group_by_stack_n=1).table()
    assert "Source Location" in table


def _steps(prof, n, work):
    for i in range(n):
        work(i)
        prof.step()


def test_schedule_records_the_active_steps_and_calls_on_trace_ready():
    ready = []

    def on_ready(p):
        ready.append((p.step_num, _counts(p).get("aten::add", 0), _counts(p).get("ProfilerStep*")))

    def work(i):
        a = ember.ones(1)
        for _ in range(i + 1):  # step i runs i + 1 adds
            a = a + 1

    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    with profile(schedule=sched, on_trace_ready=on_ready) as prof:
        _steps(prof, 10, work)
    # cycles: steps 0-3 (record 2, 3) and 4-7 (record 6, 7); nothing after repeat=2
    assert ready == [(4, 3 + 4, 2), (8, 7 + 8, 2)]


def test_schedule_skip_first_and_trailing_partial_cycle():
    ready = []
    with profile(
        schedule=schedule(wait=0, warmup=1, active=3, skip_first=2),
        on_trace_ready=lambda p: ready.append((p.step_num, _counts(p).get("ProfilerStep*"))),
    ) as prof:
        _steps(prof, 7, lambda i: ember.ones(1))
    # steps 0,1 skipped; 2 warmup; 3,4,5 recorded (ready at step 6); 6 warmup; the
    # step 7 range opened by the last step() is recording when the block exits
    assert ready == [(6, 3), (7, 1)]


def test_no_schedule_records_everything_and_calls_on_trace_ready_once():
    ready = []
    with profile(on_trace_ready=ready.append) as prof:
        for _ in range(3):
            ember.ones(1)
            prof.step()
    assert ready == [prof]
    assert _counts(prof) == {"aten::ones": 3}  # no ProfilerStep ranges without a schedule


def test_table_layout():
    with profile(record_shapes=True) as prof, record_function("fwd"):
        ember.matmul(ember.ones(4, 3), ember.ones(3, 2))
    table = prof.key_averages(group_by_input_shape=True).table(
        sort_by="cpu_time_total", row_limit=2
    )
    lines = table.splitlines()
    assert lines[0] == lines[2] == lines[-2]
    assert lines[1].split() == [
        "Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total",
        "CPU", "time", "avg", "#", "of", "Calls", "Input", "Shapes",
    ]  # fmt: skip
    rows = lines[3:-2]
    assert len(rows) == 2 and rows[0].split()[0] == "fwd"  # the range holds everything
    assert rows[0].split()[3] == "100.00%"
    assert lines[-1].startswith("Self CPU time total: ")
    for sort_by in ("self_cpu_time_total", "cpu_memory_usage", "count", "cpu_time"):
        assert prof.key_averages().table(sort_by=sort_by)


def test_export_chrome_trace_is_valid_json(tmp_path):
    with profile(record_shapes=True) as prof, record_function("step"):
        ember.ones(2, 2) + 1
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {e["name"] for e in spans} == {"step", "aten::ones", "aten::add"}
    by_name = {e["name"]: e for e in spans}
    assert by_name["step"]["cat"] == "user_annotation" and by_name["aten::add"]["cat"] == "cpu_op"
    assert by_name["aten::add"]["args"]["Input Dims"] == [
        [2, 2],
        [],
        [],
    ]  # input, other, alpha (as aten::add)
    step, add = by_name["step"], by_name["aten::add"]
    assert step["ts"] <= add["ts"] and add["ts"] + add["dur"] <= step["ts"] + step["dur"] + 1e-3


def test_tensorboard_trace_handler_writes_one_file_per_cycle(tmp_path):
    with profile(
        schedule=schedule(wait=0, warmup=1, active=1),
        on_trace_ready=tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0"),
    ) as prof:
        _steps(prof, 4, lambda i: ember.ones(1))
    files = sorted(os.listdir(tmp_path / "tb"))
    assert len(files) == 2 and all(
        f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files
    )
    for f in files:
        json.loads((tmp_path / "tb" / f).read_text())


def test_legacy_autograd_profiler():
    import ember.autograd.profiler as legacy

    with legacy.profile(record_shapes=True) as prof:
        ember.ones(3) * 2
    assert {e.key for e in prof.key_averages()} == {"aten::ones", "aten::mul"}
    assert "aten::mul" in prof.table()
    assert prof.self_cpu_time_total > 0
    with pytest.raises(RuntimeError, match="didn't finish"):
        legacy.profile().table()
    assert ember.autograd.profiler.record_function is record_function


def test_one_profiler_at_a_time():
    with profile(), pytest.raises(RuntimeError, match="already running"), profile():
        pass
    with profile() as prof:  # the failed one left nothing registered
        ember.ones(1)
    assert _counts(prof) == {"aten::ones": 1}


def test_schedule_without_warmup_warns():
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)


@pytest.mark.parity
def test_schedule_actions_match_torch():
    torch = pytest.importorskip("torch")
    from torch import profiler as tp

    configs = [
        dict(wait=1, warmup=1, active=2),
        dict(wait=1, warmup=1, active=2, repeat=2),
        dict(wait=2, warmup=1, active=1, skip_first=3),
        dict(wait=5, warmup=2, active=3, repeat=1, skip_first=2, skip_first_wait=1),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cfg in configs:
            mine, theirs = schedule(**cfg), tp.schedule(**cfg)
            assert [mine(s).name for s in range(30)] == [theirs(s).name for s in range(30)], cfg
    assert [a.name for a in ProfilerAction] == [
        a.name for a in tp.ProfilerAction if a.name in ProfilerAction.__members__
    ]
    for bad in (dict(wait=-1, warmup=1, active=1), dict(wait=1, warmup=1, active=0)):
        with pytest.raises(AssertionError) as mine_err:
            schedule(**bad)
        with pytest.raises(AssertionError) as torch_err:
            tp.schedule(**bad)
        assert str(mine_err.value) == str(torch_err.value)
    with pytest.raises(AssertionError, match="Step must be non-negative"):
        schedule(wait=1, warmup=1, active=1)(-1)
    del torch


@pytest.mark.parity
def test_steps_recorded_match_torch():
    """The same scheduled loop under both profilers: on_trace_ready at the same
    steps, with the same number of ProfilerStep ranges and user ranges."""
    torch = pytest.importorskip("torch")
    from torch import profiler as tp

    def run(lib, prof_mod):
        seen = []

        def ready(p):
            keys = {a.key: a.count for a in p.key_averages()}
            seen.append((p.step_num, keys.get("ProfilerStep*"), keys.get("work")))

        with prof_mod.profile(
            activities=[prof_mod.ProfilerActivity.CPU],
            schedule=prof_mod.schedule(wait=1, warmup=1, active=2, repeat=2),
            on_trace_ready=ready,
        ) as p:
            for _ in range(9):
                with prof_mod.record_function("work"):
                    lib.ones(2) + 1
                p.step()
        return seen

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(ember, ember.profiler) == run(torch, tp)


@pytest.mark.parity
def test_table_header_matches_torch():
    torch = pytest.importorskip("torch")
    from torch import profiler as tp

    def header(lib, prof_mod, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with prof_mod.profile(**kw) as p, prof_mod.record_function("a_range_name"):
                lib.ones(2) + 1
        lines = (
            p.key_averages(group_by_input_shape=kw.get("record_shapes", False)).table().splitlines()
        )
        return lines[1].split(), lines[0].count("-  ")

    for kw in ({}, {"profile_memory": True}, {"record_shapes": True}):
        assert header(ember, ember.profiler, **kw) == header(torch, tp, **kw), kw
