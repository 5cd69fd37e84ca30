"""ember.utils.benchmark: Timer runs the statement, Measurement's statistics, Compare's
table."""

import pytest

import ember
from ember.utils import benchmark


def test_timer_runs_the_statement_the_number_of_times_asked():
    calls = []
    t = benchmark.Timer("f()", globals={"f": lambda: calls.append(1)}, label="calls")
    m = t.timeit(25)
    assert len(calls) == 26  # one warm-up run, then the measured block
    assert m.number_per_run == 25 and len(m.times) == 1 and m.median > 0
    assert "calls" in repr(m) and "1 measurement, 25 runs" in repr(m)


def test_autoranges_measure_blocks_and_keep_the_thread_count():
    before = ember.get_num_threads()
    x = ember.ones(4)
    seen = []
    t = benchmark.Timer(
        "seen.append(ember.get_num_threads()); x + 1",
        globals={"x": x, "seen": seen, "ember": ember},
        num_threads=1,
    )
    m = t.blocked_autorange(min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and set(seen) == {1}
    assert ember.get_num_threads() == before
    a = t.adaptive_autorange(threshold=10.0, min_run_time=0.01)
    assert len(a.times) >= 4 and a.iqr >= 0


def test_measurement_statistics_from_known_times():
    spec = benchmark.TaskSpec(stmt="x", setup="pass", label="L", sub_label="s", description="d")
    m = benchmark.Measurement(10, [1.0, 2.0, 3.0, 4.0, 10.0], spec)
    assert m.times == [0.1, 0.2, 0.3, 0.4, 1.0]
    assert m.median == pytest.approx(0.3) and m.mean == pytest.approx(0.4)
    assert m.iqr == pytest.approx(0.2) and m.has_warnings
    assert m.title == "L: s" and m.description == "d"
    assert "Median: 300.00 ms" in repr(m) and "5 measurements, 10 runs per measurement" in repr(m)


def test_compare_tables_by_label_row_and_column():
    spec = dict(stmt="x", setup="pass", label="matmul")
    rows = [
        benchmark.Measurement(
            1, [2e-6], benchmark.TaskSpec(**spec, sub_label="64", description="ember")
        ),
        benchmark.Measurement(
            1, [3e-6], benchmark.TaskSpec(**spec, sub_label="64", description="numpy")
        ),
        benchmark.Measurement(
            1, [8e-6], benchmark.TaskSpec(**spec, sub_label="128", description="ember")
        ),
    ]
    table = str(benchmark.Compare(rows))
    assert "matmul" in table and "ember" in table and "numpy" in table
    assert "2.0" in table and "3.0" in table and "8.0" in table
    assert "microseconds" in table


def test_bad_statements_are_refused():
    with pytest.raises(ValueError, match="Python"):
        benchmark.Timer("x", language=benchmark.Language.CPP)
    with pytest.raises(ValueError, match="strings"):
        benchmark.Timer(lambda: None)
