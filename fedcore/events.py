"""The typed event stream of a run.

A run is an iterator of events: one :class:`RunStarted`, then one :class:`RoundEvent`
per round, then one :class:`RunFinished` (status ``finished``, ``stopped`` or
``failed``). Every event is a dataclass with a ``type`` tag and round-trips through
JSON (``to_dict`` / ``event_from_dict``); ``SCHEMA_VERSION`` is bumped on any
incompatible change (adding a field with a default is compatible). The dashboard only
renders these records.

Privacy fields (METHODS section 8, :mod:`fedcore.accounting.headline`):
``threat_model`` is ``"local"``, ``"central"``, ``"record"`` or ``"none"`` (no noise);
``epsilon_headline`` is each client's tightest rigorous epsilon for that threat model and
``epsilon_headline_run`` the run's (the largest over clients). Events stay strict JSON:
infinity (no guarantee, e.g. nothing noised) is encoded as ``None`` / JSON ``null``, never
as ``Infinity``; a finite value is a float. Use
:func:`fedcore.accounting.headline.decode_epsilon` / ``format_epsilon`` to read them.
Labelled figures that a paper states (keys of ``epsilon_accountant`` starting with
``"paper"``) are the paper's claims, shown beside the headline, never instead of it.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Union

SCHEMA_VERSION = 1


@dataclass
class MethodEvent:
    """A method-specific occurrence inside a round.

    ``kind`` examples: ``recall`` (ULDP-FED: data = reused index, similarity),
    ``selection`` (PLDP-FL C: omega and the selected ids), ``no_selection``,
    ``dropout``. ``client`` is None for server-side events.
    """

    kind: str
    client: Optional[int] = None
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AttackRow:
    """What one attacker of the run's threat model (:mod:`fedcore.attacks.attackers`) got in a round
    (:mod:`fedcore.attacks.watch`): who it is, what it receives, whether the run's ε bounds it, and per
    client the game's cap beside what each registered attack recovered (``clients``: ``{"client",
    "used", "n", "chance", "epsilon", "game", "cap", ...}``); ``shape`` the images', ``unsupported``
    why the inversion could not run ("" when it ran); ``source`` the vector it receives: ``raw``,
    ``upload`` or ``aggregate`` (:mod:`fedcore.attacks.attackers`)."""

    key: str
    who: str
    received: str
    bounded: bool
    clients: tuple = ()
    shape: tuple = ()
    unsupported: str = ""
    source: str = ""

    @classmethod
    def read(cls, stored) -> tuple["AttackRow", ...]:
        """``RoundEvent.attack`` from its stored form: rows' dicts, or a record from before AttackRow
        (``{"shape", "unsupported"?, "attackers": [...]}``; ``{}`` when not watched)."""
        if isinstance(stored, dict):
            head = {"shape": stored.get("shape", ()), "unsupported": stored.get("unsupported", "")}
            stored = [{**head, **a} for a in stored.get("attackers", ())]
        return tuple(a if isinstance(a, cls) else cls(**{**a, "clients": tuple(a.get("clients", ())),
                                                         "shape": tuple(a.get("shape", ()))}) for a in stored)


@dataclass
class RunStarted:
    """First event: the resolved config and the data split the run uses."""

    config: dict
    config_hash: str
    device: str
    num_params: int
    client_sizes: list[int]
    label_counts: list[list[int]]
    num_classes: int
    epsilon: list[float]
    delta: list[float]
    threat_model: str = ""
    caveat: str = ""          # what the headline ε does not prove ("" = a rigorous bound for what runs)
    type: str = "start"
    schema: int = SCHEMA_VERSION


@dataclass
class RoundEvent:
    """Everything the dashboard plots for one round.

    ``epsilon_spent`` is each client's cumulative epsilon under basic composition;
    ``epsilon_accountant`` holds the headline under the name of its accountant (``"pld"`` or
    ``"rdp"``) and each labelled claim, as per-client lists. ``weights`` are the
    aggregation weights actually used, aligned with ``uploaded``. ``signals`` are
    scalar per-round method signals (mean Kalman gain, mean clip threshold, ...).
    """

    round: int
    accuracy: Optional[float]
    loss: Optional[float]
    selected: list[int]
    uploaded: list[int]
    weights: list[float]
    epsilon_spent: list[float]
    epsilon_accountant: dict[str, list[float]] = field(default_factory=dict)
    events: list[MethodEvent] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    elapsed: float = 0.0
    threat_model: str = ""
    epsilon_headline: list[Optional[float]] = field(default_factory=list)
    epsilon_headline_run: Optional[float] = None
    accountant: str = ""
    """The accountant of the headline (:data:`fedcore.accounting.headline.ACCOUNTANTS`): ``"pld"`` (exact),
    ``"rdp"`` (where the PLD is not composed), ``"none"``; ``epsilon_accountant`` holds the per-client
    headline under that name. "" in records from before the field (RDP's headline)."""
    attack: tuple[AttackRow, ...] = ()
    """What the threat model's attackers recover this round, one :class:`AttackRow` each; empty when not watched."""
    aggregated: Optional[bool] = None
    """Whether the server aggregated at least one update this round (False: e.g. PLDP-FL rule C
    selected nobody, the model did not move); None in records from before the field, read as
    ``bool(uploaded)`` (:attr:`RunState.aggregated_rounds`)."""
    evaluated: Optional[bool] = None
    """Whether the test set was evaluated this round (``eval_every``: every k-th round and the last);
    False: ``accuracy`` and ``loss`` are those of the last evaluated round. None in records from
    before the field."""
    type: str = "round"
    schema: int = SCHEMA_VERSION


@dataclass
class RunFinished:
    """Last event. ``status`` is ``finished``, ``stopped`` or ``failed`` (with ``error``).
    ``elapsed`` is wall-clock seconds; ``held_s`` of them the run was paused or slowed down
    between rounds (teaching mode: :mod:`fedcore.runner.tempo`)."""

    status: str
    rounds_done: int
    elapsed: float
    final_accuracy: Optional[float] = None
    error: Optional[str] = None
    held_s: float = 0.0
    aggregated_rounds: Optional[int] = None
    """Rounds in which at least one update was aggregated (0: the model is the untrained one and
    nothing was released); None in records from before the field."""
    epsilon_pld: Optional[float] = None
    """The run's ε with its Gaussian releases composed by the PLD accountant instead of RDP
    (:meth:`fedcore.accounting.Ledger.pld_run`); None = ∞ or not computed (records from before the field)."""
    epsilon_profile: Optional[list] = None
    """``[[ε, δ], ...]``: the run's headline at several δ (:meth:`fedcore.accounting.Ledger.profile`),
    each a guarantee of the run; the attacks' caps take the smallest. None unless the run was asked for it
    (``iter_run(profile=True)``: an attacked run) and in records from before the field."""
    type: str = "end"
    schema: int = SCHEMA_VERSION


Event = Union[RunStarted, RoundEvent, RunFinished]
_TYPES = {"start": RunStarted, "round": RoundEvent, "end": RunFinished}


def to_dict(event: Event) -> dict:
    """Strict-JSON-ready dict of an event: a non-finite float (a diverged loss) becomes None.

    >>> import json
    >>> print(json.loads(json.dumps(to_dict(RunFinished("failed", 1, 0.5, float("nan"))), allow_nan=False))["final_accuracy"])
    None
    """
    return finite_json(dataclasses.asdict(event))


def finite_json(obj: Any) -> Any:
    """Strict JSON: every non-finite float inside ``obj`` becomes None, a tuple a list."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):     # a tuple (RoundEvent.attack) is a JSON list, as it reads back
        return [finite_json(v) for v in obj]
    return obj


def event_from_dict(data: dict) -> Event:
    """Inverse of :func:`to_dict`; rejects unknown schema versions."""
    if data.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"event schema {data.get('schema')!r} is not {SCHEMA_VERSION}; rerun the experiment")
    cls = _TYPES[data["type"]]
    kwargs: dict[str, Any] = dict(data)
    if cls is RoundEvent:
        kwargs["events"] = [MethodEvent(**e) for e in data.get("events", [])]
        kwargs["attack"] = AttackRow.read(data.get("attack", ()))
    return cls(**kwargs)


@dataclass(frozen=True)
class RunState:
    """What a run's events add up to so far (:func:`fold`): its start, its rounds in order and
    its end (None while it runs). The one reading of the stream's shape: the run store's
    records, the dashboard's tables and live views, the sweeps and the Ray tasks read a run
    through it, never through an event's dict keys."""

    start: Optional[RunStarted] = None
    rounds: tuple[RoundEvent, ...] = ()
    end: Optional[RunFinished] = None

    @property
    def events(self) -> list[Event]:
        """The events folded, in order."""
        return [e for e in (self.start, *self.rounds, self.end) if e is not None]

    @property
    def last_round(self) -> Optional[RoundEvent]:
        return self.rounds[-1] if self.rounds else None

    @property
    def threat_model(self) -> str:
        return (self.last_round and self.last_round.threat_model) or (self.start and self.start.threat_model) or ""

    @property
    def caveat(self) -> str:
        return self.start.caveat if self.start else ""

    @property
    def status(self) -> str:
        """``queued`` (no event yet), ``running``, then the end's ``finished | stopped | failed``."""
        return self.end.status if self.end else ("running" if self.start or self.rounds else "queued")

    @property
    def rounds_done(self) -> int:
        return self.end.rounds_done if self.end else (self.last_round.round if self.rounds else 0)

    @property
    def aggregated_rounds(self) -> int:
        """Rounds in which at least one update was aggregated: the end's count, else the rounds'
        (a round from before ``RoundEvent.aggregated`` counts when it has uploads)."""
        if self.end is not None and self.end.aggregated_rounds is not None:
            return self.end.aggregated_rounds
        return sum(bool(r.uploaded) if r.aggregated is None else r.aggregated for r in self.rounds)

    @property
    def final_accuracy(self) -> Optional[float]:
        """The end's final accuracy, else the last one a round measured."""
        if self.end is not None and self.end.final_accuracy is not None:
            return self.end.final_accuracy
        return next((r.accuracy for r in reversed(self.rounds) if r.accuracy is not None), None)

    def record(self) -> dict:
        """The run record's fields this state settles. The run store applies the state of each
        event it appends, ``fold(RunState(), event).record()``: a later event's overwrite an earlier's."""
        fields: dict[str, Any] = {"status": self.status}
        if self.start:
            fields["device"] = self.start.device
        if self.rounds or self.end:
            fields["rounds_done"] = self.rounds_done
        if self.final_accuracy is not None:
            fields["final_accuracy"] = self.final_accuracy
        if self.end:
            fields.update(error=self.end.error, elapsed=self.end.elapsed)
        return fields


def fold(state: RunState, event: Event) -> RunState:
    """``state`` after ``event``, a new state (pure: ``state`` is unchanged).

    >>> s = fold(RunState(), RunFinished("finished", 3, 1.5, 0.9))
    >>> s.status, s.final_accuracy, RunState().status
    ('finished', 0.9, 'queued')
    """
    if isinstance(event, RunStarted):
        return dataclasses.replace(state, start=event)
    if isinstance(event, RoundEvent):
        return dataclasses.replace(state, rounds=(*state.rounds, event))
    if isinstance(event, RunFinished):
        return dataclasses.replace(state, end=event)
    raise TypeError(f"{type(event).__name__} is not a run event")


def summarize(events: Iterable[Event], state: RunState = RunState()) -> RunState:
    """:func:`fold` typed events (in order) into ``state``: how a sweep and a Ray task read their run."""
    return functools.reduce(fold, events, state)


def replay(stored: Iterable[dict], state: RunState = RunState()) -> RunState:
    """:func:`summarize` stored event dicts (:func:`to_dict`'s), each read once by :func:`event_from_dict`."""
    return summarize(map(event_from_dict, stored), state)
