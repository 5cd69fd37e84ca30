"""Realistic PyTorch training scripts run with ``import ember as torch``.

Each script below is written exactly as one would for PyTorch.  The tests run
it on ember and check that training works (the loss falls, accuracy rises, a
checkpoint round-trips); the parity tests run the same text with ``import
torch``, copy torch's initial weights into ember's model, and compare the two
runs' losses step by step (float64, dropout off, no shuffling: the runs are
then deterministic in both libraries)."""

import numpy as np
import pytest

MLP_SCRIPT = """
import numpy as np
import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset


def make_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    angle = y * 2.1 + rng.normal(0, 0.35, n)
    radius = rng.uniform(0.5, 2.0, n)
    x = np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1) + rng.normal(0, 0.05, (n, 2))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


class MLP(nn.Module):
    def __init__(self, dropout=0.1):
        super().__init__()
        self.fc1 = nn.Linear(2, 64)
        self.fc2 = nn.Linear(64, 64)
        self.out = nn.Linear(64, 3)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.drop(F.relu(self.fc2(x)))
        return self.out(x)


def build(dropout=0.1):
    torch.manual_seed(0)
    return MLP(dropout)


def main(model, dtype=torch.float32, epochs=8, checkpoint=None):
    x, y = make_data()
    x = x.to(dtype)
    model = model.to(dtype)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(epochs):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    if checkpoint is not None:
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epochs}
        torch.save(state, checkpoint)
        state = torch.load(checkpoint, map_location="cpu")
        restored = MLP()
        restored.load_state_dict(state["model"])
        restored.to(dtype).eval()
        with torch.no_grad():
            assert torch.equal(restored(x).argmax(1), model(x).argmax(1))
    return losses, accuracy
"""

CNN_SCRIPT = '''
import numpy as np
import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset


def make_data(n=384, seed=1):
    """12x12 images of a horizontal, vertical or diagonal bar, with noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    images = rng.normal(0, 0.3, (n, 1, 12, 12)).astype(np.float32)
    for i, label in enumerate(y):
        k = rng.integers(2, 10)
        if label == 0:
            images[i, 0, k, 1:11] += 2.0
        elif label == 1:
            images[i, 0, 1:11, k] += 2.0
        else:
            idx = np.arange(1, 11)
            images[i, 0, idx, idx] += 2.0
    return torch.from_numpy(images), torch.from_numpy(y)


class Net(nn.Module):
    def __init__(self, dropout=0.25):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(16 * 4, 3))

    def forward(self, x):
        return self.classifier(self.features(x))


def build(dropout=0.25):
    torch.manual_seed(0)
    return Net(dropout)


def main(model, dtype=torch.float32, epochs=6):
    x, y = make_data()
    loader = DataLoader(TensorDataset(x.to(dtype), y), batch_size=32, shuffle=False)
    model = model.to(dtype)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4
    )
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, epochs=epochs,
                                                    steps_per_epoch=len(loader))
    losses = []
    for epoch in range(epochs):
        model.train()
        for images, labels in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
    return losses, correct / len(loader.dataset)
'''

LSTM_SCRIPT = '''
import numpy as np
import ember as torch
import ember.nn as nn


VOCAB = 12


def make_data(n=96, length=16, seed=2):
    """Sequences counting up modulo VOCAB from a random start: predict the next token."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, VOCAB, (n, 1))
    seq = (start + np.arange(length + 1)) % VOCAB
    return torch.from_numpy(seq[:, :-1]), torch.from_numpy(seq[:, 1:])


class LanguageModel(nn.Module):
    def __init__(self, vocab=VOCAB, emb=16, hidden=32, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens, state=None):
        out, state = self.lstm(self.embed(tokens), state)
        return self.head(out), state


def build(dropout=0.2):
    torch.manual_seed(0)
    return LanguageModel(dropout=dropout)


def main(model, dtype=torch.float32, steps=40):
    inputs, targets = make_data()
    model = model.to(dtype)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=5e-3)
    criterion = nn.CrossEntropyLoss()
    losses = []
    model.train()
    for step in range(steps):
        batch = slice((step * 32) % 96, (step * 32) % 96 + 32)
        logits, _ = model(inputs[batch])
        loss = criterion(logits.reshape(-1, VOCAB), targets[batch].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits, (h, c) = model(inputs)
        accuracy = (logits.argmax(-1) == targets).float().mean().item()
    assert h.shape == (2, 96, 32) and c.shape == (2, 96, 32)
    return losses, accuracy
'''

