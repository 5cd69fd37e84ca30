"""ember.compile: capture and replay (Note [ember.compile], Note [Capture and
replay]).  Every replayed result is checked against the same computation run
eagerly; the models are those of benchmarks/models.py."""

import copy
import importlib.util
import pathlib
import warnings

import pytest

import ember
import ember_allocator
from ember import _compile

nn = ember.nn
F = ember.nn.functional

_MODELS = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "models.py"


def _bench_models():
    if not _MODELS.exists():
        pytest.skip("benchmarks/models.py is not next to the tests")
    spec = importlib.util.spec_from_file_location("_bench_models", _MODELS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _graphs(fn):
    return list(fn._entries.values())


def _train(name, compiled, steps):
    model, _batch, loss_fn = _bench_models().build(ember, name)
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        return loss

    run = ember.compile(step) if compiled else step
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        losses = [float(run()) for _ in range(steps)]
    state = [t.detach().clone() for t in model.state_dict().values()]
    return losses, state, run


@pytest.mark.parametrize(
    "name, steps",
    [("mlp", 50), ("ncf", 50), ("charmlp", 50), ("chargru", 50), ("cnn", 12), ("chargpt", 8)],
)
def test_training_steps_match_eager(name, steps):
    losses, state, _ = _train(name, False, steps)
    closses, cstate, run = _train(name, True, steps)
    assert len(_graphs(run)) == 1  # it did replay: one graph, recorded once
    assert closses == pytest.approx(losses, rel=1e-5, abs=1e-6)
    for a, b in zip(state, cstate):
        assert ember.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-6)


def test_batch_norm_running_stats_and_eval_guard():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    ref = copy.deepcopy(model)
    compiled = ember.compile(model)
    x = ember.randn(16, 4)
    with ember.no_grad():
        for i in range(6):
            xi = x * (i + 1)
            assert ember.equal(compiled(xi), ref(xi))
    assert len(_graphs(compiled._compiled_call)) == 1
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert ember.equal(getattr(model[1], name), getattr(ref[1], name))
    model.eval()
    ref.eval()
    with ember.no_grad():
        for _ in range(4):
            assert ember.equal(compiled(x), ref(x))  # training changed: recorded again


def test_dropout_draws_fresh_masks_as_eager():
    def f(x):
        return F.dropout(x, 0.5, True) * 2

    cf = ember.compile(f)
    x = ember.ones(1000)
    ember.manual_seed(1)
    eager = [f(x) for _ in range(6)]
    ember.manual_seed(1)
    replayed = [cf(x) for _ in range(6)]
    assert _graphs(cf)[0].graph.takes  # the draw is a slot of the graph
    for a, b in zip(eager, replayed):
        assert ember.equal(a, b)
    assert not ember.equal(replayed[-1], replayed[-2])  # a fresh mask each call


