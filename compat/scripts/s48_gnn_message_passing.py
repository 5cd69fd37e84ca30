# A small graph neural network (GCN / GraphSAGE-style message passing) written with
# index_add_, scatter_reduce, index_select and sparse-free degree normalisation.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(0)
num_nodes, feat = 12, 6
edges = rng.randint(0, num_nodes, size=(2, 40))
edge_index = torch.tensor(edges, dtype=torch.long)
x = torch.tensor(rng.randn(num_nodes, feat), dtype=torch.float32)
labels = torch.tensor(rng.randint(0, 3, size=num_nodes))


def add_self_loops(edge_index, n):
    loops = torch.arange(n).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1)


class GCNLayer(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.lin = nn.Linear(i, o, bias=False)
        self.bias = nn.Parameter(torch.zeros(o))

    def forward(self, x, edge_index):
        edge_index = add_self_loops(edge_index, x.size(0))
        row, col = edge_index
        deg = torch.zeros(x.size(0)).index_add_(0, col, torch.ones(col.size(0)))
        norm = deg.pow(-0.5)
        norm[torch.isinf(norm)] = 0
        w = norm[row] * norm[col]
        h = self.lin(x)
        out = torch.zeros_like(h).index_add_(0, col, h[row] * w.unsqueeze(-1))
        return out + self.bias


class SAGELayer(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.lin_self = nn.Linear(i, o)
        self.lin_neigh = nn.Linear(i, o)

    def forward(self, x, edge_index):
        src, dst = edge_index
        msg = x.index_select(0, src)
        agg = torch.zeros(x.size(0), x.size(1)).scatter_reduce(
            0, dst.unsqueeze(-1).expand(-1, x.size(1)), msg, reduce="mean", include_self=False
        )
        mx = torch.full((x.size(0), x.size(1)), float("-inf")).scatter_reduce(
            0, dst.unsqueeze(-1).expand(-1, x.size(1)), msg, reduce="amax"
        )
        mx = torch.where(torch.isinf(mx), torch.zeros_like(mx), mx)
        return self.lin_self(x) + self.lin_neigh(agg + 0.1 * mx)


torch.manual_seed(0)
gcn = GCNLayer(feat, 8)
sage = SAGELayer(8, 3)
with torch.no_grad():
    for m in (gcn, sage):
        for i, p in enumerate(m.parameters()):
            p.copy_(
                torch.tensor(
                    np.random.RandomState(i + 7).randn(*p.shape) * 0.3, dtype=torch.float32
                )
            )
opt = torch.optim.Adam(list(gcn.parameters()) + list(sage.parameters()), lr=0.05)
for step in range(30):
    opt.zero_grad()
    h = F.relu(gcn(x, edge_index))
    logits = sage(h, edge_index)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print("CHECK loss", step, round(loss.item(), 4))
pred = logits.argmax(-1)
print("CHECK acc", (pred == labels).float().mean().item())
deg = torch.bincount(edge_index[1], minlength=num_nodes)
print("CHECK deg", deg.tolist())
uniq, inv, counts = torch.unique(edge_index[0], return_inverse=True, return_counts=True)
print("CHECK unique", uniq.tolist(), counts.tolist(), inv[:5].tolist())
adj = torch.sparse_coo_tensor(edge_index, torch.ones(edge_index.size(1)), (num_nodes, num_nodes))
dense = adj.to_dense()
print("CHECK dense", dense.sum().item(), (adj @ x).sum().round(decimals=3).item())
print("CHECK coalesce", adj.coalesce().values().sum().item(), adj.coalesce().indices().shape)
print("OK")
