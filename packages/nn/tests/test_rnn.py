"""RNN, LSTM, GRU (layers, directions, batch_first, initial states, unbatched
input, dropout between layers) and their cells: NumPy recurrences, parameter
names, and PyTorch parity of outputs, final states and gradients."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_numpy(x, params, h, c):
    w_ih, w_hh, b_ih, b_hh = params
    out = []
    for t in range(x.shape[0]):
        gates = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = np.split(gates, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.stack(out), h, c


def gru_numpy(x, params, h):
    w_ih, w_hh, b_ih, b_hh = params
    out = []
    for t in range(x.shape[0]):
        gi = x[t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        ir, iz, inn = np.split(gi, 3, axis=1)
        hr, hz, hn = np.split(gh, 3, axis=1)
        r, z = sigmoid(ir + hr), sigmoid(iz + hz)
        n = np.tanh(inn + r * hn)
        h = (1 - z) * n + z * h
        out.append(h)
    return np.stack(out), h


def params_of(m, suffix="_l0"):
    return [
        to_numpy(getattr(m, n + suffix)) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    ]


def test_lstm_matches_numpy(rng):
    m = nn.LSTM(3, 4).double()
    x = rng.standard_normal((5, 2, 3))
    out, (h, c) = m(ec.tensor(x))
    ref, rh, rc = lstm_numpy(x, params_of(m), np.zeros((2, 4)), np.zeros((2, 4)))
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(h)[0], rh, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(c)[0], rc, rtol=1e-10, atol=1e-12)


def test_gru_bidirectional_batch_first_matches_numpy(rng):
    m = nn.GRU(3, 4, batch_first=True, bidirectional=True).double()
    x = rng.standard_normal((2, 5, 3))
    h0 = rng.standard_normal((2, 2, 4))
    out, h = m(ec.tensor(x), ec.tensor(h0))
    xt = x.transpose(1, 0, 2)
    fwd, hf = gru_numpy(xt, params_of(m), h0[0])
    bwd, hb = gru_numpy(xt[::-1], params_of(m, "_l0_reverse"), h0[1])
    ref = np.concatenate([fwd, bwd[::-1]], -1).transpose(1, 0, 2)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(h), np.stack([hf, hb]), rtol=1e-10, atol=1e-12)


def test_parameter_names_shapes_and_init_range():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert names[4:8] == [
        "weight_ih_l0_reverse",
        "weight_hh_l0_reverse",
        "bias_ih_l0_reverse",
        "bias_hh_l0_reverse",
    ]
    assert m.weight_ih_l1.shape == (20, 10) and m.weight_hh_l1_reverse.shape == (20, 5)
    bound = 1 / np.sqrt(5)
    assert all(np.abs(to_numpy(p)).max() <= bound for p in m.parameters())
    assert repr(m) == "LSTM(3, 5, num_layers=2, bidirectional=True)"
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        gru = nn.GRU(2, 3, bias=False, batch_first=True, dropout=0.5)
    assert repr(gru) == "GRU(2, 3, bias=False, batch_first=True, dropout=0.5)"
    assert repr(nn.RNNCell(2, 3, nonlinearity="relu")) == "RNNCell(2, 3, nonlinearity=relu)"
    assert len(m.all_weights) == 4 and len(m.all_weights[0]) == 4


def test_input_errors():
    with pytest.raises(RuntimeError, match="input_size"):
        nn.LSTM(3, 4)(ec.randn(5, 2, 4))
    with pytest.raises(ValueError, match="2D or 3D"):
        nn.GRU(3, 4)(ec.randn(3))


def test_dropout_between_layers_only_in_training(rng):
    m = nn.GRU(3, 4, num_layers=2, dropout=0.5).double()
    x = ec.tensor(rng.standard_normal((6, 2, 3)))
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    m.train()
    ec.manual_seed(0)
    c, _ = m(x)
    assert not np.allclose(to_numpy(a), to_numpy(c))


RNN_CASES = [
    (lambda N: N.RNN(3, 4), [(5, 2, 3)]),
    (lambda N: N.RNN(3, 4, nonlinearity="relu", num_layers=2), [(5, 2, 3)]),
    (lambda N: N.RNN(3, 4, bias=False, bidirectional=True, batch_first=True), [(2, 5, 3)]),
    (lambda N: N.RNN(3, 4), [(5, 2, 3), (1, 2, 4)]),
    (lambda N: N.LSTM(3, 4), [(5, 2, 3)]),
    (lambda N: N.LSTM(3, 4, num_layers=2, bidirectional=True), [(5, 2, 3)]),
    (lambda N: N.LSTM(3, 4, batch_first=True), [(2, 5, 3)]),
    (lambda N: N.LSTM(3, 4), [(5, 3)]),
    (lambda N: N.LSTM(3, 4, bias=False, num_layers=3), [(4, 2, 3)]),
    (lambda N: N.LSTM(3, 4, proj_size=2), [(5, 2, 3)]),
    (lambda N: N.LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True), [(5, 2, 3)]),
    (lambda N: N.GRU(3, 4), [(5, 2, 3)]),
    (lambda N: N.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True), [(2, 5, 3)]),
    (lambda N: N.GRU(3, 4), [(5, 2, 3), (1, 2, 4)]),
    (lambda N: N.GRU(3, 4), [(5, 3), (1, 4)]),
    (lambda N: N.RNNCell(3, 4), [(2, 3)]),
    (lambda N: N.RNNCell(3, 4, nonlinearity="relu"), [(2, 3), (2, 4)]),
    (lambda N: N.RNNCell(3, 4), [(3,)]),
    (lambda N: N.LSTMCell(3, 4), [(2, 3)]),
    (lambda N: N.GRUCell(3, 4, bias=False), [(2, 3), (2, 4)]),
    (lambda N: N.GRUCell(3, 4), [(3,), (4,)]),
]


@pytest.mark.parity
@pytest.mark.parametrize(
    "build, shapes", RNN_CASES, ids=[repr(c[0](nn)) + str(len(c[1])) for c in RNN_CASES]
)
def test_parity(torch, rng, build, shapes):
    check_layer(torch, build, [rng.standard_normal(s) for s in shapes])


@pytest.mark.parity
def test_lstm_initial_state_parity(torch, rng):
    x = rng.standard_normal((4, 2, 3))
    h0, c0 = rng.standard_normal((4, 2, 5)), rng.standard_normal((4, 2, 5))

    def call(m, x, h, c):
        return m(x, (h, c))

    check_layer(
        torch, lambda N: N.LSTM(3, 5, num_layers=2, bidirectional=True), [x, h0, c0], call=call
    )

    def cell_call(m, x, h, c):
        return m(x, (h, c))

    check_layer(torch, lambda N: N.LSTMCell(3, 5), [x[0], h0[0], c0[0]], call=cell_call)


def test_pack_pad_round_trip(rng):
    from ember_nn.utils import rnn as R

    seqs = [ec.tensor(rng.standard_normal((n, 2))) for n in (2, 4, 3)]
    packed = R.pack_sequence(seqs, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1]
    assert packed.sorted_indices.tolist() == [1, 2, 0] and packed.unsorted_indices.tolist() == [
        2,
        0,
        1,
    ]
    padded, lengths = R.pad_packed_sequence(packed, batch_first=True)
    assert lengths.tolist() == [2, 4, 3] and padded.shape == (3, 4, 2)
    for s, back in zip(seqs, R.unpack_sequence(packed)):
        np.testing.assert_array_equal(to_numpy(back), to_numpy(s))
    np.testing.assert_array_equal(to_numpy(padded[0, 2:]), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        R.pack_padded_sequence(padded, [2, 4, 3], batch_first=True)
    p2 = R.pad_sequence(
        [ec.ones(2), ec.ones(3)], batch_first=True, padding_value=-1, padding_side="left"
    )
    np.testing.assert_array_equal(to_numpy(p2), [[-1, 1, 1], [1, 1, 1]])


@pytest.mark.parity
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_packed_sequence_parity(torch, rng, mode):
    lengths = [3, 5, 2]
    x = rng.standard_normal((5, 3, 4))

    def call(m, x):
        N = torch.nn.utils.rnn if type(m).__module__.startswith("torch") else nn.utils.rnn
        packed = N.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, hidden = m(packed)
        padded, lens = N.pad_packed_sequence(out, total_length=5)
        return padded, hidden

    check_layer(
        torch, lambda N: getattr(N, mode)(4, 3, num_layers=2, bidirectional=True), [x], call=call
    )


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_fused_layer_double_backward(rng, mode):
    """create_graph through a fused layer differentiates the step-by-step
    recurrence: second derivatives are checked against finite differences."""
    import ember_autograd as ag

    m = getattr(nn, mode)(2, 3).double()
    x = ec.tensor(rng.standard_normal((4, 1, 2)), requires_grad=True)

    def first_grad(x):
        out, _ = m(x)
        (g,) = ag.grad((out * out).sum(), x, create_graph=True)
        return g

    assert ag.gradcheck(first_grad, (x,), eps=1e-6, atol=1e-5)


def test_lstm_layer_gradients_match_cell_by_cell(rng):
    """The fused layer node (Note [Fused recurrent layers]) against the same
    recurrence recorded step by step with LSTMCell and GRUCell."""
    for layer_cls, cell_cls in ((nn.LSTM, nn.LSTMCell), (nn.GRU, nn.GRUCell)):
        layer = layer_cls(3, 4).double()
        cell = cell_cls(3, 4).double()
        cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
        x = rng.standard_normal((6, 2, 3))
        xa, xb = ec.tensor(x, requires_grad=True), ec.tensor(x, requires_grad=True)
        out, _ = layer(xa)
        state = None
        outs = []
        for t in range(6):
            state = cell(xb[t], state)
            outs.append(state[0] if isinstance(state, tuple) else state)
        ref = ec.stack(outs, 0)
        np.testing.assert_allclose(to_numpy(out), to_numpy(ref), rtol=1e-12)
        g = ec.tensor(rng.standard_normal(out.shape))
        (out * g).sum().backward()
        (ref * g).sum().backward()
        np.testing.assert_allclose(to_numpy(xa.grad), to_numpy(xb.grad), rtol=1e-10, atol=1e-12)
        for name, p in layer.named_parameters():
            np.testing.assert_allclose(
                to_numpy(p.grad),
                to_numpy(getattr(cell, name[:-3]).grad),
                rtol=1e-10,
                atol=1e-12,
                err_msg=name,
            )
