"""Membership inference as researchers draw it: the ROC on log-log axes, inside the region ε allows.

Drawing only. The numbers are a membership result's (:class:`fedcore.attacks.membership.Membership`,
``to_dict()``: the attack JSON's ``membership`` and ``rmia`` blocks, or a Playground job's,
:mod:`fedcore.runner.membership`): each attack's ``roc``, its TPR at 0.1 % and 1 % FPR, the caps there,
and ``cap_curve``, the edge of the region the run's ε allows (the exact trade-off curve where the runs
are μ-GDP, else the smallest over their privacy profile). The figure (:func:`roc_figure`) shades that
region, draws each attack's ROC over it and the blind guess (TPR = FPR); the table (:func:`roc_table`)
gives the TPRs at 0.1 % and 1 % FPR beside the caps. With Plain words on (``plain``) nothing says "LiRA",
"RMIA", "headline" or "e^ε": each row is named for what it measures.
"""
from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from . import pacing, plot
from .plain import plain as plain_text
from .press import pressed, start_job

LOW = 1e-4
"""The axes' lower end (FPR and TPR): ``cap_curve`` starts there."""
LEVELS = (("tpr_at_0_1pct_fpr", "dp_cap_tpr_at_0_1pct_fpr", 0.001), ("tpr_at_1pct_fpr", "dp_cap_tpr_at_1pct_fpr", 0.01))
"""Per reported level: the attack's TPR key, its cap's key, the FPR."""
ATTACKS = {  # key in the result, name, in Plain words (what it compares), colour
    "membership": ("LiRA", "attacker 1: models with vs without the image", "#c0392b"),
    "rmia": ("RMIA", "attacker 2: the image vs images nobody trained on", "#1f77b4"),
}
REGION = "rgba(46, 139, 87, 0.16)"
EDGE = "#2e8b57"


def _points(block: dict) -> tuple[list, list]:
    """The ROC's points that a log-log axis can show (FPR and TPR above 0): ``roc_log`` (its corners at log-spaced
    FPRs) where the result has it, else ``roc``."""
    roc = block.get("roc_log") or block.get("roc") or {}
    pts = [(f, t) for f, t in zip(roc.get("fpr", ()), roc.get("tpr", ())) if f > 0 and t > 0]
    return [f for f, _ in pts], [t for _, t in pts]


def _pct(x) -> str:
    if x is None:
        return "–"
    x = 100 * float(x)
    return f"{x:.0f} %" if x >= 10 or x == int(x) else f"{x:.1f} %" if x >= 0.1 else f"{x:.2f} %"


TITLE, TITLE_PLAIN = "Membership inference ROC (log-log)", "Caught against wrongly accused"
PLAIN_COLUMNS = ("members caught (1 in 1,000 others wrongly accused)", "members caught (1 in 100 others wrongly accused)")
"""The table's two TPR columns in Plain words: what each measures."""


