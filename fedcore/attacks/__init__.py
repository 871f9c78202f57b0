"""What ε buys: attacks on a run's real updates and its trained model, beside the caps its ε proves.

The audits (:mod:`fedcore.audit`) ask whether *any* attacker could tell two worst-case inputs
apart. These attacks ask what a realistic attacker *gets* from what it receives under the run's
threat model (``shared/ATTACKS.md``):

- :mod:`.registry`: :data:`ATTACKS`, every attack by name: its paper, equation, kind, needs and game;
- :mod:`.attackers`: who sees what under each threat model (local, central, record-level, none);
- :mod:`.inversion`: a first linear layer's update inverted analytically (Phong et al. 2017);
- :mod:`.matching`: gradient matching for the rest (Zhu et al. 2019; Geiping et al. 2020);
- :mod:`fedcore.accounting.games`: the success a game's (ε, δ) allows (Kairouz et al. 2015; Balle et al. 2022);
- :mod:`.metrics`: re-identified, label recovered, PSNR, each beside its chance level;
- :mod:`.watch`: the per-round attack a run carries (the Playground's live view);
- :mod:`.membership`: LiRA with shadow runs trained in lockstep (Carlini et al. 2022);
- :mod:`.run`: one config attacked both ways (``python -m fedcore attack``).

A measured success above its cap beyond its interval is a bug (of the mechanism or of the
accounting), flagged like a failed audit.
"""
from .registry import ATTACKS  # noqa: E402,F401
