"""`python -m fedcore sweep`: the frontier.json contract, bad inputs, batched == one by one."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from fedcore.cli import main
from fedcore.sweep import FRONTIER_KEYS, SweepSpec, read_frontier, summary_table
from fedcore.sweep.rows import rows_csv

TINY = ["--set", "rounds=2", "--set", "num_clients=4"]


@pytest.fixture(scope="module")
def frontier(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "frontier.json"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["sweep", "--preset", "demo", "--methods", "pldp_b,ldp_fl", "--epsilons", "10,1",
                     "--seeds", "2", "--match", "target", *TINY, "--out", str(out)])
    return code, buf.getvalue(), out


def test_contract_rows_and_keys(frontier):
    code, stdout, out = frontier
    assert code == 0
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert list(data) == ["rows"]
    rows = data["rows"]
    # 2 methods x (2 eps + no privacy + clip only) x 2 seeds
    assert len(rows) == 16
    for r in rows:
        assert set(FRONTIER_KEYS) <= set(r)
        assert 0.0 <= r["accuracy"] <= 1.0 and r["seconds"] >= 0
    assert {(r["method"], r["epsilon"], r["reference"], r["seed"]) for r in rows} == {
        (m, e, ref, s) for m in ("pldp_b", "ldp_fl") for e, ref in ((None, "no_privacy"), (None, "clip_only"),
                                                                    (1.0, ""), (10.0, "")) for s in (0, 1)}
    clip = [r for r in rows if r["reference"] == "clip_only"]
    assert all(r["threat_model"] == "local" and r["knob"] == 1e6 for r in clip)
    refs = [r for r in rows if r["reference"] == "no_privacy"]
    assert len(refs) == 4
    # no noise is infinity (null + flag), never 0
    assert all(r["epsilon_accountant"] is None and r["epsilon_accountant_infinite"] for r in refs)
    assert all(r["threat_model"] == "none" for r in refs)
    private = [r for r in rows if r["epsilon"] is not None]
    assert all(r["threat_model"] == "local" and r["match"] == "target" for r in private)
    assert all(r["epsilon_accountant"] is not None and r["epsilon_accountant"] > 0 for r in private)
    # a larger target spends a larger headline epsilon
    by = {(r["method"], r["epsilon"], r["seed"]): r["epsilon_accountant"] for r in private}
    assert all(by[(m, 10.0, s)] > by[(m, 1.0, s)] for m in ("pldp_b", "ldp_fl") for s in (0, 1))
    assert read_frontier(out) == rows


def test_one_line_per_finished_point(frontier):
    _, stdout, _ = frontier
    lines = [ln for ln in stdout.splitlines() if ln.startswith("[")]
    assert len(lines) == 16
    assert lines[0].startswith("[ 1/16]") and lines[-1].startswith("[16/16]")
    assert "no privacy" in stdout and "clip only" in stdout and "headline ε ∞" in stdout


def test_table_and_csv(frontier):
    rows = read_frontier(frontier[2])
    table = summary_table(rows)
    assert table.splitlines()[0].startswith("Columns: configured ε")
    assert table.splitlines()[2].startswith("| method | threat model | configured ε 1 | configured ε 10 | clip only "
                                            "| no privacy |")
    assert "± " in table and len(table.splitlines()) == 6
    csv_text = rows_csv(rows)
    assert csv_text.splitlines()[0].startswith("method,epsilon,epsilon_accountant")
    assert ",none,inf," in csv_text


@pytest.mark.parametrize("args, field", [
    (["--epsilons", "0,1"], "epsilons"),
    (["--epsilons", "1,abc"], "epsilons"),
    (["--epsilons", "1,inf"], "epsilons"),
    (["--epsilons", ""], "epsilons"),
    (["--methods", "ldp_fll"], "methods"),
    (["--methods", "pldp_b,pldp_b"], "methods"),
    (["--seeds", "0"], "seeds"),
    (["--seeds", "x"], "seeds"),
    (["--preset", "nope"], "preset"),
    (["--set", "rounds=0"], "rounds"),
    (["--set", "privacy.epsilon=3"], "--epsilons"),
])
def test_bad_input_exits_2_with_one_line(args, field, capsys, tmp_path):
    code = main(["sweep", *args, "--out", str(tmp_path / "f.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and field in err, err
    assert not (tmp_path / "f.json").exists()


def test_bad_input_from_the_shell(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fedcore", "sweep", "--epsilons", "-1",
                           "--out", str(tmp_path / "f.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "epsilons" in proc.stderr and "Traceback" not in proc.stderr


def test_points_layering():
    spec = SweepSpec(preset="demo", methods="kdp_fl", epsilons="3,1", seeds="4,7", sets=("rounds=3",))
    points = spec.points()
    assert [(p.epsilon, p.reference, p.seed) for p in points] == [
        (None, "no_privacy", 4), (None, "no_privacy", 7), (None, "clip_only", 4), (None, "clip_only", 7),
        (1.0, "", 4), (3.0, "", 4), (1.0, "", 7), (3.0, "", 7)]
    assert all(p.config.rounds == 3 and p.config.dataset == "digits" for p in points)
    assert points[0].config.privacy.mechanism == "none"
    assert points[2].config.privacy.mechanism == "dp_sgd" and points[2].config.privacy.epsilon == (1e6,)
    assert points[4].config.privacy.mechanism == "dp_sgd" and points[4].config.privacy.epsilon == (1.0,)
    assert points[4].config.privacy.aggregator == points[0].config.privacy.aggregator == "kalman"
    assert spec.count() == len(points)


def test_fedavg_has_only_reference_rows():
    points = SweepSpec(methods="fedavg", epsilons="1,10", seeds=2).points()
    assert [(p.epsilon, p.reference) for p in points] == [(None, "no_privacy")] * 2
    assert not math.isnan(points[0].seed)


@pytest.mark.parametrize("method", ["kdp_fl", "pldp_c", "dp_fedavg"])
def test_batched_equals_one_by_one(method):
    """Runs trained together in lockstep (runs x clients in one vmap) give what they give alone:
    per-sample clipping (kdp_fl), server-side selection randomness (pldp_c), Poisson sampling
    with per-user state (dp_fedavg)."""
    import torch

    from fedcore.engine import iter_run
    from fedcore.engine.lockstep import run_lockstep
    from fedcore.engine.setup import prepare
    from fedcore.events import RoundEvent
    from fedcore.sweep.runner import run_sweep

    spec = SweepSpec(methods=method, epsilons="1,30", seeds="0,3", sets=("rounds=3", "num_clients=5"))
    points = spec.points()
    private = [p for p in points if p.epsilon is not None]
    batch = run_lockstep([p.config for p in private])
    for point, res in zip(private, batch):
        setup = prepare(point.config)
        events = list(iter_run(point.config, setup=setup))
        last = [e for e in events if isinstance(e, RoundEvent)][-1]
        assert res.final_accuracy == pytest.approx(last.accuracy, abs=1e-9)
        assert res.headline == pytest.approx(last.epsilon_headline_run, rel=1e-9)
        assert res.threat_model == last.threat_model
        for k, v in setup.params.items():
            torch.testing.assert_close(res.params[k], v, rtol=1e-5, atol=1e-6)
    # different budgets and seeds really trained differently
    assert len({round(float(r.params[next(iter(r.params))].sum()), 6) for r in batch}) == len(batch)
    def key(r):
        return (r["epsilon"] or 0, r["reference"], r["seed"], r["accuracy"], r["epsilon_accountant"] or math.inf)

    batched = sorted(key(r) for r in run_sweep(points))
    alone = sorted(key(r) for r in run_sweep(points, batched=False))
    assert [k[:3] for k in batched] == [k[:3] for k in alone]
    assert [k[3:] for k in batched] == pytest.approx([k[3:] for k in alone])


def test_sweep_audit_adds_the_lower_bound_beside_the_accountants_epsilon(tmp_path, capsys):
    from fedcore.cli import main
    from fedcore.sweep.rows import AUDIT_KEYS

    out = tmp_path / "f.json"
    assert main(["sweep", "--preset", "demo", "--methods", "ldp_fl", "--epsilons", "1", "--seeds", "1",
                 "--no-reference", "--set", "rounds=1", "--audit", "400", "--match", "target", "--out", str(out)]) == 0
    assert "each audited with 400 draws per input" in capsys.readouterr().out
    row = json.loads(out.read_text())["rows"][0]
    assert set(AUDIT_KEYS) <= set(row)
    assert row["audit_kind"] == "distinguishing" and row["epsilon_audited"] is not None
    assert row["epsilon_audited"] <= row["epsilon_accountant"]
    # the audit's own scope (one report) spends no more than the whole run's headline
    assert row["epsilon_audited"] <= row["audit_accountant"] <= row["epsilon_accountant"]
    assert 0 < row["audit_ceiling"] and row["audit_seconds"] > 0
    # the CSV export carries the audited columns, in order, after the frontier's own
    header, line = rows_csv([row]).splitlines()
    assert header.endswith(",config_hash," + ",".join(AUDIT_KEYS))
    assert f"{row['epsilon_audited']}" in line and "distinguishing" in line


@pytest.mark.parametrize("args, text", [
    (["--audit", "5"], "audit: got 5"),
    (["--audit", "0"], "audit: got 0"),
    (["--audit", "500", "--ray", "local"], "--audit: not with --ray"),
])
def test_bad_audit_exits_2_with_one_line(args, text, capsys, tmp_path):
    assert main(["sweep", "--methods", "ldp_fl", "--epsilons", "1", "--seeds", "1", *args,
                 "--out", str(tmp_path / "f.json")]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and text in err, err
    assert not out and not (tmp_path / "f.json").exists()  # refused before anything starts


def test_audited_rows_stop_when_asked_and_key_apart_from_unaudited_ones():
    from fedcore.sweep.audit import audited
    from fedcore.sweep.job import spec_key

    spec = SweepSpec(methods="ldp_fl", epsilons="1,3", seeds=1, reference=False, sets=("rounds=1",))
    points = spec.points()
    rows = [{"config_hash": p.config.config_hash(), "epsilon": p.epsilon} for p in points]
    calls = []

    def stop_after_one():
        calls.append(1)
        return len(calls) > 1

    got = list(audited(rows, points, 200, should_stop=stop_after_one))
    assert len(got) == 1 and got[0]["epsilon"] == 1.0 and got[0]["audit_kind"] == "distinguishing"
    # an audited sweep is a different frontier file; an unaudited one keeps its old key
    assert spec_key(spec, 0) == spec_key(spec) != spec_key(spec, 200) != spec_key(spec, 400)


def test_findings_name_violations_before_refuted_claims():
    from fedcore.sweep.audit import findings

    def row(eps, audited, upper, claim):
        return {"method": "m", "epsilon": eps, "seed": 0, "epsilon_audited": audited,
                "audit_accountant": upper, "paper_claim": claim}

    rows = [row(1.0, 0.5, 2.0, 1.0),      # consistent: below both
            row(3.0, 2.0, 9.0, 1.0),      # refutes the claim (2 > 1), not the accountant
            row(10.0, 4.0, 3.0, None),    # exceeds the accountant's own-scope bound: a violation
            row(30.0, 5.0, None, None),   # accountant ∞ (null): nothing to exceed
            row(None, None, None, None)]  # not audited
    got = findings(rows)
    assert [(f["kind"], f["epsilon"], f["audited"], f["bound"]) for f in got] == [
        ("violation", 10.0, 4.0, 3.0), ("claim", 3.0, 2.0, 1.0)]


# --- one resume rule for every backend (fedcore.sweep.rows.rows_to_resume) ---------------------
ONE_POINT = ["sweep", "--preset", "demo", "--methods", "ldp_fl", "--epsilons", "1", "--seeds", "1",
             "--no-reference", *TINY]


def test_an_empty_out_file_starts_the_sweep_afresh(tmp_path, capsys):
    out = tmp_path / "f.json"
    out.write_text("")
    assert main([*ONE_POINT, "--out", str(out)]) == 0
    assert len(read_frontier(out)) == 1 and "skipped" not in capsys.readouterr().out


def test_a_frontier_out_file_is_resumed_training_only_the_new_points(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main([*ONE_POINT, "--out", str(out)]) == 0
    first = read_frontier(out)
    capsys.readouterr()
    assert main([*ONE_POINT[:6], "1,10", *ONE_POINT[7:], "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "skipped 1 point(s) already in" in stdout and "[2/2]" in stdout and "[1/2]" not in stdout
    rows = read_frontier(out)
    assert rows[0] == first[0] and [r["epsilon"] for r in rows] == [1.0, 10.0]


def test_an_out_file_that_is_not_a_frontier_is_refused_and_kept(tmp_path, capsys):
    out = tmp_path / "notes.json"
    out.write_text("my notes\n")
    assert main([*ONE_POINT, "--out", str(out)]) == 2
    stdout, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "not a frontier file" in err and "--out" in err
    assert not stdout and out.read_text() == "my notes\n"


def test_the_cli_defaults_to_equal_privacy_like_the_page():
    """``sweep`` without ``--match`` matches the headline ε (the Frontier page's default); target stays an option."""
    import argparse

    from fedcore.sweep.cli import add_sweep_parser

    parser = argparse.ArgumentParser()
    add_sweep_parser(parser.add_subparsers())
    assert parser.parse_args(["sweep"]).match == "headline"
    assert parser.parse_args(["sweep", "--match", "target"]).match == "target"


def test_a_cell_shows_the_pld_epsilon_where_it_differs_from_the_rdp_headline_by_more_than_ten_percent():
    from fedcore.sweep.rows import make_row

    rows = [make_row("kdp_fl", 100.0, 0, 0.9, 99.4, "record", 0.1, match="headline", epsilon_pld=66.8),
            make_row("kdp_fl", 10.0, 0, 0.9, 9.95, "record", 0.1, match="headline", epsilon_pld=9.5)]
    table = summary_table(rows)
    assert "spent 99.4; PLD 66.8" in table and "PLD 9.5" not in table and "RDP accountant" in table
    assert "epsilon_pld" in rows_csv(rows).splitlines()[0]


def test_each_scenarios_default_columns_reach_where_its_idea_shows():
    """docs/benchmarks.md (issue 29): PLDP-FL's B over A shows from ε ≈ 100-1,000, HW-DPFL's weights at 10⁴."""
    assert SweepSpec(scenario="personalized", epsilons=None).epsilons[-2:] == (1000.0, 10000.0)
    assert SweepSpec(scenario="mixed_noniid", epsilons=None).epsilons[-1] == 10000.0
    assert SweepSpec(epsilons=None).epsilons == SweepSpec().epsilons
