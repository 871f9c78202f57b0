"""Who sees what under each threat model (``shared/ATTACKS.md`` §1), named on screen: :data:`ATTACKERS`,
each an :class:`~fedcore.events.AttackRow` before its round fills it (``received``, in words, and
``source``: the vector it gets; ``bounded``: whether the run's headline ε for that threat model bounds it,
a cap of 1 where not). LDP-FL's uploads are also shuffled: the attacker gets the mixed reports, and the
headline does not count on the shuffle.
"""
from __future__ import annotations

from ..events import AttackRow as Attacker   # an attacker is the round's row it fills, before it fills any

ATTACKERS: dict[str, tuple[Attacker, ...]] = {
    "none": (Attacker("server", "the server", "each client's exact update (nothing is noised)", False, source="raw"),),
    "local": (Attacker("anyone", "anyone, the server included", "the client's noised upload", True, source="upload"),),
    "central": (
        Attacker("outsider", "an outsider (or the next round's clients)",
                 "only the noised aggregate: the change of the global model", True, source="aggregate"),
        Attacker("trusted_server", "the trusted server",
                 "the client's raw update: the attack succeeds by design, since that is what trusted means",
                 False, source="raw"),
    ),
    "record": (Attacker("server_dpsgd", "the server",
                        "the client's update after per-step clipping and noise (DP-SGD)", True, source="raw"),),
}


def attackers_for(threat_model: str) -> tuple[Attacker, ...]:
    """The attackers of ``threat_model``, the one its headline ε bounds first."""
    return ATTACKERS.get(threat_model, ATTACKERS["none"])