TRANSFORMER_SCRIPT = '''
import math
import numpy as np
import ember as torch
import ember.nn as nn
import ember.nn.functional as F


def make_data(n=128, length=10, vocab=8, seed=3):
    """Variable-length sequences (padding token 0); label: is the token 7 present?"""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, length + 1, n)
    tokens = np.zeros((n, length), dtype=np.int64)
    labels = np.zeros(n, dtype=np.int64)
    for i, L in enumerate(lengths):
        tokens[i, :L] = rng.integers(1, vocab - 1, L)
        if rng.random() < 0.5:
            tokens[i, rng.integers(0, L)] = vocab - 1
        labels[i] = int((tokens[i] == vocab - 1).any())
    return torch.from_numpy(tokens), torch.from_numpy(labels)


class Classifier(nn.Module):
    def __init__(self, vocab=8, d_model=16, nhead=2, layers=2, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, 10, d_model))
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=32, dropout=dropout, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, 2)

    def forward(self, tokens):
        pad = tokens == 0
        x = self.embed(tokens) * math.sqrt(self.embed.embedding_dim)
        x = x + self.pos[:, : tokens.shape[1]]
        x = self.encoder(x, src_key_padding_mask=pad)
        x = x.masked_fill(pad.unsqueeze(-1), 0.0).sum(1) / (~pad).sum(1, keepdim=True)
        return self.head(self.norm(x))


def build(dropout=0.1):
    torch.manual_seed(0)
    return Classifier(dropout=dropout)


def main(model, dtype=torch.float32, steps=60):
    tokens, labels = make_data()
    model = model.to(dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = 10
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    losses = []
    for step in range(steps):
        batch = slice((step * 32) % 128, (step * 32) % 128 + 32)
        model.train()
        loss = F.cross_entropy(model(tokens[batch]), labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.inference_mode():
        accuracy = (model(tokens).argmax(1) == labels).float().mean().item()
    return losses, accuracy
'''

AUTOGRAD_SCRIPT = '''
import numpy as np
import ember as torch
import ember.nn as nn


def make_data(n=64):
    x = torch.from_numpy(np.linspace(-3, 3, n)).unsqueeze(1)
    return x, torch.sin(x), torch.cos(x)


def build(dropout=0.0):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)
    )


def main(model, dtype=torch.float32, steps=150):
    """Fit sin(x) and, through torch.autograd.grad with create_graph, its derivative cos(x)."""
    x, y, dy = make_data()
    x, y, dy = x.to(dtype), y.to(dtype), dy.to(dtype)
    model = model.to(dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        xs = x.clone().requires_grad_(True)
        pred = model(xs)
        (grad,) = torch.autograd.grad(pred.sum(), xs, create_graph=True)
        loss = ((pred - y) ** 2).mean() + ((grad - dy) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, None
'''

SCRIPTS = {
    "mlp": MLP_SCRIPT,
    "cnn": CNN_SCRIPT,
    "lstm": LSTM_SCRIPT,
    "transformer": TRANSFORMER_SCRIPT,
    "autograd": AUTOGRAD_SCRIPT,
}


def load_script(name, library="ember"):
    """The script's namespace, executed with `import ember as torch` (or real torch)."""
    source = SCRIPTS[name]
    if library == "torch":
        source = source.replace("import ember as torch", "import torch").replace("ember.", "torch.")
    namespace = {"__name__": f"script_{name}_{library}"}
    exec(compile(source, f"<{name} script ({library})>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    "name, min_accuracy",
    [("mlp", 0.9), ("cnn", 0.9), ("lstm", 0.9), ("transformer", 0.8), ("autograd", None)],
)
def test_script_trains(name, min_accuracy, tmp_path):
    script = load_script(name)
    kwargs = {"checkpoint": tmp_path / "mlp.pt"} if name == "mlp" else {}
    losses, accuracy = script["main"](script["build"](), **kwargs)
    assert all(np.isfinite(losses))
    head, tail = np.mean(losses[:5]), np.mean(losses[-5:])
    assert tail < 0.5 * head, f"the loss did not fall: {head:.4f} -> {tail:.4f}"
    if min_accuracy is not None:
        assert accuracy >= min_accuracy, f"accuracy {accuracy:.3f}"


@pytest.mark.parity
@pytest.mark.parametrize(
    "name, steps",
    [
        ("mlp", {"epochs": 3}),
        ("cnn", {"epochs": 2}),
        ("lstm", {"steps": 15}),
        ("transformer", {"steps": 15}),
        ("autograd", {"steps": 40}),
    ],
)
def test_script_matches_torch(name, steps):
    torch = pytest.importorskip("torch")
    import ember

    theirs, ours = load_script(name, "torch"), load_script(name, "ember")
    t_model = theirs["build"](dropout=0.0).double()
    e_model = ours["build"](dropout=0.0).double()
    e_model.load_state_dict(
        {k: ember.tensor(v.detach().numpy().copy()) for k, v in t_model.state_dict().items()}
    )
    t_losses, t_acc = theirs["main"](t_model, dtype=torch.float64, **steps)
    e_losses, e_acc = ours["main"](e_model, dtype=ember.float64, **steps)
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-7, atol=1e-10)
    assert e_acc == t_acc
    for (k, a), (_, b) in zip(e_model.state_dict().items(), t_model.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-9, err_msg=k)
