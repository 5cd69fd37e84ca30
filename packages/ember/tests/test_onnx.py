"""ember.onnx.export: the models of benchmarks/models.py, the digits CNN of
examples/ and a Transformer encoder, exported, checked by onnx.checker and run by
onnxruntime, whose outputs must match ember's."""

import importlib.util
import io
import pathlib

import numpy as np
import pytest

import ember
import ember.nn as nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _load(path, name):
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _like(a):
    """A new input of a's shape and dtype (so a graph that baked the traced values
    in as constants fails the comparison); tuples of them alike."""
    if isinstance(a, tuple):
        return tuple(_like(x) for x in a)
    if a.dtype.is_floating_point:
        return ember.randn(*a.shape, dtype=a.dtype)
    return ember.randint(0, max(int(a.max()) + 1, 2), tuple(a.shape), dtype=a.dtype)


def _flat(args):
    return [y for x in args for y in (_flat(x) if isinstance(x, tuple) else [x])]


def _run(model, args, **export_kwargs):
    """(onnxruntime's outputs, ember's outputs, the ModelProto) of the exported model,
    run on other inputs than the traced ones."""
    model.eval()
    buf = io.BytesIO()
    proto = ember.onnx.export(model, args, buf, **export_kwargs)
    session = ort.InferenceSession(buf.getvalue())
    args = tuple(_like(a) for a in args)
    feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), _flat(args))}
    with ember.no_grad():
        want = model(*args)
    want = [want] if isinstance(want, ember.Tensor) else _flat(tuple(want))
    return session.run(None, feeds), [w.numpy() for w in want], proto


BENCHMARK_INPUTS = {
    "mlp": lambda: (ember.randn(3, 784),),
    "cnn": lambda: (ember.randn(2, 3, 32, 32),),
    "resnet18": lambda: (ember.randn(2, 3, 32, 32),),
    "mobilenet": lambda: (ember.randn(2, 3, 32, 32),),
    "lstm": lambda: (ember.randint(0, 10000, (6, 2)),),
    "ncf": lambda: (ember.randint(0, 10000, (5,)), ember.randint(0, 10000, (5,))),
}


@pytest.mark.parametrize("name", list(BENCHMARK_INPUTS))
def test_benchmark_models_round_trip_through_onnxruntime(name):
    models = _load(ROOT / "benchmarks" / "models.py", "bench_models")
    ember.manual_seed(0)
    model = models.build(ember, name)[0]
    got, want, proto = _run(model, BENCHMARK_INPUTS[name]())
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    assert proto.opset_import[0].version == ember.onnx.DEFAULT_OPSET


def test_digits_cnn_with_a_dynamic_batch(tmp_path):
    digits = _load(ROOT / "examples" / "train_digits.py", "train_digits")
    ember.manual_seed(0)
    model = digits.CNN().eval()
    ember.onnx.export(
        model,
        (ember.randn(4, 1, 8, 8),),
        tmp_path / "digits.onnx",
        input_names=["images"],
        output_names=["logits"],
        dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
    )
    proto = onnx.load(str(tmp_path / "digits.onnx"))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["images"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    session = ort.InferenceSession(str(tmp_path / "digits.onnx"))
    for batch in (1, 7):  # other batch sizes than the traced one
        x = ember.randn(batch, 1, 8, 8)
        (got,) = session.run(["logits"], {"images": x.numpy()})
        with ember.no_grad():
            np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-4, atol=1e-5)


def test_transformer_encoder():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
    model = nn.TransformerEncoder(layer, 2)
    got, want, proto = _run(model, (ember.randn(3, 7, 16),), opset_version=17)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    assert "LayerNormalization" in {n.op_type for n in proto.graph.node}


def test_gelu_activation_and_several_outputs():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = nn.functional.gelu(self.fc(x))
            return h, (h * 2 - x).softmax(-1)

    ember.manual_seed(0)
    for opset in (17, 20):
        got, want, proto = _run(Two(), (ember.randn(2, 4),), opset_version=opset)
        assert [o.name for o in proto.graph.output] == ["output_0", "output_1"]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


class _Zoo(nn.Module):
    """The smaller mapped ops in one model."""

    def forward(self, x, ids):
        y = x.clamp(-1.0, 1.0).abs() + 1e-3
        y = y.log() - y.rsqrt() + y.reciprocal() * 0.5 - y.sqrt().exp() / 3
        y = ember.where(x > 0, y, -y).masked_fill(x < -1.5, 0.0)
        y = ember.maximum(y, x) - ember.minimum(y, -x) + (x >= 0).float() - (x != 0).long()
        m = y.mean(-1, keepdim=True) + y.sum() + y.amax(0) + y.max(-1, keepdim=True).values
        z = nn.functional.hardtanh(y * m).tril() + y.triu(1) + nn.functional.silu(y)
        z = nn.functional.leaky_relu(z, 0.2) + nn.functional.log_softmax(z, dim=-1)
        picked = z.index_select(0, ids).repeat(2, 1)
        return ember.stack([picked.narrow(1, 0, 3), picked[:, 1:4]], 0).squeeze()[..., None]


