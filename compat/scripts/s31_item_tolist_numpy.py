# Metric bookkeeping idioms: .item(), .tolist(), .numpy(), detach().cpu().numpy(), float(),
# running averages, argmax accuracy, confusion matrix with bincount, sklearn-style arrays.
import numpy as np
import torch

logits = torch.tensor([[2.0, 0.5, 0.1], [0.2, 0.1, 3.0], [0.3, 2.2, 0.1], [1.0, 1.1, 0.9]])
labels = torch.tensor([0, 2, 1, 0])
probs = torch.softmax(logits, dim=1)
preds = probs.argmax(dim=1)
print("CHECK preds", preds.tolist(), type(preds.tolist()[0]).__name__)
acc = (preds == labels).float().mean().item()
print("CHECK acc", acc, type(acc).__name__)
print(
    "CHECK correct", (preds == labels).sum().item(), type((preds == labels).sum().item()).__name__
)
conf = torch.bincount(labels * 3 + preds, minlength=9).reshape(3, 3)
print("CHECK confusion", conf.tolist())
p_np = probs.detach().cpu().numpy()
print("CHECK np", p_np.dtype, p_np.shape, np.round(p_np.sum(1), 5).tolist())
print("CHECK np_argmax", np.argmax(p_np, axis=1).tolist())
top2 = probs.topk(2, dim=1)
print("CHECK top2", top2.indices.tolist(), [[round(v, 4) for v in r] for r in top2.values.tolist()])
loss = torch.nn.functional.cross_entropy(logits, labels)
running = 0.0
for i in range(3):
    running += loss.item()
print("CHECK running", round(running / 3, 5), round(float(loss), 5))
print(
    "CHECK scalar_types",
    type(torch.tensor(1).item()).__name__,
    type(torch.tensor(1.5).item()).__name__,
    type(torch.tensor(True).item()).__name__,
    torch.tensor([7]).item(),
)
print("CHECK tolist_scalar", torch.tensor(2.5).tolist(), torch.tensor([[1, 2]]).tolist())
print("CHECK int_float", int(torch.tensor(3.7)), float(torch.tensor([2])), bool(torch.tensor(0.0)))
print("CHECK index_item", logits[1, 2].item(), logits.max().item(), logits.argmax().item())
hist = {"loss": [], "acc": []}
for epoch in range(2):
    hist["loss"].append(round(loss.item() * (epoch + 1), 4))
    hist["acc"].append(acc)
print("CHECK hist", hist)
arr = np.stack([t.numpy() for t in logits.unbind(0)])
print("CHECK unbind_stack", arr.shape, np.allclose(arr, logits.numpy()))
print("CHECK format", f"{loss.item():.4f}", "{:.2%}".format(acc))
t = torch.zeros(3)
t[1] = np.float64(2.5)  # a Python float subclass (np.float32 is refused by torch)
t[2] = np.int64(4)
print("CHECK np_setitem", t.tolist())
print("CHECK np_scalar_index", torch.arange(5)[np.int64(2)].item())
print("CHECK round", torch.tensor([1.2345, 2.3456]).round(decimals=2).tolist())
try:
    torch.ones(2).item()
    print("CHECK item_err none")
except RuntimeError:
    print("CHECK item_err RuntimeError")
print("OK")
