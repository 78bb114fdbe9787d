"""pytorch/examples' time_sequence_prediction/: two stacked nn.LSTMCell layers and a Linear head in
float64 (seq.double()) learning shifted sine waves, trained with optim.LBFGS (here with
line_search_fn="strong_wolfe") over a closure that prints every evaluation's loss, then predicting
`future` steps beyond the input under torch.no_grad(). Smaller than the original (hidden 12,
8 waves of length 40, a few steps); the waves and the initial weights come from a fixed NumPy seed
(torch's and tensorlab's random generators differ), so the losses print the same on torch and under
`python -m tensorlab.compat`. The trained model goes through a torch.save / torch.load round trip
(in memory) before the last prediction."""
import argparse
import io

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

H = 12


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, H)
        self.lstm2 = nn.LSTMCell(H, H)
        self.linear = nn.Linear(H, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), H, dtype=torch.double, device=input.device)
        c_t = torch.zeros(input.size(0), H, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(input.size(0), H, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(input.size(0), H, dtype=torch.double, device=input.device)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=3, help='steps to run')
    parser.add_argument('--device', default='cpu')
    opt = parser.parse_args()
    device = torch.device(opt.device)
    np.random.seed(2)
    T, L, N = 20, 41, 8
    x = np.empty((N, L), 'int64')
    x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype('float64')
    input = torch.from_numpy(data[2:, :-1]).to(device)
    target = torch.from_numpy(data[2:, 1:]).to(device)
    test_input = torch.from_numpy(data[:2, :-1]).to(device)
    test_target = torch.from_numpy(data[:2, 1:]).to(device)
    seq = Sequence()
    seq.double()
    with torch.no_grad():
        for p in seq.parameters():
            p.copy_(torch.from_numpy(np.random.uniform(-1 / np.sqrt(H), 1 / np.sqrt(H), tuple(p.shape))))
    seq = seq.to(device)
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=6, line_search_fn="strong_wolfe")
    for i in range(opt.steps):
        print('STEP: ', i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('closure loss', f"{loss.item():.8f}")
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            future = 10
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss', f"{loss.item():.8f}")
    buf = io.BytesIO()
    torch.save(seq.state_dict(), buf)
    buf.seek(0)
    restored = Sequence().double().to(device)
    print(restored.load_state_dict(torch.load(buf)))
    with torch.no_grad():
        pred = restored(test_input, future=10)
        print('restored test loss', f"{criterion(pred[:, :-10], test_target).item():.8f}")
        print('future shape', tuple(pred.shape))
