# Embeddings: padding_idx, normalize, cosine sim matrix, topk retrieval, EmbeddingBag, from_pretrained.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(0)
W = torch.tensor(rng.randn(10, 4), dtype=torch.float32)
emb = nn.Embedding.from_pretrained(W, freeze=True, padding_idx=0)
print("CHECK frozen", emb.weight.requires_grad)
ids = torch.tensor([[1, 2, 0], [3, 0, 0]])
e = emb(ids)
print("CHECK emb_shape", list(e.shape))
mask = (ids != 0).unsqueeze(-1).float()
mean = (e * mask).sum(1) / mask.sum(1).clamp(min=1)
print("CHECK masked_mean", np.round(mean.numpy(), 4).tolist())
n = F.normalize(W, p=2, dim=1)
sim = n @ n.T
sim.fill_diagonal_(-1)
vals, idx = sim.topk(3, dim=1)
print("CHECK retrieval", idx[:3].tolist())
print(
    "CHECK cos",
    round(F.cosine_similarity(W[0:1], W[1:2]).item(), 4),
    F.cosine_similarity(W.unsqueeze(1), W.unsqueeze(0), dim=-1).shape,
)
print("CHECK cdist", round(torch.cdist(W[:3], W[3:6]).sum().item(), 3))
print(
    "CHECK norm",
    round(W.norm(dim=1).sum().item(), 3),
    round(torch.norm(W).item(), 3),
    round(W.norm(p=1).item(), 3),
)
bag = nn.EmbeddingBag(10, 4, mode="mean")
with torch.no_grad():
    bag.weight.copy_(W)
print(
    "CHECK bag",
    np.round(bag(torch.tensor([1, 2, 4, 5]), torch.tensor([0, 2])).detach().numpy(), 4).tolist(),
)
trainable = nn.Embedding(10, 4, padding_idx=0, max_norm=None)
out = trainable(ids).sum()
out.backward()
print("CHECK pad_grad_zero", trainable.weight.grad[0].abs().sum().item())
sparse_emb = nn.Embedding(10, 4, sparse=False)
print("CHECK emb_repr", repr(emb))
print("OK")
