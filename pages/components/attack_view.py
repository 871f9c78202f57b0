"""The Playground's live attack view: per round, each client's digit beside what the attacker
recovers at that client's ε, and how often it found it so far, beside chance and the cap ε proves.

Renders ``RoundEvent.attack`` records (:mod:`fedcore.attacks.watch`) and their per-client
summary (:func:`fedcore.attacks.run.per_client`); computes nothing itself. In Presentation mode
(:func:`beside_accuracy`) the same view, compact (one sentence, the images, the success chart), sits
level with the accuracy chart; with Plain words on, it uses no term of art and says each cap as odds
(:func:`fedcore.accounting.words.odds_sentence`).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from fedcore.accounting.words import attacker_certainty, odds_sentence, people_percent, run_delta
from fedcore.attacks.registry import of_kind
from fedcore.attacks.run import per_client
from fedcore.attacks.watch import decode_image
from fedcore.runner import ACTIVE
from fedcore.runner.record import JobRecord

from . import form, pacing, plot, presentation, state

PLAIN_WHO = {
    "server": "The server sees each client's exact update: nothing is noised.",
    "anyone": "Anyone, the server included, sees each client's noised upload.",
    "outsider": "An outsider sees only the noised average of all uploads (the change of the shared model).",
    "trusted_server": "The trusted server sees each client's exact update: that is what trusting it means.",
    "server_dpsgd": "The server sees each client's update after every training step was clipped and noised (DP-SGD).",
}


TWO_ATTACKERS = ("The bars and the ✓/✗ come from two different attackers. The ✓/✗: one that rebuilds the image "
                 "from the update alone. The bars: one that already knows all of the client's images and only has "
                 "to say which of them the update was computed from, the strongest attacker there is; the dark "
                 "tick is the most the client's ε allows even that one, the grey tick a blind guess.")
"""With Plain words on: the sentence that says where the bars come from, without its terms of art."""


PRESENT_SENTENCE = "image left, the attacker's rebuild right, the client's ε for one upload under them; bars: how often it found it; dark tick: the most ε allows."
"""Presentation's one sentence after who the attacker is (:data:`SHORT_WHO`)."""
SHORT_WHO = {"server": "The server sees each exact update", "anyone": "Anyone sees each noised upload",
             "outsider": "An outsider sees the noised average", "trusted_server": "The trusted server sees each exact update",
             "server_dpsgd": "The server sees each clipped, noised update"}


def attack_panel(run_id: str, key: str = "pg") -> None:
    """The attack view of run ``run_id`` (polls while it runs)."""
    record = state.manager().store.get_job(run_id)
    active = record is not None and record.status in ACTIVE
    pacing.polling_fragment(_panel, pacing.poll_seconds(2.0) if active else None)(run_id, key)


def shown(run) -> bool:
    """Whether run ``run``'s attack view has a success chart to draw (an attacker that had to pick one
    image among several): then Presentation draws it level with the accuracy chart."""
    return bool(_guessed(run))


def beside_accuracy(record: JobRecord, run, key: str) -> None:
    """Presentation: the attack view, compact, beside the accuracy chart (inside its polling fragment)."""
    records = [r.attack for r in run.rounds if r.attack]
    chosen = records[-1][0]
    st.markdown(f"**{SHORT_WHO.get(chosen.key, chosen.who)}:** {PRESENT_SENTENCE}")
    _images(chosen, run.last_round.round, key, record.id, caption=False)
    _success(records, chosen, key, record.id, form.student_mode(), present=True, delta=run_delta(run))


def epsilon_line(run, spent) -> str:
    """Presentation: which ε the images carry (one upload's, the game's) against the run's, and the lowest
    of them as odds (:func:`~fedcore.accounting.words.odds_sentence`)."""
    stats = _guessed(run)
    low = min(stats, key=lambda c: stats[c]["epsilon"] if stats[c]["epsilon"] is not None else float("inf"))
    eps = stats[low]["epsilon"]
    said = odds_sentence(eps, run_delta(run))
    return (f"**ε under each image:** that client's, for one upload; **ε spent** ({_eps(spent)}): the whole run's, "
            f"for the client that spends most. **Client {low}'s ε {_eps(eps)} in odds:** {said}.")


