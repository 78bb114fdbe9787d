"""torch.backends.cpu: the vector instruction set torch's kernels would use (tensorlab's CPU
backend is NumPy, which picks its own at run time)."""


def get_cpu_capability():
    """'AVX512', 'AVX2' or 'DEFAULT' from the CPU's flags (Linux /proc/cpuinfo; 'DEFAULT' elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set()
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        return "DEFAULT"
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "DEFAULT"