def test_dropout_in_a_training_step():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 1))
    twin = copy.deepcopy(model)
    x, y = ember.randn(16, 8), ember.randn(16, 1)

    def make(m):
        opt = ember.optim.Adam(m.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = make(model), ember.compile(make(twin))
    ember.manual_seed(5)
    a = [float(eager(x, y)) for _ in range(20)]
    ember.manual_seed(5)
    b = [float(compiled(x, y)) for _ in range(20)]
    assert b == pytest.approx(a, rel=1e-6)
    assert len(_graphs(compiled)) == 1


def test_inputs_are_copied_in_and_outputs_are_fresh():
    cf = ember.compile(lambda a, b: (a * b + 1, a.sum()))
    results = []
    for i in range(6):
        a, b = ember.full((3,), float(i)), ember.arange(3.0)
        out, s = cf(a, b)
        assert ember.equal(out, a * b + 1) and s.item() == 3 * i
        results.append(out)
    # a kept output is not overwritten by the next replay
    assert ember.equal(results[3], ember.full((3,), 3.0) * ember.arange(3.0) + 1)


def test_in_place_writes_to_inputs_are_copied_back():
    def f(x):
        x.add_(1)
        return x.sum()

    cf = ember.compile(f)
    x = ember.zeros(3)
    for i in range(6):
        s = cf(x)
        assert s.item() == 3 * (i + 1)
    assert x.tolist() == [6.0, 6.0, 6.0]


def test_shape_change_records_again():
    cf = ember.compile(lambda x: x.relu() + 1)
    for n in (3, 3, 3, 3, 5, 5, 5, 5, 3):
        x = ember.randn(n)
        assert ember.equal(cf(x), x.relu() + 1)
    assert len(_graphs(cf)) == 2


def test_full_cache_falls_back_with_a_warning():
    cf = ember.compile(lambda x: x * 2)
    for n in range(1, _compile.CACHE_SIZE + 1):
        for _ in range(3):
            cf(ember.ones(n))
    with pytest.warns(UserWarning, match="argument 0's shape changed .* cache is full"):
        out = cf(ember.ones(50))
    assert out.tolist() == [2.0] * 50


def test_grad_mode_is_a_guard():
    w = ember.ones(3, requires_grad=True)
    cf = ember.compile(lambda x: (x * 2).sum())
    x = ember.ones(3)
    for _ in range(4):
        cf(x)
    with ember.no_grad():
        for _ in range(4):
            cf(x)
    assert len(_graphs(cf)) == 2
    del w


def test_replaced_parameter_is_a_guard():
    w = ember.ones(3)

    def f(x):
        return x * w

    cf = ember.compile(f)
    for _ in range(4):
        cf(ember.ones(3))
    w.data = ember.full((3,), 5.0)  # the graph read the old memory: record again
    for _ in range(4):
        assert cf(ember.ones(3)).tolist() == [5.0] * 3


def test_replaced_parameter_data_in_a_training_step():
    model = nn.Linear(3, 1)
    twin = copy.deepcopy(model)
    x, y = ember.randn(8, 3), ember.randn(8, 1)

    def make(m):
        opt = ember.optim.SGD(m.parameters(), lr=0.1)

        def step():
            opt.zero_grad()
            F.mse_loss(m(x), y).backward()
            opt.step()

        return step

    s1, s2 = make(model), ember.compile(make(twin))
    for i in range(10):
        if i == 6:
            for m in (model, twin):
                m.weight.data = ember.zeros(1, 3)
        s1()
        s2()
    assert ember.equal(model.weight, twin.weight)


def test_scheduler_lr_is_guarded():
    ember.manual_seed(0)
    model = nn.Linear(3, 1)
    twin = copy.deepcopy(model)
    x, y = ember.randn(8, 3), ember.randn(8, 1)

    def make(m):
        opt = ember.optim.SGD(m.parameters(), lr=0.1)
        sched = ember.optim.lr_scheduler.StepLR(opt, 5, 0.5)

        def step():
            opt.zero_grad()
            F.mse_loss(m(x), y).backward()
            opt.step()

        return step, sched

    (s1, sch1), (s2, sch2) = make(model), make(twin)
    s2 = ember.compile(s2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(30):
            s1()
            s2()
            sch1.step()
            sch2.step()
    assert ember.equal(model.weight, twin.weight)
    assert len(_graphs(s2)) == 1


def test_lr_changing_every_step_ends_eager_with_a_warning():
    model = nn.Linear(3, 1)
    twin = copy.deepcopy(model)
    x, y = ember.randn(8, 3), ember.randn(8, 1)

    def make(m):
        opt = ember.optim.SGD(m.parameters(), lr=0.1)
        sched = ember.optim.lr_scheduler.ExponentialLR(opt, 0.9)

        def step():
            opt.zero_grad()
            F.mse_loss(m(x), y).backward()
            opt.step()

        return step, sched

    (s1, sch1), (s2, sch2) = make(model), make(twin)
    s2 = ember.compile(s2)
    with pytest.warns(UserWarning, match="hyperparameters changed .* on every call"):
        for _ in range(40):
            s1()
            s2()
            sch1.step()
            sch2.step()
    assert ember.equal(model.weight, twin.weight)


@pytest.mark.parametrize("inside", ["scheduler", "lr"])
def test_a_step_that_changes_the_optimizer_stays_eager(inside):
    model = nn.Linear(3, 1)
    twin = copy.deepcopy(model)
    x, y = ember.randn(8, 3), ember.randn(8, 1)

    def make(m):
        opt = ember.optim.SGD(m.parameters(), lr=0.1)
        sched = ember.optim.lr_scheduler.StepLR(opt, 100, 0.5)  # lr constant for 100 steps

        def step():
            opt.zero_grad()
            F.mse_loss(m(x), y).backward()
            opt.step()
            if inside == "scheduler":
                sched.step()
            else:
                opt.param_groups[0]["lr"] *= 0.99

        return step

    s1, s2 = make(model), ember.compile(make(twin))
    match = "StepLR.step" if inside == "scheduler" else "changes SGD's hyperparameters"
    with pytest.warns(UserWarning, match=match):
        for _ in range(10):
            s1()
            s2()
    assert ember.equal(model.weight, twin.weight)


@pytest.mark.parametrize(
    "body, why",
    [
        (lambda x: x * 2 if (x.sum() > 0) else x, "item"),
        (lambda x: (print(x), x + 1)[1], "NumPy view"),
        (lambda x: x * x.sum().item(), "item"),
        (lambda x: ember.tensor(x.tolist()) + 1, "tolist"),
        (lambda x: x[x > 0] * 2, "nonzero"),
    ],
    ids=["bool", "print", "item", "tolist", "mask"],
)
def test_host_reads_make_it_eager_with_one_warning(body, why, capsys):
    cf = ember.compile(body)
    x = ember.tensor([1.0, -2.0, 3.0])
    with pytest.warns(UserWarning, match=why) as record:
        outs = [cf(x) for _ in range(5)]
    assert len([w for w in record if "ember.compile" in str(w.message)]) == 1
    for out in outs:
        assert ember.equal(out, body(x))


def test_python_values_that_change_are_caught():
    count = [0]

    def f(x):
        count[0] += 1
        return x * count[0]

    cf = ember.compile(f)
    with pytest.warns(UserWarning, match="argument 5 was 4.0, then 5.0"):
        outs = [cf(ember.ones(1)).item() for _ in range(8)]
    assert outs == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def test_fullgraph_raises():
    cf = ember.compile(lambda x: x * x.sum().item(), fullgraph=True)
    cf(ember.ones(2))  # warm-up: eager
    with pytest.raises(_compile.CompileError, match="item"):
        cf(ember.ones(2))


def test_compiled_module_forward_with_backward_outside():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.2), nn.Linear(16, 3))
    twin = copy.deepcopy(model)
    cm = ember.compile(twin)
    opt1 = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt2 = ember.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9)
    x, y = ember.randn(10, 6), ember.randn(10, 3)
    ember.manual_seed(3)
    eager = []
    for _ in range(12):
        opt1.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt1.step()
        eager.append(loss.item())
    ember.manual_seed(3)
    replayed = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(12):
            opt2.zero_grad()
            loss = F.mse_loss(cm(x), y)
            loss.backward()
            opt2.step()
            replayed.append(loss.item())
    assert replayed == pytest.approx(eager, rel=1e-5)
    assert len(_graphs(cm._compiled_call)) == 1
    for a, b in zip(model.parameters(), twin.parameters()):
        assert ember.allclose(a, b, rtol=1e-5, atol=1e-6)


