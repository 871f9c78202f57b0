"""``audit_run``: the three privacy numbers of one configuration, side by side.

1. the paper's claimed eps (a labelled figure the mechanism's ledger carries, if any);
2. the accountant's eps: the rigorous upper bound (dp-accounting RDP, or pure-eps
   composition) for the same scope;
3. the audited eps: an empirical *lower* bound with its confidence.

If the lower bound exceeds the accountant's eps, the accountant (or the code) is wrong; if
it exceeds the paper's claim, the claim does not hold for what runs. A lower bound below
both says nothing is wrong *that this attack can see*: it is evidence, not a proof. An audit
that tests outside the premise a claim rests on (LDP-FL's per-weight eps assumes shuffled
reports; its one-report audit draws them un-shuffled) says so in its verdict
(``AuditResult.premise``) and never calls that claim refuted.

Which audit (``kind="auto"``), by the mechanism's threat model:

- local: :func:`fedcore.audit.distinguish.distinguish`, ONE report (one client, one
  round) with ``trials`` draws per input; the accountant's and the paper's figures are
  those of that report;
- central / user-level (and a run without noise): a one-run canary audit with canary
  clients (:func:`fedcore.audit.canary.canary_run`), scope the whole run's final model;
- record-level (DP-SGD): the same with canary records.

A pure engine function (no Streamlit); the frontier can call it per point.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

from ..errors import ConfigError
from ..events import finite_json
from .stats import CONFIDENCE

KINDS = ("auto", "distinguishing", "canary")


@dataclass(frozen=True)
class AuditResult:
    """The three numbers and how they were obtained (``to_dict`` for JSON; inf -> None)."""

    method: str
    mechanism: str
    threat_model: str
    kind: str
    scope: str
    delta: float
    paper_claim: Optional[float]
    paper_claim_label: str
    accountant_epsilon: float
    accountant_basis: str
    audited_epsilon: float
    confidence: float
    audited_estimate: Optional[float]
    estimate_basis: str
    ceiling: Optional[float]
    seconds: float
    settings: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)
    premise: str = ""
    """Non-empty when the audit tests outside the premise the paper's claim rests on (LDP-FL:
    un-shuffled reports, while its per-weight eps assumes shuffling): what lies outside."""

    @property
    def accountant_violated(self) -> bool:
        """The lower bound exceeds the accountant's upper bound: the accounting or the code is wrong."""
        return self.audited_epsilon > self.accountant_epsilon

    @property
    def outside_premise(self) -> bool:
        """The audit tests outside the premise of the paper's claim, so it can neither refute nor confirm it."""
        return bool(self.premise)

    @property
    def claim_exceeded(self) -> bool:
        """The lower bound exceeds the paper's claimed eps (whatever the claim's premise)."""
        return self.paper_claim is not None and self.audited_epsilon > self.paper_claim

    @property
    def claim_refuted(self) -> bool:
        """The lower bound exceeds the paper's claimed eps for the same scope and under the
        claim's own premise (never when the audit tests outside it)."""
        return self.claim_exceeded and not self.outside_premise

    def verdict(self) -> str:
        """One sentence (no final full stop); an audit outside the paper's premise says so in it."""
        if self.accountant_violated:
            text = "VIOLATION: the audited lower bound exceeds the accountant's epsilon"
        elif self.claim_refuted:
            text = "the paper's claim does not hold: the audited lower bound exceeds it"
        elif self.claim_exceeded:      # only outside the claim's premise: the claim itself is not tested
            text = ("the audited lower bound exceeds the paper's claimed epsilon, not the accountant's; "
                    "the claim is neither refuted nor confirmed")
        else:
            text = "consistent: the audited lower bound is below the accountant's epsilon"
        return f"{text}; tested outside the paper's premise: {self.premise}" if self.premise else text

    def to_dict(self) -> dict:
        out = asdict(self)
        for key in ("paper_claim", "accountant_epsilon", "audited_epsilon", "audited_estimate", "ceiling"):
            v = out[key]
            out[key] = None if v is None or math.isinf(v) else float(v)
            if v is not None and math.isinf(v):
                out[key + "_infinite"] = True
        out.update(accountant_violated=self.accountant_violated, claim_refuted=self.claim_refuted,
                   claim_exceeded=self.claim_exceeded, outside_premise=self.outside_premise,
                   verdict=self.verdict())
        return finite_json(out)