def _guessed(run) -> dict:
    """The first attacker's success per client so far, for clients that had to pick among several images."""
    records = [r.attack for r in run.rounds if r.attack]
    return {c: s for c, s in per_client(records, records[-1][0].key).items() if s["chance"] < 1} if records else {}


def _who(chosen, plain: bool) -> str:
    bound = ("The run's ε limits what it can learn." if chosen.bounded
             else "No ε limits it: nothing it receives is noised against it.")
    if plain:
        return f"{PLAIN_WHO.get(chosen.key, chosen.who)} {bound}"
    return f"{chosen.who[0].upper() + chosen.who[1:]} receives {chosen.received}. {bound}"


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f} %" if x >= 0.1 or x == 0 else f"{100 * x:.1f} %"


def _eps(x) -> str:
    return "∞" if x is None else f"{x:,.2f}" if x < 10 else f"{x:,.0f}"


def _panel(run_id: str, key: str) -> None:
    run = state.run(run_id)
    records = [r.attack for r in run.rounds if r.attack]
    st.subheader("What the attacker sees", anchor=False)
    if not records:
        st.caption("The attack view appears with the first round (for models whose first layer is linear: "
                   "logistic regression, MLP; `python -m fedcore attack` attacks the others).")
        return
    chosen = records[-1][0]
    if chosen.unsupported:
        st.caption(chosen.unsupported)
        return
    if len(records[-1]) > 1:
        names = {a.key: a.who[0].upper() + a.who[1:] for a in records[-1]}
        pick = st.radio("Attacker", list(names), format_func=names.get, horizontal=True, key=f"{key}-attacker-{run_id}")
        chosen = next(a for a in records[-1] if a.key == pick)
    plain = form.student_mode()
    st.markdown(f"**{_who(chosen, plain)}**")
    _images(chosen, run.last_round.round, key, run_id)
    _success(records, chosen, key, run_id, plain, delta=run_delta(run))


def _images(chosen, round_no: int, key: str, run_id: str, caption: bool = True) -> None:
    shown = [c for c in chosen.clients if "image" in c]
    if not shown:
        st.caption("The clients shown were not picked this round.")
        return
    cols = st.columns(len(shown))
    for col, c in zip(cols, shown):
        truth = decode_image(c["truth"], chosen.shape)
        image = decode_image(c["image"], chosen.shape)
        left, right = _big(truth), _big(image)
        gap = np.full((left.shape[0], 12) + left.shape[2:], 255, np.uint8)
        pair = np.concatenate([left, gap, right], axis=1)
        if not caption:   # Presentation: one short line under each pair; at 1,024 px two: "5 ✓" over "ε 4,918"
            mark = "✓" if c.get("reidentified") else "✗"
            col.image(pair, caption=f"{c['client']}\u00a0{mark} ε\u00a0{_eps(c['epsilon'])}",
                      width="stretch")
            continue
        found = "found it ✓" if c.get("reidentified") else "missed ✗"
        col.image(pair, caption=f"Client {c['client']} · ε {_eps(c['epsilon'])} · {found}", width="stretch")
    if not caption:
        return
    used = shown[0]["used"]
    st.caption(f"Round {round_no}: each pair is the client's image (left) and what the attacker reconstructs from "
               f"what it received (right). **Found it**: the reconstruction is closer to that image than to any other of "
               f"the client's {shown[0]['n']} images."
               + (f" This round each client trained on {used} images, so the update blends them (and guessing one "
                  "of them is easy): local training hides a single image without any noise, but that is no guarantee."
                  if used > 1 else ""))


