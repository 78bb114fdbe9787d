"""A torch script whose work runs in a process started with "spawn": the child's `import torch`
must be tensorlab too."""
import multiprocessing as mp

import torch


def work(n):
    return type(torch).__name__, torch.__version__.split("+")[-1][:9], torch.arange(n).sum().item()


if __name__ == "__main__":
    for method in ("spawn", "forkserver", "fork"):
        with mp.get_context(method).Pool(1) as pool:
            print(method, pool.apply(work, (5,)))
