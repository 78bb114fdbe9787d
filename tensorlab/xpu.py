"""tl.xpu (torch.xpu): tensorlab has no XPU backend; is_available() is False, device_count() 0 (see
tensorlab/_absent_devices.py)."""
from ._absent_devices import populate as _populate

_populate(globals(), "xpu", AssertionError)