@pytest.mark.parametrize("opset", [17, 18])
def test_smaller_ops(opset):
    x = ember.randn(4, 5) * 2
    got, want, _ = _run(_Zoo(), (x, ember.tensor([3, 0, 2])), opset_version=opset)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


def test_an_op_without_a_mapping_raises_naming_it():
    class Median(nn.Module):
        def forward(self, x):
            return x.median(-1).values

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="op 'median'"):
        ember.onnx.export(Median(), (ember.randn(2, 3),), io.BytesIO())
    assert not ember.onnx.is_in_onnx_export()


def test_an_unmapped_output_or_a_constant_output_raises():
    class Indices(nn.Module):
        def forward(self, x):
            return nn.functional.adaptive_max_pool2d(x, 1, return_indices=True)[1].float()

    with pytest.raises(
        ember.onnx.UnsupportedOperatorError, match="output 1 of op '_adaptive_max_pool'"
    ):
        ember.onnx.export(Indices(), (ember.randn(1, 1, 4, 4),), io.BytesIO())

    class Item(nn.Module):
        def forward(self, x):
            return ember.full((2,), x[0].item())

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="does not depend"):
        ember.onnx.export(Item(), (ember.randn(3),), io.BytesIO())


def test_every_mapping_is_keyed_by_an_op_of_the_table():
    import ember_core
    from ember.onnx._mappings import MAPPINGS

    assert all(ember_core.OPS[op.name] is op for op in MAPPINGS)


