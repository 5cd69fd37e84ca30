# Bidirectional GRU tagger/classifier, h_n concat of last layer directions, parity with copied weights.
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(input_size=4, hidden_size=6, num_layers=2, bidirectional=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        out, h = self.gru(x)  # seq-first
        feat = torch.cat((h[-2, :, :], h[-1, :, :]), dim=1)
        return self.head(feat), out, h


model = Model()
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, size=tuple(p.shape)).astype(np.float32)))
x = torch.from_numpy(rng.randn(7, 5, 4).astype(np.float32))
logits, out, h = model(x)
print("CHECK out_shape", list(out.shape), "h_shape", list(h.shape))
print("CHECK logits_sum", round(logits.sum().item(), 4))
print("CHECK out_mean", round(out.mean().item(), 5))
loss = logits.pow(2).mean()
loss.backward()
print("CHECK grad_w_ih_l0", round(model.gru.weight_ih_l0.grad.abs().sum().item(), 4))
cell = nn.GRUCell(4, 6)
hx = torch.zeros(5, 6)
for t in range(x.size(0)):
    hx = cell(x[t], hx)
print("CHECK cell_shape", list(hx.shape))
lstm = nn.LSTM(4, 6, batch_first=True, proj_size=0)
o, (hn, cn) = lstm(x.transpose(0, 1), (torch.zeros(1, 5, 6), torch.zeros(1, 5, 6)))
print("CHECK lstm_out", list(o.shape), list(hn.shape))
rnn = nn.RNN(4, 6, nonlinearity="relu")
o2, h2 = rnn(x)
print("CHECK rnn_out", list(o2.shape))
print("OK")
