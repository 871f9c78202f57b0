"""The duration estimates against the stored reproduction records (assets/reproduction/*.json):
for every row trained on its own (not in a lockstep batch, whose runs record a share of the
batch's time), the estimate of its config is within 2x of the seconds it took.

A record's seconds are wall-clock on a shared 2-core CPU. Where a seed recorded its load
average, the check compares with the seconds it would have taken alone
(:func:`fedcore.reproduce.estimate.alone_seconds`): estimate / alone in [0.5, 2]. Where none did
(records older than the load column), the wall-clock is only an upper bound on that, so the
estimate must not exceed twice it. Nothing is timed here.
"""
from __future__ import annotations

from fedcore.reproduce.estimate import alone_seconds, measured_runs, rough_seconds


def ratios():
    """``(paper, model, mechanism, estimate, measured, load known)`` of every trained row."""
    return [(paper, cfg.model, cfg.privacy.mechanism, rough_seconds(cfg), seconds if alone is None else alone,
             alone is not None) for paper, cfg, seconds, alone in measured_runs()]


def test_the_records_hold_timed_rows():
    assert ratios()


def test_every_estimate_is_within_2x_of_what_its_row_took():
    wrong = [f"{paper} {model} {mechanism}: estimate {est:.0f} s, measured {took:.0f} s "
             f"({'alone' if known else 'wall-clock, load unknown'}), ratio {est / took:.2f}"
             for paper, model, mechanism, est, took, known in ratios()
             if est / took > 2 or (known and est / took < 0.5)]
    assert not wrong, "\n".join(wrong)


def test_a_run_under_load_counts_the_share_of_the_cpu_it_got():
    assert alone_seconds(300.0, 6.0) == 100.0      # 6 runnable on 2 cores: a third of the CPU
    assert alone_seconds(300.0, 1.5) == 300.0      # fewer than the cores: the CPU was its own
