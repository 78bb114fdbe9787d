"""tl.ao (torch.ao): the quantization stubs float models carry (ao/quantization)."""
