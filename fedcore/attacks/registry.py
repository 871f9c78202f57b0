"""The attack registry (STYLE.md, "One shape for every attack"): each attack is one module with its
paper and equation that registers an :class:`Attack` here, named below so that listing the attacks
imports none of them (as :mod:`fedcore.mechanisms.registry` does).

>>> from fedcore.attacks import ATTACKS
>>> ATTACKS.names()
['gradient_matching', 'informed', 'inversion', 'lira', 'rmia']
>>> a = ATTACKS.get("inversion"); a.kind, a.needs, a.layer, a.game("record", 3).key
('reconstruction', ('raw', 'upload', 'aggregate'), 'linear', 'record/replace/round/conditioned x3')
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional

from ..registry import Registry

ATTACKS = Registry("attack", modules={
    "fedcore.attacks.inversion": ("inversion",), "fedcore.attacks.informed": ("informed",),
    "fedcore.attacks.matching": ("gradient_matching",), "fedcore.attacks.membership": ("lira", "rmia")})


@dataclass(frozen=True)
class Attack:
    """One registered attack. ``kind``: ``reconstruction`` (of a training image from one round's
    vector) or ``membership`` (of a record in the trained model); ``needs``: the releases it reads
    (``raw`` update, noised ``upload``, noised ``aggregate``, the trained ``model``); ``layer``:
    the model it can attack (``linear``: a first linear layer; ``any``); ``game``:
    ``(threat_model, used) -> Game``, the game it plays, whose ε the ledger answers and whose cap
    follows; ``result``: the field it adds to each client's row (a success, summed up as a rate);
    ``score``: the attack itself (a reconstruction's ``score(watch, seen)`` adds its fields
    to the rows of :class:`~.watch.AttackWatch`'s round; a membership scorer turns the signals computed
    once, ``score(signals) -> scores``)."""

    name: str
    kind: str
    equation: str
    needs: tuple[str, ...]
    layer: str
    game: Callable
    score: Optional[Callable] = None
    result: str = ""

    def reads(self, source: str, linear: bool) -> bool:
        """Whether this attack reads the vector ``source`` of a model (``linear``: its first layer is)."""
        return source in self.needs and (self.layer == "any" or linear)


def register(attack: Attack, summary: str, paper: str) -> Attack:
    """Register ``attack`` under its name (its module calls this once)."""
    return ATTACKS.register(attack.name, summary=summary, paper=paper)(attack)


def of_kind(kind: str) -> list[Attack]:
    """The registered attacks of ``kind`` (each module imported), by name."""
    return [e.obj for e in ATTACKS.entries() if e.obj.kind == kind]


@lru_cache(maxsize=1024)
def reconstruction_game(threat_model: str, used: int = 1):
    """The reconstruction game (``shared/ATTACKS.md`` §3): which of the client's own candidates did this
    round's update use? Every candidate is in the data, so the sampling is known (no amplification);
    the attacker reads one round's release; the ``used`` images are swapped for others: one user-level
    replacement under local and central DP, ``used`` record replacements under record-level DP."""
    from ..accounting.games import Game

    if threat_model == "record":
        return Game("record", "replace", "round", "conditioned", group=max(1, int(used)))
    return Game("user", "replace", "round", "conditioned")


def run_game(threat_model: str, used: int = 1):
    """The same question asked of every release of the run, the sampling secret: membership's game (a
    record in one fixed-size half or the other, the attacker holding the final model) and the whole
    run's reconstruction cap, shown beside the view's. The unit is a record under record-level DP,
    else the client's data it belongs to (local and central DP protect the whole of it)."""
    from ..accounting.games import Game

    return Game("record" if threat_model == "record" else "user", "replace", "run", "secret")
