"""Privacy accounting: per-client ledger, RDP through dp-accounting."""
from .ledger import GaussianRecord, Ledger
from .rdp import gaussian_rdp, rdp_epsilon

__all__ = ["GaussianRecord", "Ledger", "gaussian_rdp", "rdp_epsilon"]
