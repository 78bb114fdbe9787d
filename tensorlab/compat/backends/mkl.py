"""torch.backends.mkl: tensorlab does not use MKL (NumPy's BLAS/LAPACK)."""
VERBOSE_OFF, VERBOSE_ON = 0, 1


def is_available():
    return False


class verbose:
    """Accepted; there is no MKL to make verbose."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
