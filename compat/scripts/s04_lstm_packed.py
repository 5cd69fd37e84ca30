# LSTM sequence classifier over variable-length sequences with pad_sequence + pack_padded_sequence.
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(1)
VOCAB, EMB, HID, NCLS = 20, 16, 32, 2


def make_batch(n):
    seqs, labels = [], []
    for _ in range(n):
        L = int(torch.randint(3, 12, (1,)))
        s = torch.randint(1, VOCAB, (L,))
        seqs.append(s)
        labels.append(int((s == 5).any()))
    return seqs, torch.tensor(labels)


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMB, padding_idx=0)
        self.lstm = nn.LSTM(EMB, HID, num_layers=2, batch_first=True, dropout=0.1)
        self.fc = nn.Linear(HID, NCLS)

    def forward(self, x, lengths):
        emb = self.embedding(x)
        packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, (h_n, c_n) = self.lstm(packed)
        out, out_lens = pad_packed_sequence(packed_out, batch_first=True)
        return self.fc(h_n[-1]), out, out_lens


model = LSTMClassifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
crit = nn.CrossEntropyLoss()
seqs, labels = make_batch(64)
lengths = torch.tensor([len(s) for s in seqs])
padded = pad_sequence(seqs, batch_first=True, padding_value=0)
print("CHECK padded_shape", list(padded.shape))
losses = []
for step in range(30):
    opt.zero_grad()
    logits, out, out_lens = model(padded, lengths)
    loss = crit(logits, labels)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    losses.append(loss.item())
assert torch.equal(out_lens, lengths)
assert out.shape[:2] == padded.shape
print("CHECK lstm_param_names", ",".join(n for n, _ in model.lstm.named_parameters()))
print("loss", losses[0], losses[-1])
assert losses[-1] < losses[0]
print("OK")
