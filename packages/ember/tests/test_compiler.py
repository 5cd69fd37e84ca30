"""ember.compiler and ember._dynamo: disable, is_compiling, reset, the cache size."""

import warnings

import pytest

import ember
from ember import _compile


def _graphs(fn):
    return len(fn._entries)


def _step(x):
    return (x * 2 + 1).sum()


def test_is_compiling_is_true_only_while_a_capture_records():
    seen = []

    def fn(x):
        seen.append(ember.compiler.is_compiling())
        return x * 3

    compiled = ember.compile(fn)
    x = ember.ones(4)
    for _ in range(5):
        assert ember.equal(compiled(x), x * 3)
    assert seen[0] is False and True in seen  # eager warm-up, then the recordings
    assert len(seen) < 5  # replays run no Python
    assert ember.compiler.is_compiling() is False
    assert ember._dynamo.is_compiling is ember.compiler.is_compiling


def test_disable_keeps_a_function_out_of_captures():
    @ember.compiler.disable
    def helper(x):
        return x + 1

    def fn(x):
        return helper(x) * 2

    compiled = ember.compile(fn)
    x = ember.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            assert ember.equal(compiled(x), (x + 1) * 2)
    assert any("ember.compiler.disable" in str(w.message) for w in caught)
    assert _graphs(compiled) == 0
    strict = ember.compile(fn, fullgraph=True)
    with pytest.raises(_compile.CompileError, match="marked ember.compiler.disable"):
        for _ in range(4):
            strict(x)

    @ember.compiler.disable(reason="logging")
    def logged(x):
        return x

    assert ember.equal(logged(x), x)


def test_reset_drops_recorded_graphs():
    compiled = ember.compile(_step)
    x = ember.ones(5)
    for _ in range(4):
        compiled(x)
    assert _graphs(compiled) == 1
    ember.compiler.reset()
    assert _graphs(compiled) == 0
    for _ in range(4):
        assert compiled(x).item() == 15.0
    assert _graphs(compiled) == 1
    ember._dynamo.reset()
    assert _graphs(compiled) == 0


def test_dynamo_config_cache_size_limit_is_the_compile_cache():
    before = _compile.CACHE_SIZE
    try:
        ember._dynamo.config.cache_size_limit = 3
        assert _compile.CACHE_SIZE == 3 and ember._dynamo.config.cache_size_limit == 3
        ember._dynamo.config.suppress_errors = True  # accepted and kept
        assert ember._dynamo.config.suppress_errors is True
        with pytest.raises(ValueError):
            ember._dynamo.config.cache_size_limit = 0
        with pytest.raises(AttributeError):
            ember._dynamo.config.no_such_setting  # noqa: B018
    finally:
        _compile.CACHE_SIZE = before
    ember._dynamo.mark_dynamic(ember.ones(2), 0)
    assert ember.compiler.allow_in_graph(_step) is _step
    assert ember.compiler.list_backends() == ["cudagraphs", "inductor"]