def roc_figure(result: dict, plain: bool = False, height: int = 560) -> go.Figure:
    """The membership ROC of ``result`` (``{"membership": ..., "rmia": ...}``, either may be None) on
    log-log axes, inside the region its ε allows (see the module doc)."""
    fig = go.Figure()
    blocks = {k: result.get(k) for k in ATTACKS if result.get(k)}
    curve = next((b.get("cap_curve") for b in blocks.values() if b.get("cap_curve")), None)
    if curve and curve.get("fpr"):
        xs = [max(f, LOW) for f in curve["fpr"]]
        ys = [max(t, LOW) for t in curve["tpr"]]
        fig.add_trace(go.Scatter(x=xs + [xs[-1], xs[0]], y=ys + [LOW, LOW], mode="lines", fill="toself",
                                 fillcolor=REGION, line=dict(width=0), hoverinfo="skip", showlegend=True,
                                 name="what ε allows any attacker" if plain else "region ε allows (shaded)"))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=EDGE, width=2.5),
                                 name="the most ε allows" if plain else "cap: exact trade-off curve",
                                 hovertemplate="false alarms %{x:.2%}<br>most allowed %{y:.2%}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[LOW, 1], y=[LOW, 1], mode="lines", line=dict(color="#777", dash="dot", width=1.5),
                             name="blind guess" if plain else "chance (TPR = FPR)", hoverinfo="skip"))
    for key, block in blocks.items():
        name, words, color = ATTACKS[key]
        x, y = _points(block)
        auc = f" (AUC {block['auc']:.3f})" if block.get("auc") is not None else ""
        label = words if plain else f"{name}{auc}"
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color=color, width=2.5), name=label,
                                 meta=key, hovertemplate=("false alarms %{x:.3%}<br>members caught %{y:.2%}<extra></extra>"
                                                          if plain else f"{name}<br>FPR %{{x:.3%}}<br>TPR %{{y:.2%}}"
                                                          "<extra></extra>")))
        for tpr_key, _, level in LEVELS:
            if block.get(tpr_key) is not None and block[tpr_key] > 0:
                fig.add_trace(go.Scatter(x=[level], y=[block[tpr_key]], mode="markers", showlegend=False, meta=key,
                                         marker=dict(color=color, size=9, line=dict(color="white", width=1)),
                                         hovertemplate=f"{_pct(block[tpr_key])} at {_pct(level)}<extra></extra>"))
    for level in (0.001, 0.01):
        fig.add_vline(x=level, line=dict(color="#aaa", width=1, dash="dash"))
    ticks = [1e-4, 1e-3, 1e-2, 1e-1, 1]
    text = ["0.01 %", "0.1 %", "1 %", "10 %", "100 %"]
    fig.update_xaxes(type="log", range=[math.log10(LOW), 0], tickvals=ticks, ticktext=text,
                     title_text="non-members wrongly accused (log)" if plain else "false positive rate (log)")
    fig.update_yaxes(type="log", range=[math.log10(LOW), 0.02], tickvals=ticks, ticktext=text,
                     title_text="members caught (log)" if plain else "true positive rate (log)")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10), template="plotly_white",
                      title=dict(text=TITLE_PLAIN if plain else TITLE, x=0.0, font=dict(size=15)),
                      legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.2, yanchor="top", font=dict(size=12)),
                      uirevision="mia-roc")
    return fig


def roc_table(result: dict, plain: bool = False) -> list[dict]:
    """The table's rows: per attack its TPR at 0.1 % and 1 % FPR (and AUC), the most ε allows there, a
    blind guess; the columns named in Plain words when ``plain``."""
    at = PLAIN_COLUMNS if plain else ("TPR at 0.1 % FPR", "TPR at 1 % FPR")
    rows = []
    blocks = {k: result.get(k) for k in ATTACKS if result.get(k)}
    for key, block in blocks.items():
        name, words, _ = ATTACKS[key]
        row = {"": words if plain else f"{name} ({block.get('shadows')} shadow runs)",
               at[0]: _pct(block.get("tpr_at_0_1pct_fpr")), at[1]: _pct(block.get("tpr_at_1pct_fpr"))}
        if not plain:
            row["AUC"] = f"{block['auc']:.3f}" if block.get("auc") is not None else "–"
        rows.append(row)
    first = next(iter(blocks.values()), None)
    if first is not None:
        rows.append({"": "the most ε allows any attacker" if plain else "cap (the region's edge)",
                     at[0]: _pct(first.get("dp_cap_tpr_at_0_1pct_fpr")), at[1]: _pct(first.get("dp_cap_tpr_at_1pct_fpr")),
                     **({} if plain else {"AUC": "–"})})
        rows.append({"": "a blind guess" if plain else "chance", at[0]: _pct(0.001), at[1]: _pct(0.01),
                     **({} if plain else {"AUC": "0.500"})})
    return rows


def above_cap(result: dict) -> list[str]:
    """The attacks whose measured point lies above its cap (``above_cap`` in the result): a bug."""
    return [ATTACKS[k][0] for k in ATTACKS if (result.get(k) or {}).get("above_cap")]