def threat_model_of(cfg) -> str:
    """The configured mechanism's threat model under its options (its own declaration)."""
    from ..mechanisms import MECHANISMS

    cls = MECHANISMS.get(cfg.privacy.mechanism)
    return cls.threat_model_for(cls.parse_options(cfg.privacy.mechanism_options, "privacy.mechanism_options"))


def paper_claim(claims: dict) -> tuple[Optional[float], str]:
    """The paper's figure among a ledger's labelled views: a label naming the paper, else
    LDP-FL's per-weight view (the paper's claim that rests on shuffling)."""
    for label, value in claims.items():
        if label.lower().startswith("paper"):
            return value, label
    for label, value in claims.items():
        if "with shuffling" in label:
            return value, label
    return None, ""


def audit_run(cfg, *, trials: int = 20000, canaries: int = 200, kind: str = "auto", unit: Optional[str] = None,
              dim: Optional[int] = None, client: Optional[int] = None, seed: int = 0,
              confidence: float = CONFIDENCE) -> "AuditResult":
    """Audit the privacy of ``cfg`` (a validated :class:`~fedcore.config.RunConfig`).

    ``trials``: draws per input (distinguishing audit). ``canaries``: canaries in the one
    run (half inserted). ``kind``: auto | distinguishing | canary. ``unit``: client |
    record (canary audit; default from the threat model). ``dim``: parameters of the
    audited report (default the model's). ``client``: whose budget is audited (default
    the largest).
    """
    from .canary import canary_run
    from .distinguish import PROBES

    if kind not in KINDS:
        raise ConfigError("kind", kind, "must be one of: " + ", ".join(KINDS))
    if not 0.5 <= confidence < 1:
        raise ConfigError("confidence", confidence, "must be in [0.5, 1)")
    if client is not None and not 0 <= client < cfg.num_clients:
        raise ConfigError("client", client, f"must be in [0, {cfg.num_clients - 1}]")
    threat = threat_model_of(cfg)
    name = cfg.privacy.mechanism
    if kind == "auto":
        kind = "distinguishing" if threat == "local" and name in PROBES else "canary"
    if kind == "distinguishing":
        if name not in PROBES:
            raise ConfigError("privacy.mechanism", name, "has no distinguishing probe; audit it with --kind canary "
                              "(probes: " + ", ".join(sorted(PROBES)) + ")")
        return _distinguishing(cfg, threat, trials=trials, dim=dim, client=client, seed=seed, confidence=confidence)
    unit = unit or ("record" if threat == "record" else "client")
    audit = canary_run(cfg, unit=unit, canaries=canaries, seed=seed, confidence=confidence, client=client)
    claim, label = paper_claim(audit.claims)
    accountant, basis = audit.accountant_epsilon, audit.accountant_basis
    if unit == "client" and threat == "record":      # a record-level guarantee says nothing about a whole client
        accountant = math.inf
        basis = (f"none at this scope: the ledger's {audit.accountant_epsilon:.4g} protects one training record, "
                 "not a whole client (group privacy over all its records)")
        claim, label = None, ""
    scope = (f"whole run, final model only: one {'client' if unit == 'client' else 'training record'} "
             f"({audit.canaries} canaries, {audit.inserted} inserted)")
    return AuditResult(
        method=cfg.method, mechanism=name, threat_model=threat, kind=f"canary ({unit})", scope=scope,
        delta=audit.delta, paper_claim=claim, paper_claim_label=label,
        accountant_epsilon=accountant, accountant_basis=basis,
        audited_epsilon=audit.epsilon_lower, confidence=confidence, audited_estimate=audit.epsilon_estimate,
        estimate_basis="Andrew et al. 2024: Gaussian fit to the canary cosines (an estimate, not a bound)",
        ceiling=None, seconds=audit.seconds, settings={"canaries": canaries, "unit": unit, "seed": seed},
        detail={"guesses": audit.guesses, "correct": audit.correct, "mean_cosine_in": audit.mean_cosine_in,
                "mean_cosine_out": audit.mean_cosine_out, "final_accuracy": audit.final_accuracy,
                "ledger_views": audit.claims})


