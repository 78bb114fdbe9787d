"""torch.backends.openmp: tensorlab's CPU parallelism is its own thread pool, not OpenMP."""


def is_available():
    return False