def caption(result: dict, plain: bool) -> str:
    first = next((result[k] for k in ATTACKS if result.get(k)), {})
    spent = first.get("cap_epsilon")
    if plain:
        from fedcore.accounting.words import odds_sentence, people

        where = ("Nothing limits the attacker here: no noise was added, so the whole square is allowed."
                 if spent is None else f"Inside the green area is everything ε = {people(spent)} allows any attacker; "
                 f"{odds_sentence(spent, first.get('cap_delta') or 1e-5)}.")
        return ("Each line shows how many of the images used in training an attacker catches (up) against how many "
                "unused images it wrongly accuses (right), both on a log scale so the rare, confident guesses show. "
                f"{where} The dotted diagonal is a blind guess. Both attackers train look-alike models on random "
                "halves of the images; attacker 1 asks whether the image looks like those models' training images, "
                "attacker 2 whether the model likes it more than images nobody trained on. A line far above the green "
                "edge, more than chance explains, would be a bug: the page checks it and says so.")
    game = first.get("cap_game_words") or first.get("cap_game") or ""
    eps = "∞ (no privacy: the cap is 1)" if spent is None else f"{spent:.3g}" + (
        f" at δ = {first['cap_delta']:.0e}" if first.get("cap_delta") else "")
    proof = "; ".join(p for p in (eps, f"game: {game}" if game else "", first.get("cap_basis") or "") if p)
    return (f"ROC of membership inference over {first.get('pairs') or 0:,} (target, image) guesses, log-log (as LiRA's "
            "paper and ML Privacy Meter draw it): LiRA (Carlini et al. 2022) and RMIA (Zarifzadeh et al. 2024) score "
            f"the same {first.get('shadows') or 0} shadow runs. Shaded: the region the runs' ε allows ({proof}), "
            "bounded by its exact trade-off curve "
            "(TPR ≤ Φ(Φ⁻¹(FPR) + μ) for μ-GDP, else min over δ of e^ε·FPR + δ). Dots: TPR at 0.1 % and 1 % FPR. "
            "At low FPR the curves rest on few non-members and may cross the edge by chance; a point is flagged "
            "(a bug) when its TPR's lower bound exceeds the cap at its FPR's upper bound (Clopper-Pearson).")


def roc_section(result: dict, key: str, plain: bool) -> None:
    """The figure, the table, the caption and the bug flag of one membership result."""
    if result.get("error"):
        st.warning(f"The membership attack could not run: {plain_text(result['error'], 400)}")
        return
    left, right = st.columns([3, 2])
    plot.chart(roc_figure(result, plain), key, left, width="stretch", config={"displaylogo": False})
    with right:
        import pandas as pd

        st.table(pd.DataFrame(roc_table(result, plain)).set_index(""))
        st.caption(caption(result, plain))
    bad = above_cap(result)
    if bad:
        st.error(("An attacker caught more members than ε allows" if plain else
                  f"Above the cap: {', '.join(bad)}") + ": the mechanism adds less noise than its accounting says. "
                 "That is a bug, like a failed audit.", icon=":material/report:")


# --- the Playground: a finished run's recipe attacked by a job of the server's one job manager ---
def run_panel(cfg, preset: str, key: str = "pg-mia") -> None:
    """After a finished run: "Attack membership" queues the experiment on the run's recipe (its
    shadow runs trained together, a job like an audit); the ROC appears when it is done."""
    from fedcore.runner.membership import MEMBERSHIP, shadows_for, start_membership

    from .form import student_mode
    from .host import manager, viewer

    plain = student_mode()
    shadows = shadows_for(preset)
    st.subheader("Who was in the training data?" if plain else "Membership inference: ROC", anchor=False)
    if not MEMBERSHIP.asked(manager(), cfg, shadows):
        c1, c2 = st.columns([1.4, 3], vertical_alignment="center")   # the button's label whole at 1,024 px
        c2.caption(("An attacker trains many look-alike models, each on a random half of the images, and learns to "
                    "tell from the finished model whether an image was used to train it." if plain else
                    "LiRA and RMIA over the same shadow runs of this recipe, each on a random half of the data.")
                   + f" {shadows + 1} training runs of this recipe, trained together in the background.")
        if pressed(c1, "Attack membership", key=f"{key}-go", icon=":material/person_search:"):
            start_job(lambda: start_membership(manager(), cfg, shadows, owner=viewer().owner))
        return
    done = MEMBERSHIP.result(manager().store_dir, cfg, shadows)
    pacing.polling_fragment(_job_state, pacing.poll_seconds(2.0) if done is None else None)(cfg, shadows, key, plain)


def _job_state(cfg, shadows: int, key: str, plain: bool) -> None:
    from fedcore.runner.membership import MEMBERSHIP

    from .host import manager
    from .queue_words import result_job_state

    result_job_state(MEMBERSHIP.id(cfg, shadows), MEMBERSHIP.result(manager().store_dir, cfg, shadows), key,
                     f"Training {shadows + 1} look-alike runs in the background… this page stays live.",
                     "Stop the attack", "The membership attack was stopped before it finished.",
                     lambda done: roc_section(done, f"{key}-roc", plain))


