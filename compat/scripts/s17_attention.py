# Attention by hand (masked_fill -inf, softmax, transpose/contiguous/view), nn.MultiheadAttention, SDPA.
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(0)
B, T, C, H = 2, 5, 8, 2


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B_, T_, C_ = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B_, T_, H, C_ // H).transpose(1, 2)
        q = q.view(B_, T_, H, C_ // H).transpose(1, 2)
        v = v.view(B_, T_, H, C_ // H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T_, :T_] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y2 = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B_, T_, C_)
        return self.c_proj(y), y, y2.transpose(1, 2).reshape(B_, T_, C_)


m = CausalSelfAttention()
with torch.no_grad():
    for p in m.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=torch.float32))
x = torch.tensor(rng.randn(B, T, C), dtype=torch.float32)
out, y, y2 = m(x)
print("CHECK attn_sum", round(out.sum().item(), 4))
print("CHECK sdpa_match", torch.allclose(y2, y, atol=1e-5), round(y2.sum().item(), 4))
mha = nn.MultiheadAttention(embed_dim=C, num_heads=H, batch_first=True)
with torch.no_grad():
    for p in mha.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=torch.float32))
attn_mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
kpm = torch.tensor([[False] * T, [False] * (T - 1) + [True]])
o, w = mha(x, x, x, attn_mask=attn_mask, key_padding_mask=kpm)
print(
    "CHECK mha_out",
    list(o.shape),
    list(w.shape),
    round(o.sum().item(), 4),
    round(w.sum().item(), 4),
)
o2, w2 = mha(x, x, x, need_weights=True, average_attn_weights=False)
print("CHECK mha_w_heads", list(w2.shape))
o3, w3 = mha(x, x, x, need_weights=False)
print("CHECK mha_noweights", w3 is None)
print("CHECK mha_params", [n for n, _ in mha.named_parameters()])
q = torch.tensor(rng.randn(B, H, T, 4), dtype=torch.float32)
mask = torch.ones(T, T, dtype=torch.bool).tril()
print(
    "CHECK sdpa_boolmask",
    round(F.scaled_dot_product_attention(q, q, q, attn_mask=mask).sum().item(), 4),
)
print(
    "CHECK sdpa_causal",
    round(F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().item(), 4),
)
print("OK")
