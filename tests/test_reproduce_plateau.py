"""KDP-FL's T (issue 39): the rule's T and the means its note quotes are those the stored curve gives."""
import json
import re

from fedcore.papers import kdp_fl
from fedcore.reproduce.results import REPO
import pytest

from fedcore.reproduce.stats import plateau_of_seeds, plateau_round, window_means


def _probe() -> dict:
    return json.loads((REPO / kdp_fl.KDP_T_PROBE).read_text())


def test_the_note_states_the_t_the_rule_computes_from_the_stored_curve():
    probe = _probe()
    acc = probe["accuracy"]
    assert len(acc) == probe["rounds"] == 600 and probe["preset"] == "kdp_fl_fmnist_noniid_fedavg"
    t, mean = plateau_round(acc)
    assert t == kdp_fl.KDP_T_PLATEAU
    assert f"T = {t}, 10-round mean {100 * mean:.1f} % there" in kdp_fl.KDP_T_RULE
    means = window_means(acc)
    quoted = re.findall(r"(\d+\.\d) % at (?:T = )?(\d+)", kdp_fl.KDP_T_RULE)
    assert len(quoted) == 4
    for pct, rnd in quoted:
        assert f"{100 * means[int(rnd) - 10]:.1f}" == pct, rnd


def test_the_rule_waits_out_a_dip_and_needs_the_whole_horizon():
    rising = [0.5 + 0.002 * t for t in range(1, 200)]          # 0.2 points a round: never flat
    assert plateau_round(rising) is None
    dip = rising[:100] + [0.3] * 10 + rising[110:]             # a dip does not stop the rise
    assert plateau_round(dip) is None
    flat = rising[:100] + [rising[99]] * 99
    t, mean = plateau_round(flat)
    assert 95 <= t <= 110 and abs(mean - rising[99]) < 0.01
    assert plateau_round(flat[:t + 49]) is None                # fewer than 50 rounds after T: undecided


def test_the_rule_reads_the_mean_of_every_seed_and_never_fewer():
    a = [min(t, 60) / 100 for t in range(1, 200)]
    b = [min(t, 120) / 200 for t in range(1, 200)]
    t, mean, seeds = plateau_of_seeds([a, b])
    assert seeds == 2 and t == plateau_round([(x + y) / 2 for x, y in zip(a, b)])[0]
    assert plateau_round(a)[0] < t                              # one seed alone plateaus earlier
    with pytest.raises(ValueError, match="round 5 is missing"):
        plateau_of_seeds([a, a[:4] + [None] + a[5:]])
