"""A run in which no update was ever aggregated (PLDP-FL rule C selecting nobody) is named as such:
its events, its sweep row, the summary cells (left out and counted) and the equal-privacy
calibration (no budget "solved" for a run that released nothing)."""
from __future__ import annotations

import json

from fedcore.cli import main
from fedcore.engine import iter_run
from fedcore.events import RoundEvent, RunFinished, RunState, summarize
from fedcore.layering import build_config
from fedcore.sweep.rows import make_row, cells, summary_table

NOBODY = ["method=pldp_c", "rounds=2", "num_clients=10", "privacy.epsilon=0.01"]


def test_a_run_that_aggregates_nothing_says_so_in_its_events():
    events = list(iter_run(build_config("demo", None, NOBODY)))
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert [r.aggregated for r in rounds] == [False, False] and isinstance(events[-1], RunFinished)
    assert events[-1].aggregated_rounds == 0 and summarize(events).aggregated_rounds == 0
    trained = list(iter_run(build_config("demo", None, ["rounds=2"])))
    assert trained[-1].aggregated_rounds == 2 and all(e.aggregated for e in trained[1:-1])


def test_records_from_before_the_field_count_rounds_with_uploads():
    old = [RoundEvent(1, 0.1, 1.0, [0], [0], [1.0], [0.1]), RoundEvent(2, 0.1, 1.0, [], [], [], [0.1])]
    assert all(r.aggregated is None for r in old)
    assert summarize(old).aggregated_rounds == 1 and RunState().aggregated_rounds == 0
    assert RunFinished("finished", 2, 1.0).aggregated_rounds is None


def test_cells_leave_empty_runs_out_and_say_how_many():
    rows = [make_row("pldp_c", 1.0, s, acc, head, "local", 0.1, match="headline", aggregated_rounds=agg)
            for s, acc, head, agg in [(0, 0.5, 0.99, 3), (1, 0.7, 0.99, 2), (2, 0.18, 0.0, 0)]]
    rows.append(make_row("pldp_c", 10.0, 0, 0.18, 0.0, "local", 0.1, match="headline", aggregated_rounds=0))
    (cell,) = cells(rows)
    assert cell["n"] == 2 and cell["empty"] == 1 and abs(cell["accuracy_mean"] - 0.6) < 1e-12
    table = summary_table(rows)
    assert "[1 of 3 runs aggregated nothing: left out]" in table and "[1 of 1 runs aggregated nothing" in table
    assert "0.18" not in table


def test_the_sweep_writes_aggregated_rounds_and_solves_no_budget_for_an_empty_run(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main(["sweep", "--preset", "demo", "--scenario", "personalized", "--methods", "pldp_c", "--epsilons", "1",
                 "--seeds", "3", "--match", "headline", "--no-reference", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 3 and all(isinstance(r["aggregated_rounds"], int) for r in rows)
    empty = [r for r in rows if r["aggregated_rounds"] == 0]
    assert empty, "seed 2 of this scenario selects nobody (the case under test)"
    assert all(r["knob"] is None and r["epsilon_accountant"] == 0.0 for r in empty)
    assert all(r["knob"] is not None and 0.99 <= r["epsilon_accountant"] <= 1.0 for r in rows if r not in empty)
    assert f"[{len(empty)} of 3 runs aggregated nothing: left out]" in capsys.readouterr().out