def two_point_premise(options) -> str:
    """Why an audit of LDP-FL's two-point reports lies outside the paper's premise: it draws them
    un-shuffled (one report the server can link to its client), while the paper's per-weight eps
    assumes the weights are split and shuffled. Said whether the run shuffles or not."""
    run = ("the run shuffles, but this audit draws one client's report un-shuffled" if options.shuffle
           else "the run itself does not shuffle (shuffle=False), and neither does this audit")
    return (f"LDP-FL's per-weight eps assumes shuffled reports the server cannot link to a client; {run}, "
            "so it measures what one linkable report leaks")


def one_report(cfg, client: Optional[int] = None):
    """What a one-report audit of ``cfg``'s local mechanism needs: ``(context, client, mechanism
    class, parsed options, audited options)``; ``client`` defaults to the largest budget."""
    from ..engine.setup import prepare
    from ..mechanisms import MECHANISMS
    from .distinguish import audit_options

    name = cfg.privacy.mechanism
    s = prepare(cfg)
    eps = cfg.privacy.epsilons(cfg.num_clients)
    who = max(range(cfg.num_clients), key=lambda i: eps[i]) if client is None else client
    cls = MECHANISMS.get(name)
    parsed = cls.parse_options(cfg.privacy.mechanism_options, "privacy.mechanism_options")
    return s.ctx, who, cls, parsed, audit_options(name, parsed)


def _distinguishing(cfg, threat, *, trials, dim, client, seed, confidence) -> AuditResult:
    from .distinguish import PROBES, distinguish

    name = cfg.privacy.mechanism
    if dim is not None and dim < 1:
        raise ConfigError("dim", dim, "must be an integer >= 1")
    ctx, who, cls, parsed, options = one_report(cfg, client)
    r = distinguish(cls, options, ctx, PROBES[name], name=name, client=who, trials=trials, seed=seed, dim=dim,
                    confidence=confidence)
    claim, label = paper_claim(r.claims)
    premise, report = "", "one report"
    if name == "two_point":       # the claim rests on shuffling, which the audit of one report sets aside
        claim, label = cfg.privacy.epsilons(cfg.num_clients)[who], "per-weight eps with shuffling (LDP-FL); needs reports the server cannot link"
        premise = two_point_premise(parsed)
        report = "one un-shuffled report"
    t = r.test
    return AuditResult(
        method=cfg.method, mechanism=name, threat_model=threat, kind="distinguishing",
        scope=f"{report}: client {who}'s upload in one round ({r.dim} parameters)", premise=premise,
        delta=r.delta, paper_claim=claim, paper_claim_label=label, accountant_epsilon=r.accountant_epsilon,
        accountant_basis=r.accountant_basis, audited_epsilon=r.epsilon_lower, confidence=confidence,
        audited_estimate=None, estimate_basis="",
        ceiling=r.ceiling, seconds=r.seconds, settings={"trials": trials, "dim": r.dim, "client": who, "seed": seed},
        detail={"inputs": r.inputs, "fpr": t.fpr, "fnr": t.fnr, "fpr_upper": t.fpr_upper, "fnr_upper": t.fnr_upper,
                "threshold": t.threshold, "draws": t.draws, "ledger_claims": r.claims,
                "estimate_at_50pct_confidence": r.epsilon_estimate})


def audit_release(name: str, epsilon: float, delta: float = 1e-5, settings: Optional[dict] = None,
                  trials: int = 20000, seed: int = 0, confidence: float = CONFIDENCE):
    """Distinguishing audit of the Mechanisms page's release of one number (a one-parameter
    client, :func:`fedcore.teaching.build_mechanism`): a :class:`~fedcore.audit.distinguish.ReportAudit`."""
    from .. import teaching
    from .distinguish import PROBES, audit_options, distinguish

    if name not in PROBES:
        raise ConfigError("mechanism", name, "has no distinguishing probe; choose one of: " + ", ".join(sorted(PROBES)))
    mech = teaching.build_mechanism(name, [float(epsilon)], float(delta), settings)
    return distinguish(type(mech), audit_options(name, mech.options), mech.ctx, PROBES[name], name=name, client=0,
                       trials=trials, seed=seed, confidence=confidence)
