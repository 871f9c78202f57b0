"""The order in which a run's round events leave (:func:`fedcore.engine.loop.iter_run`).

While the ledger still computes round t's RDP curves beside the run (:mod:`fedcore.accounting.rdp_queue`),
event t waits with the figures round t left (:meth:`~fedcore.accounting.ledger.Ledger.snapshot`) and the
next rounds train; events leave in order, each once its curves are composed (the same numbers), at most
:data:`AHEAD_ROUNDS` rounds and about :data:`AHEAD_SECONDS` behind the training. With an attack watch the
events of rounds that close in quick succession leave together with their attack records
(:meth:`~fedcore.attacks.watch.AttackWatch.flush`).
"""
from __future__ import annotations

import math
import time
from collections import deque
from typing import Iterator, Optional

from ..accounting import encode_epsilon
from ..events import RoundEvent

AHEAD_ROUNDS = 32
"""At most this many rounds' events wait for their RDP curves while later rounds train; past it the
loop waits for the oldest."""
AHEAD_SECONDS = 1.0
"""Nor does an event wait longer than this while later rounds train: a live view stays within about a
second of the training, and a Stop takes effect within about as long (the rounds trained meanwhile
still come out)."""


def fill(event: RoundEvent, figures, t_start: float) -> RoundEvent:
    """``event`` with the privacy figures of ``figures`` (the ledger, or the snapshot its round left)."""
    headline = figures.headline()
    event.epsilon_spent, event.epsilon_accountant = figures.basic.tolist(), figures.views(headline)
    event.threat_model, event.accountant = figures.threat_model, figures.accountant()
    event.epsilon_headline = [e if math.isfinite(e) else None for e in headline.tolist()]   # encode_epsilon's form
    event.epsilon_headline_run = encode_epsilon(float(headline.max()))
    event.elapsed = time.perf_counter() - t_start
    return event


class Outbox:
    """The round events of one run on their way out, in order (module doc)."""

    def __init__(self, ledger, watcher, t_start: float, may_go_ahead: bool):
        self.ledger, self.watcher, self.t_start, self.may_go_ahead = ledger, watcher, t_start, may_go_ahead
        self.waiting: deque = deque()    # (event, its round's figures, when it was built), oldest first
        self.held: list[RoundEvent] = []  # complete, not yet released
        self.consumer_s: Optional[float] = None   # how long the consumer kept the last events released

    def post(self, event: RoundEvent, t0: float, last: bool, done: Optional[float] = None) -> None:
        """Round ``event`` (its training began at ``t0``; its own work ended at ``done``, default now: a round
        posted later, :func:`~fedcore.engine.loop.pipelined`, with ``t0`` moved by its ledger entry's time)
        joins the queue, with its figures now."""
        if self.may_go_ahead and self.ledger.pending():       # its figures now, its curves when they are back
            self.waiting.append((event, self.ledger.snapshot(), time.perf_counter()))
            waited = self.settle(wait=True, keep=0 if last else AHEAD_ROUNDS, lag=0.0 if last else AHEAD_SECONDS)
            event.seconds += (done - t0) if done is not None else time.perf_counter() - t0 - waited
        else:                                                 # every curve is in: the rounds before it too
            self.settle(wait=True)
            if self.watcher is not None:
                self.watcher.close(self.ledger)
            event.seconds = (done if done is not None else time.perf_counter()) - t0
            self.held.append(fill(event, self.ledger, self.t_start))

    def due(self, last: bool) -> bool:
        """Whether the held events should leave now (always without a watch)."""
        return self.watcher is None or last or self.watcher.due(self.consumer_s)

    def settle(self, wait: bool, keep: int = 0, lag: float = 0.0) -> float:
        """Move the waiting events whose figures are complete to ``held``, in order; with ``wait``, wait for
        all but the newest ``keep`` of those built less than ``lag`` seconds ago. Returns the seconds spent
        waiting (added to each waited event's own)."""
        waited = 0.0
        while self.waiting:
            event, figures, built = self.waiting[0]
            must = wait and (len(self.waiting) > keep or time.perf_counter() - built >= lag)
            t = time.perf_counter()
            if not self.ledger.settle(figures, wait=must):
                break
            if must:
                event.seconds += time.perf_counter() - t
                waited += time.perf_counter() - t
            self.held.append(fill(event, figures, self.t_start))
            self.waiting.popleft()
        return waited

    def release(self) -> Iterator[RoundEvent]:
        """The held events, each with its round's attack record (:meth:`AttackWatch.flush`)."""
        t = time.perf_counter()
        records = self.watcher.flush() if self.watcher is not None and self.held else [() for _ in self.held]
        if self.held:
            self.held[-1].seconds += time.perf_counter() - t
        events, self.held = list(self.held), []
        waited = 0.0
        for event, record in zip(events, records):
            event.attack = record
            t = time.perf_counter()
            yield event
            waited += time.perf_counter() - t
        self.consumer_s = waited

    def flush(self) -> Iterator[RoundEvent]:
        """Every event still waiting or held, in order (a stop, the end, a failure)."""
        self.settle(wait=True)
        yield from self.release()