def _big(pixels: np.ndarray, size: int = 96) -> np.ndarray:
    """Nearest-neighbour upscaling so an 8x8 digit is visible."""
    k = max(1, size // pixels.shape[0])
    return np.kron(pixels, np.ones((k, k) + (1,) * (pixels.ndim - 2), dtype=np.uint8)) if pixels.ndim == 2 else \
        pixels.repeat(k, 0).repeat(k, 1)


def _success(records: list, chosen, key: str, run_id: str, plain: bool, present: bool = False,
             delta: float = 1e-5) -> None:
    stats = {c: s for c, s in per_client(records, chosen.key).items() if s["chance"] < 1}
    if not stats:
        st.caption("Every update so far was computed from all of its client's images, so pointing at one of "
                   "them is no achievement (a blind guess does as well): the pictures show the blend the "
                   "attacker gets instead. To watch single images come back, train one image per step "
                   "(Local training: steps 1, batch size 1) or load the preset `attack_digits`.")
        return
    clients = [f"client {c}" for c in stats]
    fig = go.Figure()
    fig.add_bar(x=clients, y=[s["matched"] for s in stats.values()], name="attacker found the image",
                marker_color="#c0392b")
    fig.add_scatter(x=clients, y=[s["cap"] for s in stats.values()], mode="markers", name="most the run's ε allows",
                    marker=dict(symbol="line-ew-open", size=28, color="#1f3b73", line=dict(width=3, color="#1f3b73")))
    fig.add_scatter(x=clients, y=[s["chance"] for s in stats.values()], mode="markers", name="blind guess",
                    marker=dict(symbol="line-ew-open", size=28, color="#777", line=dict(width=2, color="#777")))
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=30, b=10), yaxis=dict(range=[0, 1.05], tickformat=".0%"),
                      title=dict(text="How often it found the image, all rounds so far", font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.25), bargap=0.5)
    if present:
        fig = presentation.enlarge(fig).update_layout(height=presentation.ATTACK_CHART_HEIGHT, showlegend=False,
                                                      title=None, margin=dict(l=10, r=10, t=6, b=6))
    plot.chart(fig, f"{key}-attack-success-{run_id}", config={"displayModeBar": False})
    above = [c for c, s in stats.items() if s["above_cap"]]
    if above:
        st.error(f"Above the cap for client(s) {', '.join(map(str, above))}: the mechanism adds less noise than its "
                 "accounting says. That is a bug, like a failed audit.", icon=":material/report:")
    if present:
        return
    if plain:
        st.caption(TWO_ATTACKERS)
        st.caption("**The dark tick as odds:** " + odds_line(stats, delta))
    else:
        found = {a.name: [s[a.result] for s in stats.values() if s.get(a.result) is not None]
                 for a in of_kind("reconstruction") if a.result}
        st.caption("Bars: the informed adversary (knows the client's images, matches the update against each one's "
                   "gradient; Balle et al. 2022). Ticks: its cap e^ε·k/n + δ for k of n images (record-level: "
                   "replace-one and group privacy), and chance k/n. Found so far, per attack: "
                   + ", ".join(f"{name} {_pct(sum(v) / len(v))}" for name, v in found.items() if v) + ".")


def odds_line(stats: dict, delta: float = 1e-5) -> str:
    """Each client's cap ε said as odds (:func:`~fedcore.accounting.words.odds_sentence`), one line."""
    first, *rest = stats.items()
    line = f"at client {first[0]}'s ε of {_eps(first[1]['epsilon'])}, {odds_sentence(first[1]['epsilon'], delta)} round"
    if rest:
        line += "; " + ", ".join(f"client {c}: {_certainty(s['epsilon'], delta)}" for c, s in rest)
    return line + "."


def _certainty(epsilon, delta: float = 1e-5) -> str:
    return "right every time" if epsilon is None else \
        f"right at most {people_percent(attacker_certainty(epsilon, delta))} of the time"
