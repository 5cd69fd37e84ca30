# Loss functions value parity on fixed inputs (module and functional forms, reductions, options).
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(0)
logits = torch.tensor(rng.randn(6, 4), dtype=torch.float32, requires_grad=True)
target = torch.tensor([0, 3, 1, 2, 1, -100])
probs = torch.sigmoid(torch.tensor(rng.randn(6, 4), dtype=torch.float32))
bt = torch.tensor(rng.rand(6, 4) > 0.5, dtype=torch.float32)
a = torch.tensor(rng.randn(6, 4), dtype=torch.float32)
b = torch.tensor(rng.randn(6, 4), dtype=torch.float32)


def chk(name, fn):
    try:
        v = fn()
        print("CHECK", name, np.round(np.asarray(v.detach().tolist()), 4).tolist())
    except Exception as e:
        print("CHECK", name, "ERROR", type(e).__name__)


chk("ce", lambda: nn.CrossEntropyLoss()(logits, target))
chk("ce_ls", lambda: nn.CrossEntropyLoss(label_smoothing=0.1)(logits, target))
chk("ce_w", lambda: F.cross_entropy(logits, target, weight=torch.tensor([1.0, 2.0, 0.5, 1.0])))
chk("ce_none", lambda: F.cross_entropy(logits, target, reduction="none"))
chk("ce_probs", lambda: F.cross_entropy(logits, F.softmax(a, dim=1)))
chk(
    "ce_3d",
    lambda: F.cross_entropy(
        logits.view(2, 3, 4).transpose(1, 2), torch.tensor([[0, 1, 2], [3, 2, 1]])
    ),
)
chk("nll", lambda: F.nll_loss(F.log_softmax(logits, 1), target, ignore_index=-100))
chk("mse", lambda: nn.MSELoss()(a, b))
chk("mse_sum", lambda: F.mse_loss(a, b, reduction="sum"))
chk("l1", lambda: nn.L1Loss()(a, b))
chk("smoothl1", lambda: nn.SmoothL1Loss(beta=0.5)(a, b))
chk("huber", lambda: nn.HuberLoss(delta=0.7)(a, b))
chk("bce", lambda: nn.BCELoss()(probs, bt))
chk("bce_w", lambda: F.binary_cross_entropy(probs, bt, weight=torch.ones(4) * 2))
chk("bcel", lambda: nn.BCEWithLogitsLoss(pos_weight=torch.full((4,), 3.0))(a, bt))
chk("kl", lambda: nn.KLDivLoss(reduction="batchmean")(F.log_softmax(a, 1), F.softmax(b, 1)))
chk(
    "kl_logt",
    lambda: F.kl_div(
        F.log_softmax(a, 1), F.log_softmax(b, 1), reduction="batchmean", log_target=True
    ),
)
chk("cos_emb", lambda: nn.CosineEmbeddingLoss(margin=0.1)(a, b, torch.tensor([1, -1, 1, -1, 1, 1])))
chk(
    "margin_rank",
    lambda: nn.MarginRankingLoss(margin=0.2)(
        a[:, 0], b[:, 0], torch.tensor([1, -1, 1, -1, 1, 1.0])
    ),
)
chk("triplet", lambda: nn.TripletMarginLoss(margin=1.0)(a, b, a.flip(0)))
chk("hinge", lambda: nn.HingeEmbeddingLoss()(a, torch.sign(b)))
chk("softmargin", lambda: nn.SoftMarginLoss()(a, torch.sign(b)))
chk("multilabel_sm", lambda: nn.MultiLabelSoftMarginLoss()(a, bt))
chk("multimargin", lambda: nn.MultiMarginLoss()(logits, torch.tensor([0, 3, 1, 2, 1, 0])))
chk("poisson", lambda: nn.PoissonNLLLoss()(a, b.abs()))
chk("gauss", lambda: nn.GaussianNLLLoss()(a, b, torch.ones(6, 4)))
chk("cos_sim", lambda: F.cosine_similarity(a, b, dim=1))
chk("pdist", lambda: F.pairwise_distance(a, b))
chk(
    "ctc",
    lambda: F.ctc_loss(
        F.log_softmax(torch.tensor(rng.randn(8, 2, 5), dtype=torch.float32), 2),
        torch.tensor([[1, 2, 3], [2, 2, 4]]),
        torch.tensor([8, 7]),
        torch.tensor([3, 2]),
    ),
)
loss = F.cross_entropy(logits, target)
loss.backward()
print("CHECK ce_grad_row_last", logits.grad[-1].tolist())
print("CHECK ce_grad_sum", round(logits.grad.abs().sum().item(), 4))
print("OK")
