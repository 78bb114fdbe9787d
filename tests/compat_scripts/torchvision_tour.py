"""A torchvision user's script, run unchanged under `python -m tensorlab.compat` (tests/test_compat_torchvision.py):
classification models built, run and trained a step, transforms (v1 on tensors and PIL images, v2 on uint8
tensors), FakeData through a DataLoader, box ops, roi_align's Python path, make_grid. Prints one JSON line
of results."""
import json
import sys

import torch
import torchvision
from torchvision import datasets, models, transforms
from torchvision.ops import box_iou, generalized_box_iou, roi_align, sigmoid_focal_loss
from torchvision.utils import make_grid

torch.manual_seed(0)
out = {"torch_is_tensorlab": torch.__name__ == "torch" and "tensorlab" in repr(torch), "version": torchvision.__version__}
shapes = {}
for name in sys.argv[1].split(","):
    net = getattr(models, name)(num_classes=10).eval()
    size = 224 if name.startswith(("vit", "swin", "maxvit")) else 64
    with torch.no_grad():
        shapes[name] = list(net(torch.randn(2, 3, size, size)).shape)
out["shapes"] = shapes

net = models.resnet18(num_classes=10)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
losses = []
for _ in range(5):
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
out["losses"] = losses

t1 = transforms.Compose([transforms.Resize(40), transforms.CenterCrop(32), transforms.Normalize([0.5] * 3, [0.25] * 3)])
img = torch.arange(3 * 50 * 60, dtype=torch.float32).reshape(3, 50, 60) / (3 * 50 * 60)
out["v1"] = list(t1(img).shape)
from PIL import Image  # noqa: E402
import numpy as np  # noqa: E402
pil = Image.fromarray((np.arange(40 * 50 * 3) % 256).astype("uint8").reshape(40, 50, 3))
tp = transforms.Compose([transforms.CenterCrop(32), transforms.ToTensor()])
tt = tp(pil)
out["pil"] = [list(tt.shape), float(tt[0, 0, 0]), float(tt[2, 5, 7])]
ds = datasets.FakeData(size=8, image_size=(3, 16, 16), num_classes=4, transform=transforms.ToTensor())
xb, yb = next(iter(torch.utils.data.DataLoader(ds, batch_size=4)))
out["fakedata"] = [list(xb.shape), list(yb.shape)]
b = torch.tensor([[0.0, 0, 10, 10], [5, 5, 15, 15], [0, 0, 5, 5]])
out["iou"] = box_iou(b, b).tolist()
out["giou"] = generalized_box_iou(b, b).tolist()
feat = torch.arange(2 * 16 * 16, dtype=torch.float32).reshape(1, 2, 16, 16)
out["roi_align"] = roi_align(feat, [torch.tensor([[0.0, 0, 8, 8]])], output_size=2, spatial_scale=1.0,
                             sampling_ratio=2).tolist()
out["focal"] = sigmoid_focal_loss(torch.tensor([0.5, -1.0]), torch.tensor([1.0, 0.0]), reduction="sum").item()
out["grid"] = list(make_grid(torch.rand(4, 3, 8, 8), nrow=2, padding=1).shape)
print(json.dumps(out))
