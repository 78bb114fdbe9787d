"""torch.utils.model_zoo: torch.hub's load_state_dict_from_url (as load_url) and tqdm."""
from ..hub import load_state_dict_from_url as load_url, tqdm  # noqa: F401

__all__ = ["load_url", "tqdm"]