def test_two_forwards_before_one_backward_raise():
    model = nn.Linear(3, 2)
    cm = ember.compile(model)
    x = ember.ones(4, 3)
    for _ in range(4):
        cm(x).sum().backward()
    a, b = cm(x), cm(x * 2)
    with pytest.raises(RuntimeError, match="ran again before the backward"):
        (a.sum() + b.sum()).backward()


def test_memory_is_flat_across_replays():
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    x, y = ember.randn(16, 32), ember.randn(16, 4)

    @ember.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    host = ember_allocator.host_allocator()
    for _ in range(5):
        step(x, y)
    before = host.memory_allocated()
    for _ in range(20):
        step(x, y)
    assert host.memory_allocated() == before


def test_graph_memory_goes_back_when_released():
    host = ember_allocator.host_allocator()
    x = ember.randn(1000)
    before = host.memory_allocated()
    cf = ember.compile(lambda x: (x * 2).exp() + 1)
    for _ in range(5):
        cf(x)
    assert host.memory_allocated() > before
    del cf  # its graphs go, and their memory with them
    assert host.memory_allocated() == before


def test_options():
    f = lambda x: x + 1  # noqa: E731
    assert ember.compile(f, disable=True) is f
    assert ember.compile(f, backend="eager") is f
    assert isinstance(ember.compile(mode="reduce-overhead")(f), _compile.CompiledFunction)
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(f, mode="fastest")
    with pytest.raises(RuntimeError, match="Invalid backend"):
        ember.compile(f, backend="tvm")
    with pytest.raises(NotImplementedError, match="symbolic shapes"):
        ember.compile(f, dynamic=True)
    with pytest.raises(RuntimeError, match="both"):
        ember.compile(f, mode="default", options={})


def test_compiled_module_keeps_the_modules_attributes():
    model = nn.Linear(3, 2)
    cm = ember.compile(model)
    assert cm.weight is model.weight and cm._orig_mod is model
    assert isinstance(cm, nn.Module)
