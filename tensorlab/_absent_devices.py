"""torch.xpu, torch.mps and torch.mtia for a runtime that has none of those devices: the probes
scripts use to pick a device answer as torch does on a machine without them (is_available()
False, device_count() 0, seeding a no-op), and anything that needs the device raises torch's kind
of error naming the backend and the device to use instead."""
from __future__ import annotations


def populate(namespace, kind, error=RuntimeError):
    """Fill a device module's namespace (module globals) with its probes and refusals."""
    def refuse(what):
        def fn(*args, **kwargs):
            raise error(f"torch.{kind}.{what}: tensorlab has no {kind.upper()} backend; use 'cuda' "
                        "(tl.cuda.is_available()) or 'cpu'")
        fn.__name__ = what
        fn.__doc__ = f"Raises: tensorlab has no {kind.upper()} backend."
        return fn

    def is_available():
        """False: tensorlab has no such backend."""
        return False

    def device_count():
        """0: no device of this kind."""
        return 0

    def is_initialized():
        """False: nothing to initialize."""
        return False

    def is_bf16_supported(including_emulation=True):
        """False: no device of this kind."""
        return False

    def manual_seed(seed):
        """A no-op, as torch's lazy seeding is when the device is absent."""

    def seed():
        """A no-op (no device generator to seed)."""

    namespace.update(is_available=is_available, device_count=device_count, is_initialized=is_initialized,
                     is_bf16_supported=is_bf16_supported, manual_seed=manual_seed, manual_seed_all=manual_seed,
                     seed=seed, seed_all=seed)
    for what in ("current_device", "set_device", "synchronize", "empty_cache", "get_device_name",
                 "get_device_properties", "get_device_capability", "memory_allocated", "max_memory_allocated",
                 "memory_reserved", "current_stream", "get_rng_state", "set_rng_state", "init",
                 "current_allocated_memory", "driver_allocated_memory", "recommended_max_memory"):
        namespace[what] = refuse(what)
