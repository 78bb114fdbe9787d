"""torch.backends.cudnn: accepted settings (tensorlab does not use cuDNN)."""
enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
