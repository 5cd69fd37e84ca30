import numpy as np

import ember_core as ec
import ember_nn as nn


def test_mlp_loss_falls_with_sgd():
    ec.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = ec.randn(64, 4)
    y = (x * ec.tensor([1.0, -2.0, 0.5, 3.0])).sum(1, keepdim=True)
    losses = []
    for _ in range(100):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]


def test_state_dict_round_trip():
    a = nn.Linear(3, 2)
    b = nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    assert list(a.state_dict()) == ["weight", "bias"]
