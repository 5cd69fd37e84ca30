# A GRU encoder-decoder with Bahdanau-style attention, teacher forcing, and greedy and
# beam-search decoding (topk, gather, masked_fill, log_softmax, pad_sequence).
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)
V, E, H = 11, 8, 16
PAD, BOS, EOS = 0, 1, 2
rng = np.random.RandomState(0)


def seeded(module, seed):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(r.uniform(-0.3, 0.3, size=p.shape), dtype=torch.float32))
    return module


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, E, padding_idx=PAD)
        self.rnn = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * H, H)

    def forward(self, src, lengths):
        packed = pack_padded_sequence(
            self.emb(src), lengths, batch_first=True, enforce_sorted=False
        )
        out, h = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))
        return out, torch.tanh(self.proj(torch.cat([h[0], h[1]], dim=-1)))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, E)
        self.attn_w = nn.Linear(2 * H, H, bias=False)
        self.attn_v = nn.Linear(H, 1, bias=False)
        self.cell = nn.GRUCell(E + 2 * H, H)
        self.out = nn.Linear(H, V)

    def step(self, tok, h, enc, mask):
        scores = self.attn_v(torch.tanh(self.attn_w(enc) + h.unsqueeze(1))).squeeze(-1)
        scores = scores.masked_fill(~mask, float("-inf"))
        a = F.softmax(scores, dim=-1)
        ctx = torch.bmm(a.unsqueeze(1), enc).squeeze(1)
        h = self.cell(torch.cat([self.emb(tok), ctx], dim=-1), h)
        return F.log_softmax(self.out(h), dim=-1), h, a


seqs = [torch.tensor(rng.randint(3, V, size=n)) for n in (5, 3, 4)]
lengths = torch.tensor([len(s) for s in seqs])
src = pad_sequence(seqs, batch_first=True, padding_value=PAD)
tgt = pad_sequence(
    [torch.cat([s.flip(0), torch.tensor([EOS])]) for s in seqs], batch_first=True, padding_value=PAD
)
enc, dec = seeded(Encoder(), 1), seeded(Decoder(), 2)
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.03)
mask = src != PAD
for it in range(40):
    opt.zero_grad()
    out, h = enc(src, lengths)
    tok = torch.full((src.size(0),), BOS)
    loss = 0.0
    for t in range(tgt.size(1)):
        logp, h, _ = dec.step(tok, h, out, mask)
        loss = loss + F.nll_loss(logp, tgt[:, t], ignore_index=PAD)
        tok = tgt[:, t]
    loss.backward()
    nn.utils.clip_grad_norm_(list(enc.parameters()) + list(dec.parameters()), 1.0)
    opt.step()
    if it % 10 == 0:
        print("CHECK loss", it, round(loss.item(), 3))


@torch.no_grad()
def beam_search(i, k=3, max_len=7):
    out, h = enc(src[i : i + 1], lengths[i : i + 1])
    m = mask[i : i + 1]
    beams = [(0.0, [BOS], h)]
    for _ in range(max_len):
        cand = []
        for score, toks, hh in beams:
            if toks[-1] == EOS:
                cand.append((score, toks, hh))
                continue
            logp, h2, _ = dec.step(torch.tensor([toks[-1]]), hh, out, m)
            top, idx = logp[0].topk(k)
            for s, j in zip(top.tolist(), idx.tolist()):
                cand.append((score + s, toks + [j], h2))
        beams = sorted(cand, key=lambda b: -b[0])[:k]
    return beams[0][1][1:]


print("CHECK beam0", beam_search(0))
print("CHECK target0", tgt[0].tolist())
out, h = enc(src, lengths)
tok = torch.full((3,), BOS)
greedy = []
with torch.no_grad():
    for t in range(tgt.size(1)):
        logp, h, a = dec.step(tok, h, out, mask)
        tok = logp.argmax(-1)
        greedy.append(tok)
g = torch.stack(greedy, 1)
print("CHECK greedy_acc", ((g == tgt) | (tgt == PAD)).float().mean().item())
print("CHECK attn_rows", a.sum(-1).round(decimals=4).tolist())
print("OK")
