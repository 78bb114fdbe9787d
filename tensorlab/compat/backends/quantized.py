"""torch.backends.quantized: tensorlab has no quantized kernels; engine is remembered."""
supported_engines = ["none"]
engine = "none"
