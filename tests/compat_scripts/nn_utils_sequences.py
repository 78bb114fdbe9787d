"""An ordinary PyTorch script (nothing tensorlab-specific) using torch.nn.utils: a GRU/LSTM classifier over
variable-length sequences (pad_sequence, pack_padded_sequence with enforce_sorted=False, pad_packed_sequence),
weight_norm and orthogonal parametrizations, L1 pruning, gradient clipping, parameters_to_vector and
functional_call. Weights and data come from NumPy, so the printed losses are the same under torch and under
`python -m tensorlab.compat`."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.utils.prune as prune
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import orthogonal, weight_norm
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

rng = np.random.default_rng(0)
lengths = [5, 2, 7, 4, 3, 6]
seqs = [torch.tensor(rng.standard_normal((n, 3)).astype("float32")) for n in lengths]
labels = torch.tensor([0, 1, 1, 0, 1, 0])


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 6, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(12, 6, batch_first=True)
        self.mix = nn.Linear(6, 6, bias=False)
        self.head = nn.Linear(6, 2)

    def forward(self, padded, lens):
        packed = pack_padded_sequence(padded, lens, batch_first=True, enforce_sorted=False)
        out, _ = self.gru(packed)
        out, (h, _) = self.lstm(out)
        unpacked, out_lens = pad_packed_sequence(out, batch_first=True, total_length=padded.shape[1])
        pooled = unpacked.sum(1) / out_lens.unsqueeze(1).to(unpacked.dtype)
        return self.head(torch.tanh(self.mix(pooled + h[-1])))


model = Model()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32") * 0.3))
weight_norm(model.head)
orthogonal(model.mix)
prune.l1_unstructured(model.gru, "weight_hh_l0", amount=0.3)
print("state_dict:", list(model.state_dict()))
print("parametrized:", parametrize.is_parametrized(model.head), parametrize.is_parametrized(model.mix, "weight"))

padded = pad_sequence(seqs, batch_first=True)
opt = torch.optim.Adam(model.parameters(), lr=0.02)
for step in range(6):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(padded, torch.tensor(lengths)), labels)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
    print(f"step {step} grad norm loss {norm.item():.6f}")
prune.remove(model.gru, "weight_hh_l0")
print(f"pruned zeros {int((model.gru.weight_hh_l0 == 0).sum())}")
vec = torch.nn.utils.parameters_to_vector(model.parameters())
print(f"params loss {vec.pow(2).sum().item():.6f}")
params = {k: v.detach() * 0.5 for k, v in model.named_parameters()}
out = torch.func.functional_call(model, params, (padded, torch.tensor(lengths)))
print(f"functional_call loss {nn.functional.cross_entropy(out, labels).item():.6f}")
