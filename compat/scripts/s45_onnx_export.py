# Export a small CNN and a Transformer encoder with torch.onnx.export (named inputs and
# outputs, a dynamic batch), check the graph with onnx.checker and run it in onnxruntime.
import io

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


def export_and_run(model, example, fresh, dynamic):
    model.eval()
    buf = io.BytesIO()
    torch.onnx.export(
        model,
        (example,),
        buf,
        input_names=["input"],
        output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}} if dynamic else None,
        opset_version=17,
        dynamo=False,  # the TorchScript-based exporter (the dynamo one needs onnxscript)
    )
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto)
    session = ort.InferenceSession(buf.getvalue())
    (got,) = session.run(["output"], {"input": fresh.numpy()})
    with torch.no_grad():
        want = model(fresh).numpy()
    dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    return proto, got, want, dims


torch.manual_seed(0)
net = Net()
net(torch.randn(16, 1, 8, 8))  # move the batch-norm statistics
rng = np.random.RandomState(0)
proto, got, want, dims = export_and_run(
    net, torch.randn(4, 1, 8, 8), torch.from_numpy(rng.randn(7, 1, 8, 8).astype(np.float32)), True
)
print("CHECK cnn_names", [i.name for i in proto.graph.input], [o.name for o in proto.graph.output])
print("CHECK cnn_dims", dims, "opset", proto.opset_import[0].version)
print("CHECK cnn_shape", list(got.shape), "close", bool(np.allclose(got, want, atol=1e-4)))

enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2)
x = torch.from_numpy(rng.randn(3, 6, 16).astype(np.float32))
fresh = torch.from_numpy(rng.randn(3, 6, 16).astype(np.float32))
proto, got, want, dims = export_and_run(enc, x, fresh, False)
print("CHECK encoder_dims", dims, list(got.shape))
print("CHECK encoder_close", bool(np.allclose(got, want, atol=1e-4)))
print("OK")