class _WordLM(nn.Module):
    """The shape of PyTorch's word-language-model example (its export_onnx passes the
    LSTM's hidden state as a tuple in args)."""

    def __init__(self, ntoken=50, ninp=16, nhid=16, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight  # tied weights
        self.drop = nn.Dropout(0.2)
        self.nlayers, self.nhid, self.ntoken = nlayers, nhid, ntoken

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        return (
            ember.zeros(self.nlayers, bsz, self.nhid),
            ember.zeros(self.nlayers, bsz, self.nhid),
        )


def test_word_language_model_with_its_hidden_state_in_args():
    ember.manual_seed(0)
    model = _WordLM()
    tokens = ember.zeros(5 * 3, dtype=ember.int64).view(-1, 3)
    hidden = model.init_hidden(3)
    got, want, proto = _run(model, (tokens, hidden))
    assert [i.name for i in proto.graph.input] == ["input_0", "input_1", "input_2"]
    assert len(got) == len(want) == 3  # log-probabilities, h_n, c_n
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


F = nn.functional
_X = (3, 5, 8)
_IMG = (2, 3, 8, 8)

# name -> (model, input shapes or tensors); each is exported, then run by onnxruntime on
# new inputs of the same shapes and compared with ember.
MAPPED = {
    "gru": (lambda: nn.GRU(8, 16, num_layers=2, bidirectional=True, batch_first=True), [_X]),
    "rnn_tanh": (lambda: nn.RNN(8, 16, batch_first=True), [_X]),
    "rnn_relu": (lambda: nn.RNN(8, 16, nonlinearity="relu"), [_X]),
    "gru_cell": (lambda: nn.GRUCell(8, 16), [(3, 8)]),
    "rnn_cell": (lambda: nn.RNNCell(8, 16), [(3, 8)]),
    "max_pool_indices": (
        lambda: _Fn(lambda t: F.max_pool2d(t, 3, 2, padding=1, return_indices=True)[1]),
        [_IMG],
    ),
    "max_pool1d_indices": (
        lambda: _Fn(lambda t: F.max_pool1d(t, 2, return_indices=True)[1]),
        [(2, 3, 8)],
    ),
    "sort_and_argsort": (
        lambda: _Fn(lambda t: (t.sort(1)[0], t.sort(-1, descending=True)[1], t.argsort(0))),
        [_X],
    ),
    "topk": (lambda: _Fn(lambda t: ember.topk(t, 3, dim=1, largest=False)), [_X]),
    "argmax_argmin_max_indices": (
        lambda: _Fn(
            lambda t: (t.argmax(-1), t.argmin(1, keepdim=True), t.argmax(), t.max(dim=0)[1])
        ),
        [_X],
    ),
    "tensor_and_mask_indexing": (
        lambda: _Fn(
            lambda t: (
                t[:, ember.tensor([0, 2, 4])],
                t[ember.tensor([2, 0])],
                t[..., [1, 3]],
                t[1, ember.tensor([[0, 1], [2, 3]]), 2:],
            )
        ),
        [_X],
    ),
    "clamp_tensor_bounds_and_gather": (
        lambda: _Fn(
            lambda t: (
                ember.clamp(t, min=-ember.ones(8) * 0.5, max=ember.ones(8)),
                ember.gather(t, 2, ember.tensor([[[1, 0, 7]] * 5] * 3)),
                ember.cumsum(t, 1),
            )
        ),
        [_X],
    ),
    "unary_math": (
        lambda: _Fn(
            lambda t: ember.stack(
                [
                    t.sin(),
                    t.cos(),
                    t.tan(),
                    t.atan(),
                    t.sinh(),
                    t.tanh().atanh(),
                    t.sigmoid().asin(),
                    t.sigmoid().acos(),
                    t.asinh(),
                    (t.abs() + 1).acosh(),
                    t.floor(),
                    t.ceil(),
                    (t * 3).round(),
                    (t * 3).trunc(),
                    t.sign(),
                    t.abs().log1p(),
                    t.expm1(),
                    t.abs().log2(),
                    t.abs().log10(),
                    t.exp2(),
                    t.square(),
                    t.round(decimals=1),
                    ember.fmod(t, 0.7),
                    ember.remainder(t, 0.7),
                    ember.lerp(t, t.cos(), 0.3),
                    ember.addcmul(t, t, t, value=0.5),
                    ember.addcdiv(t, t, t.exp(), value=2),
                ]
            )
        ),
        [_X],
    ),
    "activations": (
        lambda: _Fn(
            lambda t: ember.stack(
                [
                    F.softplus(t * 10, beta=2, threshold=5),
                    F.elu(t, 0.5),
                    F.celu(t, 2.0),
                    F.selu(t),
                    F.hardswish(t),
                    F.hardsigmoid(t),
                    F.mish(t),
                    F.logsigmoid(t * 50),
                    F.softsign(t),
                    F.hardshrink(t),
                    F.softshrink(t, 0.3),
                    F.threshold(t, 0.1, -2.0),
                ]
            )
        ),
        [_X],
    ),
    "reductions": (
        lambda: _Fn(
            lambda t: (
                t.var(-1),
                t.std(dim=(0, 2), keepdim=True),
                t.var(1, unbiased=False),
                ember.logsumexp(t, -1),
                t.prod(1),
                ember.linalg.vector_norm(t, dim=-1),
                ember.linalg.vector_norm(t, ord=1),
                ember.linalg.vector_norm(t, ord=3, dim=0),
                ember.linalg.vector_norm(t, ord=float("inf"), dim=1),
                (t > 0).all(-1),
                (t > 1).any(),
                t.norm(dim=1),
            )
        ),
        [_X],
    ),
    "logical_and_integer_ops": (
        lambda: _Fn(
            lambda t: (
                ember.logical_and(t > 0, t < 1) | ember.logical_xor(t > 0.5, t < -0.5),
                (t * 4).long() & 6,
                (t * 4).long() ^ (t * 2).long(),
                (t > 0) & (t < 1),
                ember.remainder(t.long(), 3),
                ~(t > 0),
                ember.isinf(t / 0),
                ember.isnan(t.log()),
            )
        ),
        [_X],
    ),
    "like_creation_flip_roll": (
        lambda: _Fn(
            lambda t: (
                ember.where(t > 0, t, ember.zeros_like(t)) + ember.ones_like(t),
                ember.full_like(t, 2.5) * t,
                ember.flip(t, [0, 2]),
                ember.roll(t, 2, 1),
                ember.roll(t, (1, -3), (0, 2)),
                ember.roll(t, 4),
            )
        ),
        [_X],
    ),
    "padding": (
        lambda: _Fn(
            lambda t: (
                F.pad(t, (1, 2, 0, 3)),
                F.pad(t, (1, -1), value=0.5),
                F.pad(t, (2, 1, 1, 2), mode="reflect"),
                F.pad(t, (1, 1, 2, 0), mode="replicate"),
                F.pad(t, (1, 2, 2, 1), mode="circular"),
            )
        ),
        [_IMG],
    ),
    "resize": (
        lambda: _Fn(
            lambda t: (
                F.interpolate(t, scale_factor=2),
                F.interpolate(t, size=(5, 11)),
                F.interpolate(t, scale_factor=1.5, mode="nearest-exact"),
                F.interpolate(t, size=(12, 6), mode="bilinear"),
                F.interpolate(t, scale_factor=2, mode="bilinear", align_corners=True),
                F.interpolate(t, scale_factor=2, mode="bicubic"),
            )
        ),
        [_IMG],
    ),
    "norms_and_pools": (
        lambda: nn.Sequential(
            nn.GroupNorm(3, 6), nn.InstanceNorm2d(6, affine=True), nn.AdaptiveMaxPool2d(2)
        ),
        [(2, 6, 8, 8)],
    ),
    "embedding_bags": (
        lambda: _Fn(
            lambda ids, w: (
                F.embedding_bag(ids, w, ember.tensor([0, 2, 2, 5]), mode="sum"),
                F.embedding_bag(ids, w, ember.tensor([0, 2, 2, 5]), mode="mean"),
                F.embedding_bag(ids, w, ember.tensor([0, 2, 2, 5]), mode="max"),
                F.embedding_bag(
                    ids, w, ember.tensor([0, 3, 7]), include_last_offset=True, padding_idx=2
                ),
                F.embedding_bag(
                    ids,
                    w,
                    ember.tensor([0, 4]),
                    mode="sum",
                    per_sample_weights=ember.linspace(0, 1, 7),
                ),
            )
        ),
        [ember.tensor([1, 2, 3, 4, 5, 2, 0]), (6, 4)],
    ),
    "losses": (
        lambda: _Fn(
            lambda t, target: (
                F.cross_entropy(t, target),
                F.cross_entropy(t, target, reduction="none", ignore_index=1),
                F.cross_entropy(t, target, label_smoothing=0.1, reduction="sum"),
                F.nll_loss(t.log_softmax(-1), target, weight=ember.linspace(0.5, 1.5, 8)),
                F.binary_cross_entropy_with_logits(t, t.sigmoid(), pos_weight=ember.ones(8) * 2),
                F.binary_cross_entropy(t.sigmoid(), (t > 0).float(), reduction="sum"),
                F.mse_loss(t, ember.zeros_like(t)),
            )
        ),
        [(10, 8), ember.tensor([1, 0, 3, 7, 2, 1, 1, 4, 5, 6])],
    ),
    "scatter_one_hot_outer_baddbmm": (
        lambda: _Fn(
            lambda t, ids: (
                ember.zeros(3, 8).scatter(1, ids, t[:, :4]),
                ember.zeros(3, 8).scatter_add(1, ids, t[:, :4]),
                F.one_hot(ids, 8),
                ember.outer(t[0], t[1]),
                ember.baddbmm(t[None, :, :3], t[None], t[None].transpose(1, 2), alpha=0.5, beta=2),
            )
        ),
        [(3, 8), ember.tensor([[0, 2, 4, 6], [1, 3, 5, 7], [7, 6, 5, 4]])],
    ),
    "in_place": (
        lambda: _Fn(
            lambda t: (
                t.clone().add_(1, alpha=2).mul_(t).relu_().sigmoid_(),
                F.relu(t * 2, inplace=True),
                (t + 0).clamp_(-0.5, 0.5).zero_().add_(t),
                ember.empty(3, 5, 8).copy_(t[0]),
                (t * 1).masked_fill_(t > 0, 7.0),
            )
        ),
        [_X],
    ),
}


def _inputs(spec):
    return tuple(s if isinstance(s, ember.Tensor) else ember.randn(*s) for s in spec)


@pytest.mark.parametrize("name", list(MAPPED))
def test_mapped_ops_match_onnxruntime_on_new_inputs(name):
    make, spec = MAPPED[name]
    ember.manual_seed(0)
    model = make()
    opset = 19 if name == "padding" else None  # circular padding is Pad(wrap), opset 19
    got, want, _ = _run(model, _inputs(spec), opset_version=opset)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_data_dependent_shapes_with_dynamic_output_axes():
    model = _Fn(lambda t: (t[t > 0], ember.nonzero(t > 0.5), ember.where(t > 1)[1]))
    names = ["masked", "nonzero", "where"]
    got, want, _ = _run(
        model,
        (ember.randn(4, 6),),
        output_names=names,
        dynamic_axes={"masked": [0], "nonzero": [0], "where": [0]},
    )
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_an_in_place_change_through_a_view_is_refused_not_exported_wrong():
    def through_view(t):
        y = t * 2
        row = y[0]  # a view of y
        row.add_(1)  # changes y too: ONNX values cannot follow that
        return y

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="in-place"):
        ember.onnx.export(_Fn(through_view), (ember.randn(3, 4),), io.BytesIO())

    def view_used_after_base_changes(t):
        y = t * 2
        row = y[0]
        y.mul_(3)
        return row

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="in-place"):
        ember.onnx.export(_Fn(view_used_after_base_changes), (ember.randn(3, 4),), io.BytesIO())
