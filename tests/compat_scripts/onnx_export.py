"""A PyTorch script that exports a small CNN to ONNX (torch's TorchScript exporter path,
dynamo=False) with a dynamic batch axis and runs the file in onnxruntime: under tensorlab.compat
the same script writes the model with tensorlab.onnx."""
import io
import math

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        h = self.pool(torch.relu(self.bn(self.conv(x))))
        return torch.log_softmax(self.fc(h.flatten(1)), dim=-1)


model = Net()
with torch.no_grad():  # weights from a formula, not an RNG, so both runtimes hold the same model
    for i, (name, p) in enumerate(sorted(model.state_dict().items())):
        if p.dtype.is_floating_point:
            n = p.numel()
            vals = [math.sin(0.37 * k + i) * 0.3 for k in range(n)]
            p.copy_(torch.tensor(vals).reshape(p.shape))
    model.bn.running_var.abs_().add_(0.5)
model.eval()

x = torch.tensor([[math.cos(0.1 * k) for k in range(3 * 8 * 8)]]).reshape(1, 3, 8, 8).repeat(2, 1, 1, 1)
f = io.BytesIO()
torch.onnx.export(model, (x,), f, dynamo=False, input_names=["image"], output_names=["logp"],
                  dynamic_axes={"image": {0: "batch"}, "logp": {0: "batch"}})
m = onnx.load_from_string(f.getvalue())
onnx.checker.check_model(m)
print("inputs", [i.name for i in m.graph.input], "outputs", [o.name for o in m.graph.output])
print("batch dim", m.graph.input[0].type.tensor_type.shape.dim[0].dim_param)
sess = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
for batch in (2, 5):
    xb = x[:1].repeat(batch, 1, 1, 1).numpy()
    (out,) = sess.run(None, {"image": xb})
    print("batch", batch, "shape", out.shape, "row0", np.round(out[0], 4).tolist())
with torch.no_grad():
    print("matches eager", bool(np.allclose(out[0], model(x)[0].numpy(), atol=1e-5)))
