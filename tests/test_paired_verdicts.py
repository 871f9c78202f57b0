"""Issue 52: every verdict of the reproduction report comes from one paired rule, at equal privacy,
on the rounds where every seed was evaluated (fedcore.reproduce.stats.paired_rule, RULE_TEXT)."""
from __future__ import annotations

import json
import math

from fedcore.papers.spec import Claim
from fedcore.reproduce.report import rounds_status
from fedcore.reproduce.results import REPO
from fedcore.reproduce.run import refresh
from fedcore.reproduce.stats import RowStats, paired_rule, seeds_to_decide

LABELS = {"x": "X", "y": "Y", "z": "Z"}


def _stored(paper: str) -> dict:
    return refresh(json.loads((REPO / "assets" / "reproduction" / f"{paper}.json").read_text()))


def _table(record: dict, key: str) -> dict:
    return next(t for t in record["tables"] if t["key"] == key)


def test_the_interval_decides_and_a_tolerance_moves_the_threshold():
    gaps = [0.002, -0.001, 0.001]
    assert paired_rule(gaps)["verdict"] == "inconclusive"          # straddles 0
    assert paired_rule(gaps, threshold=-0.01)["verdict"] == "holds"  # "within 1 point"
    assert paired_rule([-0.05, -0.06, -0.04])["verdict"] == "does not hold"
    one = paired_rule([0.3])
    assert one["verdict"] == "inconclusive" and one["low"] is None and one["seeds_needed"] == 2


def test_the_seeds_that_would_decide_shrink_the_interval_past_the_threshold():
    n = seeds_to_decide(0.01, 0.03, 0.0)
    from fedcore.reproduce.stats import t_quantile
    assert t_quantile(0.975, n - 1) * 0.03 / math.sqrt(n) < 0.01 <= t_quantile(0.975, n - 2) * 0.03 / math.sqrt(n - 1)
    assert seeds_to_decide(0.0, 0.03, 0.0) is None


def test_pairing_by_seed_decides_what_the_seed_spread_hides():
    # the seeds move both rows together: each seed's gap is +1 point, the spread across seeds is 10
    x = RowStats([0.51, 0.61, 0.71], seeds=(0, 1, 2), epsilon=1.0)
    y = RowStats([0.50, 0.60, 0.70], seeds=(0, 1, 2), epsilon=1.0)
    assert Claim("order", ("x", "y")).check({"x": x, "y": y}, LABELS)["verdict"] == "holds"
    shuffled = RowStats([0.50, 0.60, 0.70], seeds=(1, 2, 0), epsilon=1.0)   # other seeds: other pairs
    assert Claim("order", ("x", "y")).check({"x": x, "y": shuffled}, LABELS)["verdict"] != "holds"


def test_a_decided_claim_at_unequal_privacy_or_from_other_accountants_reads_unequal_privacy():
    x = RowStats([0.9, 0.91, 0.92], seeds=(0, 1, 2), epsilon=38.3)
    y = RowStats([0.8, 0.81, 0.82], seeds=(0, 1, 2), epsilon=9.97)
    out = Claim("order", ("x", "y")).check({"x": x, "y": y}, LABELS)
    assert out["verdict"] == "unequal privacy" and out["holds"] is None and "paired rule alone: holds" in out["detail"]
    assert Claim("order", ("x", "y"), equal_privacy=False).check({"x": x, "y": y}, LABELS)["verdict"] == "holds"
    near = RowStats(x.finals, seeds=x.seeds, epsilon=9.99)
    assert Claim("order", ("x", "y")).check({"x": near, "y": y}, LABELS)["verdict"] == "holds"   # within 1 %
    pld = RowStats(x.finals, seeds=x.seeds, epsilon=9.97, accountant="pld")
    rdp = RowStats(y.finals, seeds=y.seeds, epsilon=9.97, accountant="rdp")
    out = Claim("order", ("x", "y")).check({"x": pld, "y": rdp}, LABELS)
    assert out["verdict"] == "unequal privacy" and "different accountants" in out["detail"]


def test_rounds_to_target_read_only_where_every_seed_was_evaluated():
    every = [0.9 if r >= 7 else 0.1 for r in range(1, 21)]                     # seed 0: every round
    tenth = [(0.9 if r >= 7 else 0.1) if r % 10 == 0 else None for r in range(1, 21)]
    row = RowStats([0.9, 0.9], curves=(every, tenth), rounds=tuple(range(1, 21)), seeds=(0, 1))
    assert row.rounds_to(0.5) == 10                                              # not 7 from seed 0 alone
    assert row.curve()[6] is None and row.curve()[9] == 0.9


def test_the_stored_records_read_as_issue_52_measured():
    ldp = _table(_stored("ldp_fl"), "mnist")
    assert all(c["verdict"] == "holds" for c in ldp["claims"])   # ε = 10 ≥ ε = 5 within 1 point, every seed
    pldp = _table(_stored("pldp"), "fmnist_noniid")
    assert pldp["claims"][0]["verdict"] == "inconclusive"
    uldp = _table(_stored("uldp"), "mnist")
    rounds = {r["key"]: r.get("rounds_to_target") for r in uldp["rows"]}
    curves = {r["key"]: r["curves"] for r in uldp["rows"]}
    assert any(sum(v is not None for v in c) != len(c) for c in curves["dcdp"])   # seeds on different grids
    assert rounds["dcdp"] % 10 == 0 and rounds["fedavg"] % 10 == 0
    speed = [c for c in uldp["claims"] if c["claim"].endswith("fewer rounds than DDP-FedAvg")]
    assert speed and speed[0]["privacy"] == "equal"            # the paper's speed ordering, checked


def test_no_holds_compares_rows_whose_headline_epsilon_differ():
    for paper in ("pldp", "ldp_fl", "hw_dpfl", "kdp_fl", "uldp"):
        for table in _stored(paper)["tables"]:
            for claim in table["claims"]:
                if claim["verdict"] == "holds":
                    assert claim["privacy"] in ("equal", "compares budgets by design"), (paper, claim["claim"])


def test_the_kdp_table_says_which_rows_are_not_at_the_rule_s_t():
    table = _table(_stored("kdp_fl"), "fmnist_noniid_eps1")
    lines = rounds_status(table)
    want = table["rule_rounds"]
    off = [r for r in table["rows"] if r.get("finals") and r["config"]["rounds"] != want]
    assert len([line for line in lines if line.startswith("- ")]) == len(off)
    for r in off:
        assert any(line.startswith(f"- {r['short']}: its record ran T = {r['config']['rounds']}") for line in lines)
    if off:
        assert f"--set rounds={want}" in lines[-1]


def test_a_row_with_no_round_every_seed_was_evaluated_says_so_instead_of_using_fewer_seeds():
    from fedcore.reproduce.report import table_rows

    row = {"key": "x", "label": "X", "preset": "p", "finals": [0.9, 0.9], "mean": 0.9, "std": 0.0,
           "curves": [[0.96, None], [None, 0.96]], "rounds": [1, 2], "rounds_to_target": None}
    (cells,) = table_rows({"rows": [row], "target": 0.95})
    assert cells["our rounds to 0.95"] == "no round where every seed was evaluated"
