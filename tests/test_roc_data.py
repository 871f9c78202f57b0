"""The membership ROC's data for a log-log plot (issue 40 §2): ``roc_log`` keeps the ROC's corners at
log-spaced FPRs down to one false positive, where ``roc`` (evenly spaced over the thresholds) holds few."""
from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_curve

from fedcore.attacks.membership import _log_spaced, _tpr_at


def test_log_spaced_corners_keep_the_low_fpr_end_of_the_roc():
    rng = np.random.default_rng(0)
    truth = rng.random(20_000) < 0.5
    fpr, tpr, _ = roc_curve(truth, rng.normal(size=20_000) + 0.5 * truth)
    keep = _log_spaced(fpr, int((~truth).sum()))
    assert len(keep) <= 2 * 120 + 2 and keep[0] == 0 and keep[-1] == len(fpr) - 1
    low = fpr[keep][(fpr[keep] > 0) & (fpr[keep] <= 1e-3)]
    even = np.unique(np.linspace(0, len(fpr) - 1, 200).astype(int))
    assert len(low) >= 8 > len(fpr[even][(fpr[even] > 0) & (fpr[even] <= 1e-3)])
    for level in (1e-3, 1e-2):      # the table's TPRs read off the kept corners equal the full ROC's
        assert _tpr_at(fpr[keep], tpr[keep], level) == _tpr_at(fpr, tpr, level)


def test_the_attack_json_carries_roc_log_beside_roc():
    from fedcore.attacks.membership import attacks
    from fedcore.resolve import preset_config

    cfg = preset_config("attack_membership").with_overrides({"rounds": 2})
    for m in attacks(cfg, shadows=4).values():
        d = m.to_dict()
        assert d["roc"] and d["cap_curve"] and len(d["roc_log"]["fpr"]) == len(d["roc_log"]["tpr"]) > 2
        assert d["roc_log"]["fpr"] == sorted(d["roc_log"]["fpr"])


def test_a_frontier_row_keeps_the_roc_blocks_a_figure_draws():
    import json

    from fedcore.sweep.attack import ROC_KEYS, membership_of, roc_columns

    attack = {"membership": None, "rmia": None}
    for name in ("membership", "rmia"):
        fpr = [0.0, 1e-4, 5e-4, 1e-3, 1e-2, 0.1, 1.0]
        attack[name] = {"roc_log": {"fpr": fpr, "tpr": [0.0, 0.01, 0.02, 0.03, 0.09, 0.3, 1.0]},
                        "cap_curve": {"fpr": [1e-4, 1.0], "tpr": [1.0, 1.0]}, "tpr_at_0_1pct_fpr": 0.03,
                        "tpr_at_1pct_fpr": 0.09, "dp_cap_tpr_at_0_1pct_fpr": 1.0, "auc": 0.7, "shadows": 16, "pairs": 900}
    row = {"mia_auc": 0.7, "mia_tpr_at_1pct_fpr": 0.09, "mia_cap_tpr_at_1pct_fpr": 1.0,
           **roc_columns(attack["membership"], attack["rmia"])}
    assert set(ROC_KEYS) <= set(row)
    json.dumps(row, allow_nan=False)
    blocks = membership_of(row)
    assert set(blocks) == {"membership", "rmia"}
    for name, block in blocks.items():
        assert block["tpr_at_0_1pct_fpr"] == 0.03 and block["roc_log"]["fpr"][-1] == 1.0
        assert block["tpr_at_1pct_fpr"] == 0.09 and block["cap_curve"]["tpr"]
    assert membership_of({"mia_auc": 0.5}) is None            # a row attacked before the ROC was kept
    from pages.components.membership_roc import roc_figure, roc_table

    fig = roc_figure(blocks, plain=False)
    assert {t.meta for t in fig.data if t.meta} == {"membership", "rmia"}
    assert [r[""] for r in roc_table(blocks)][:2] == ["LiRA (16 shadow runs)", "RMIA (16 shadow runs)"]
