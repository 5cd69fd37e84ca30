# Char-level transformer LM: TransformerEncoder with causal mask, positional encoding buffer, sampling.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
text = "hello world, this is a tiny corpus for a tiny transformer. hello again world! " * 4
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
itos = {i: c for c, i in stoi.items()}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
V, D, T = len(chars), 32, 16


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = PositionalEncoding(D)
        layer = nn.TransformerEncoderLayer(
            d_model=D, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, V)

    def forward(self, idx):
        T_ = idx.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T_)
        x = self.pos(self.emb(idx) * math.sqrt(D))
        x = self.encoder(x, mask=mask, is_causal=True)
        return self.head(self.ln(x))


def get_batch(bs=16):
    ix = torch.randint(len(data) - T - 1, (bs,))
    x = torch.stack([data[i : i + T] for i in ix])
    y = torch.stack([data[i + 1 : i + T + 1] for i in ix])
    return x, y


model = CharLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
losses = []
for it in range(40):
    xb, yb = get_batch()
    logits = model(xb)
    B, T_, C = logits.shape
    loss = F.cross_entropy(logits.view(B * T_, C), yb.view(B * T_))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    losses.append(loss.item())
print("loss", losses[0], losses[-1])
assert losses[-1] < losses[0] * 0.8
mask = nn.Transformer.generate_square_subsequent_mask(4)
print("CHECK mask", mask.tolist())
model.eval()
idx = torch.zeros((1, 1), dtype=torch.long)
with torch.no_grad():
    for _ in range(20):
        logits = model(idx[:, -T:])[:, -1, :] / 0.8
        v, _ = torch.topk(logits, 5)
        logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        nxt = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, nxt), dim=1)
print("sample:", "".join(itos[i] for i in idx[0].tolist()))
print("CHECK sample_len", idx.shape[1])
print("OK")
