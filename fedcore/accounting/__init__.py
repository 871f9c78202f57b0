"""Privacy accounting: per-client ledger, RDP through dp-accounting, threat models and the
headline epsilon (:mod:`.headline`).

dp-accounting logs "failed to converge ... Excluding this order" through absl when a
subsampled-Gaussian RDP order cannot be computed. Dropping an order keeps the bound valid
(the epsilon is the minimum over the orders that remain), so those messages are silenced
here instead of reaching a user's terminal.
"""
import logging

logging.getLogger("absl").setLevel(logging.ERROR)
from .headline import (NO_PRIVACY, THREAT_MODELS, decode_epsilon, encode_epsilon, format_epsilon,
                       headline_epsilons, run_headline, threat_model_text)
from .ledger import GaussianRecord, Ledger
from .rdp import gaussian_rdp, rdp_epsilon, rdp_epsilons

__all__ = ["GaussianRecord", "Ledger", "NO_PRIVACY", "THREAT_MODELS", "decode_epsilon", "encode_epsilon",
           "format_epsilon", "gaussian_rdp", "headline_epsilons", "rdp_epsilon", "rdp_epsilons", "run_headline",
           "threat_model_text"]
