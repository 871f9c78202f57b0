"""Named methods of the five papers; each module registers its recipes in METHODS."""
from . import hw_dpfl, kdp_fl, ldp_fl, pldp  # noqa: F401
from . import uldp  # noqa: F401