def wanted(cfg, preset: str) -> bool:
    """Presentation: whether membership takes the place beside accuracy: on a preset made for it
    (:data:`~fedcore.runner.membership.PRESET_SHADOWS`), or once someone started it on this recipe."""
    from fedcore.runner.membership import MEMBERSHIP, PRESET_SHADOWS, shadows_for

    from .host import manager

    return preset in PRESET_SHADOWS or MEMBERSHIP.asked(manager(), cfg, shadows_for(preset))


def start_button(cfg, preset: str, key: str = "pg-mia-present") -> None:
    """Presentation: one large button that starts the membership attack on a finished run's recipe
    (a preset made for it starts at once, without a click)."""
    from fedcore.runner.membership import PRESET_SHADOWS, shadows_for, start_membership

    from .host import manager, viewer

    if preset in PRESET_SHADOWS or pressed(st, "Who was in the training data? Attack membership", key=f"{key}-go",
                                           type="primary", icon=":material/person_search:", width="stretch"):
        start_job(lambda: start_membership(manager(), cfg, shadows_for(preset), owner=viewer().owner))


def beside_accuracy(cfg, preset: str, key: str = "pg-mia-present") -> None:
    """Presentation, level with the accuracy chart: the membership ROC, enlarged, and its two numbers (members
    caught at 1 in 1,000 and 1 in 100 wrongly accused), or where its job stands, or the button that starts it."""
    from fedcore.runner.membership import MEMBERSHIP, shadows_for

    from .form import student_mode
    from .host import manager

    shadows = shadows_for(preset)
    if not MEMBERSHIP.asked(manager(), cfg, shadows):
        st.markdown("**Who was in the training data?** An attacker trains look-alike models on random halves of the "
                    "images and tells the ones used to train this model from the others.")
        start_button(cfg, preset, key)
        return
    pacing.polling_fragment(_present_state, pacing.poll_seconds(2.0))(cfg, shadows, key, student_mode())


def _present_state(cfg, shadows: int, key: str, plain: bool) -> None:
    from fedcore.runner.membership import MEMBERSHIP

    from .host import keep_alive, manager
    from .queue_words import queue_text
    from .presentation import enlarge

    done = MEMBERSHIP.result(manager().store_dir, cfg, shadows)
    if done is None:
        job = manager().job(MEMBERSHIP.id(cfg, shadows))
        if job is not None and job.status in ("queued", "running"):
            keep_alive(job)
            queue = manager().queue_info(job.id)
            st.info(queue_text(queue) if queue else f"**Who was in the training data?** Training {shadows + 1} "
                    "look-alike runs in the background…", icon=":material/hourglass_top:")
        else:
            st.info("The membership attack was stopped before it finished.", icon=":material/stop_circle:")
        return
    if done.get("error"):
        st.warning(f"The membership attack could not run: {plain_text(done['error'], 400)}")
        return
    fig = enlarge(roc_figure(done, plain)).update_layout(showlegend=False, margin=dict(l=10, r=10, t=40, b=10))
    plot.chart(fig, f"{key}-roc", width="stretch", config={"displayModeBar": False})
    st.markdown(two_numbers(done, plain))


def two_numbers(result: dict, plain: bool) -> str:
    """The ROC's two numbers in one line: each attack's TPR at 0.1 % FPR, and the most ε allows there."""
    blocks = {k: result[k] for k in ATTACKS if result.get(k)}
    caught = ", ".join(f"{ATTACKS[k][1].split(':')[0] if plain else ATTACKS[k][0]} "
                       f"{_pct(b.get('tpr_at_0_1pct_fpr'))}" for k, b in blocks.items())
    cap = _pct(next(iter(blocks.values()), {}).get("dp_cap_tpr_at_0_1pct_fpr"))
    if plain:
        return (f"**Members caught while 1 in 1,000 others are wrongly accused:** {caught} (a blind guess: 0.1 %; "
                f"the most ε allows: {cap}).")
    return f"**TPR at 0.1 % FPR:** {caught} (chance 0.1 %; cap {cap})."
