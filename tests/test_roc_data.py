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
