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
    class Sorts(nn.Module):
        def forward(self, x):
            return x.sort(-1).values

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="op 'sort'"):
        ember.onnx.export(Sorts(), (ember.randn(2, 3),), io.BytesIO())
    assert not ember.onnx.is_in_onnx_export()


def test_an_unmapped_output_or_a_constant_output_raises():
    class Indices(nn.Module):
        def forward(self, x):
            return nn.functional.max_pool2d(x, 2, return_indices=True)[1].float()

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="output 1 of op '_max_pool'"):
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
