"""Reproducing the papers: presets, the ``reproduce`` command, the claim checks, the Papers page."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fedcore.cli import main
from fedcore.config import RunConfig
from fedcore.catalog import PRESETS
from fedcore.resolve import preset_config
from fedcore.papers import PAPERS
from fedcore.reproduce.run import QUICK_LABEL, reproduce, row_configs
from fedcore.papers.spec import Claim
from fedcore.reproduce.stats import RowStats

ROOT = Path(__file__).resolve().parents[1]
ALL_ROWS = [(p.key, t.key, r) for p in PAPERS.values() for t in p.tables for r in t.rows]


# --- presets ---------------------------------------------------------------------------------
def test_the_five_papers_are_registered():
    assert set(PAPERS) == {"pldp", "ldp_fl", "hw_dpfl", "kdp_fl", "uldp"}


@pytest.mark.parametrize("name", ["pldp_mnist_iid_c", "pldp_digits_iid_a", "ldp_fl_mnist_eps1",
                                  "hw_dpfl_mnist_noniid", "kdp_fl_fmnist_noniid_eps1", "uldp_mnist_dsdp"])
def test_headline_presets_exist_under_paper_dataset_setting_names(name):
    assert name in PRESETS


@pytest.mark.parametrize("paper,table,row", ALL_ROWS, ids=[r.preset for _, _, r in ALL_ROWS])
def test_every_paper_preset_builds_a_valid_config(paper, table, row):
    cfg = preset_config(row.preset)
    assert isinstance(cfg, RunConfig)
    assert cfg.dataset == row.overrides["dataset"]


def test_pldp_mnist_iid_presets_carry_the_papers_settings():
    c = preset_config("pldp_mnist_iid_c")
    assert (c.num_clients, c.rounds, c.local.batch_size, c.test_size) == (3, 10, 50, 300)
    assert c.privacy.epsilon == (1.0, 5.0, 10.0) and c.privacy.delta == (1 / 500,)
    assert (c.privacy.mechanism, c.privacy.aggregator) == ("gaussian", "probabilistic")
    assert c.privacy.mechanism_options == {"clip": 200.0, "sample_rate": 0.8, "delta_from_size": True}
    assert preset_config("pldp_mnist_iid_a").privacy.aggregator == "mean"
    assert preset_config("pldp_mnist_iid_b").privacy.aggregator == "weighted"
    assert preset_config("pldp_mnist_iid_llh_a").privacy.epsilon == (1.0, 1.0, 10.0)
    assert preset_config("pldp_covertype_iid_lh_c").privacy.epsilon == (1.0,) * 5 + (10.0,) * 5


def test_other_papers_presets_carry_their_settings():
    ldp = preset_config("ldp_fl_mnist_eps1")
    assert (ldp.num_clients, ldp.rounds, ldp.local.lr, ldp.privacy.epsilon) == (100, 10, 0.03, (1.0,))
    assert ldp.privacy.mechanism_options["radius"] == 0.075 and ldp.privacy.aggregator == "mean"
    hw = preset_config("hw_dpfl_mnist_noniid")
    assert (hw.partition.kind, hw.partition.options["iid_fraction"], hw.privacy.aggregator) == ("mixed", 0.8, "hellinger")
    kdp = preset_config("kdp_fl_fmnist_noniid_eps1")
    assert (kdp.num_clients, kdp.participation, kdp.local.steps, kdp.local.batch_size, kdp.local.lr) == \
        (100, 0.2, 5, 32, 0.5)                     # the project's lambda; the paper's 0.05 in the 'paper λ' rows
    assert kdp.privacy.mechanism_options["rounds"] == "participation"
    assert preset_config("kdp_fl_fmnist_noniid_eps1_dpfedavg_paper_lr").local.lr == 0.05
    assert (kdp.privacy.aggregator, kdp.privacy.epsilon, kdp.partition.kind) == ("kalman", (1.0,), "kclass")
    assert preset_config("kdp_fl_fmnist_noniid_eps1_dpfedavg").privacy.aggregator == "mean"
    uldp = preset_config("uldp_mnist_dsdp")
    assert (uldp.num_clients, uldp.rounds, uldp.participation, uldp.sampling) == (1000, 300, 0.1, "poisson")
    opts = uldp.privacy.mechanism_options
    assert (opts["decay"], opts["recall"], opts["beta"], opts["reading"]) == (True, "sign", 0.06, "central")
    local = preset_config("uldp_mnist_dsdp_local").privacy.mechanism_options
    assert (local["reading"], local["noise"]) == ("local", "paper_thm3")


def test_every_table_says_what_it_chose_where_the_paper_is_silent():
    """The report prints each table's own choices, and the quick mode says how many rounds it trains."""
    from fedcore.reproduce.report import table_markdown

    for paper in PAPERS.values():
        for table in paper.tables:
            text = table_markdown({"title": table.title, "status": "not run", "rows": [], "notes": table.notes,
                                   "quick_notes": table.quick_notes})
            assert f"Settings the paper leaves open: {table.notes}" in text, (paper.key, table.key)
            assert table.notes.startswith("Unspecified by the paper, chosen here: "), (paper.key, table.key)
            if table.in_quick and "rounds" in table.quick:
                assert f"{table.quick['rounds']} rounds" in table.quick_notes, (paper.key, table.key)


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_quick_and_full_configs_of_every_table_are_valid(paper):
    for table in PAPERS[paper].tables:
        for quick in (False, True):
            configs = row_configs(table, quick=quick)
            assert configs, table.key
        if table.quick_rows:
            assert set(row_configs(table, quick=True)) == set(table.quick_rows)


# --- claims ----------------------------------------------------------------------------------
LABELS = {"a": "A", "b": "B", "c": "C", "dp": "DP", "dsdp": "DSDP"}


def _seeds(*finals, eps=1.0):
    return RowStats(list(finals), seeds=tuple(range(len(finals))), epsilon=eps)


def test_order_claim_holds_only_when_every_step_is_ordered():
    claim = Claim("order", ("c", "b", "a"))
    ok = claim.check({"a": _seeds(0.50, 0.52), "b": _seeds(0.60, 0.61), "c": _seeds(0.70, 0.72)}, LABELS)
    assert ok["verdict"] == "holds" and ok["holds"] is True
    assert ok["detail"].startswith("C 71.00 ≥ B 60.50 ≥ A 51.00; paired by seed (n=2): C − B +10.50")
    bad = claim.check({"a": _seeds(0.5, 0.5, 0.5), "b": _seeds(0.7, 0.71, 0.7), "c": _seeds(0.6, 0.6, 0.61)}, LABELS)
    assert bad["verdict"] == "does not hold" and bad["holds"] is False
    assert bad["detail"].startswith("C 60.33 < B 70.33 ≥ A 50.00")


def test_order_claim_tolerance_moves_the_threshold():
    stats = {"b": _seeds(0.600, 0.601, 0.599), "a": _seeds(0.605, 0.607, 0.604)}
    assert Claim("order", ("b", "a")).check(stats, LABELS)["verdict"] == "does not hold"
    assert Claim("order", ("b", "a"), tol=0.01).check(stats, LABELS)["verdict"] == "holds"


def test_faster_claim_pairs_each_seed_s_first_round_at_the_target():
    def row(*curves):
        return RowStats([c[-1] for c in curves], curves=curves, rounds=(1, 2, 3, 4), seeds=(0, 1), epsilon=1.0)

    fast = row([0.5, 0.8, 0.96, 0.97], [0.5, 0.8, 0.97, 0.97])
    slow = row([0.5, 0.7, 0.8, 0.95], [0.5, 0.7, 0.94, 0.96])
    never = row([0.5, 0.9, 0.9, 0.9], [0.5, 0.9, 0.9, 0.9])
    claim = Claim("faster", ("dsdp",), than="dp")
    r = claim.check({"dsdp": fast, "dp": slow}, LABELS, target=0.95)
    assert r["verdict"] == "holds" and r["detail"].startswith("DSDP 3 rounds vs DP 4 rounds (target 95 %")
    assert claim.check({"dsdp": slow, "dp": fast}, LABELS, target=0.95)["verdict"] == "does not hold"
    assert claim.check({"dsdp": fast, "dp": never}, LABELS, target=0.95)["verdict"] == "holds"
    assert claim.check({"dsdp": never, "dp": never}, LABELS, target=0.95)["verdict"] == "inconclusive"


def test_an_ordering_the_paired_interval_does_not_decide_is_inconclusive():
    from fedcore.reproduce.report import claim_lines

    c = Claim("order", ("k", "d"))
    close = c.check({"k": _seeds(0.239, 0.191), "d": _seeds(0.240, 0.189)}, {"k": "KDP", "d": "DP"})
    assert close["verdict"] == "inconclusive" and close["holds"] is None
    assert "**inconclusive**" in claim_lines({"claims": [close]})[0]
    clear = c.check({"k": _seeds(0.50, 0.52, 0.51), "d": _seeds(0.30, 0.31, 0.30)}, {"k": "KDP", "d": "DP"})
    assert "**holds**" in claim_lines({"claims": [clear]})[0]


def test_claim_with_missing_results_is_not_checked():
    r = Claim("order", ("c", "a")).check({"a": RowStats([0.5])}, LABELS)
    assert r["holds"] is None and "C" in r["detail"]


def test_row_stats_mean_and_sample_std():
    """One std convention (issue 29): the sample std (n - 1), as the sweeps' cells."""
    from fedcore.sweep.rows import mean_std

    s = RowStats([0.5, 0.7])
    assert s.mean == pytest.approx(0.6) and s.std == pytest.approx(0.1 * math.sqrt(2))
    assert (s.mean, s.std) == mean_std([0.5, 0.7])
    assert RowStats([0.4]).std == 0.0
    assert math.isclose(RowStats([0.4], curves=[[None, 0.4]], rounds=[1, 2]).rounds_to(0.3), 2)


# --- the reproduce command -------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """``reproduce pldp --quick`` on digits only, 1 seed, 2 rounds, via the CLI."""
    out = tmp_path_factory.mktemp("repro")
    code = main(["reproduce", "pldp", "--quick", "--tables", "digits_iid", "--seeds", "1",
                 "--set", "rounds=2", "--out", str(out)])
    assert code == 0
    return out


def test_reproduce_writes_the_json_record_with_per_round_curves(tiny_run):
    record = json.loads((tiny_run / "pldp.json").read_text())
    assert record["paper"] == "pldp" and record["seeds"] == [0]
    assert record["mode"].startswith(QUICK_LABEL) and "rounds=2" in record["mode"]
    (table,) = record["tables"]
    assert table["key"] == "digits_iid" and table["status"] == "ran"
    rows = {r["key"]: r for r in table["rows"]}
    assert set(rows) == {"nonoise", "a", "b", "c", "c_m", "b_ivw", "c_max"}
    for r in rows.values():
        assert r["rounds"] == [1, 2] and len(r["curves"]) == 1 and len(r["curves"][0]) == 2
        assert r["finals"] == [r["curves"][0][-1]] and r["std"] == 0.0
        assert 0.0 <= r["mean"] <= 1.0
    assert rows["a"]["gain"] == 0.0
    assert rows["c"]["gain"] == pytest.approx(rows["c"]["mean"] - rows["a"]["mean"])
    (claim,) = table["claims"]
    assert claim["claim"].startswith("C ≥ B ≥ A") and claim["verdict"] == "inconclusive"   # one seed
    # the headline epsilon beside every row: infinite (null) without noise, finite and local otherwise
    assert rows["nonoise"]["epsilon_headline"] == [None] and rows["nonoise"]["threat_model"] == "none"
    assert rows["a"]["threat_model"] == "local" and rows["a"]["epsilon_headline"][0] > 0
    # rule C reports its empty-round rate; C-max never has an empty round
    assert 0.0 <= rows["c"]["signals"]["empty_round"] <= 1.0 and rows["c_max"]["signals"]["empty_round"] == 0.0


def test_rerunning_some_tables_keeps_the_others(tmp_path):
    assert main(["reproduce", "pldp", "--quick", "--tables", "digits_iid", "--seeds", "1",
                 "--set", "rounds=1", "--out", str(tmp_path)]) == 0
    assert main(["reproduce", "pldp", "--quick", "--tables", "mnist_iid", "--seeds", "1",
                 "--set", "rounds=1", "--set", "train_size=300", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "pldp.json").read_text())
    assert [t["key"] for t in record["tables"]] == ["digits_iid", "mnist_iid"]
    assert all(t["seeds"] == [0] and "rounds=1" in t["mode"] for t in record["tables"])


def test_every_table_with_clipping_has_no_privacy_and_clip_only_rows():
    for key in ("hw_dpfl", "kdp_fl", "uldp"):
        for table in PAPERS[key].tables:
            rows = {r.key for r in table.rows}
            assert "fedavg" in rows and "clip" in rows, (key, table.key)
    clip = preset_config("kdp_fl_fmnist_noniid_clip")
    assert clip.privacy.mechanism_options["noise_multiplier"] == 0.0 and clip.local.lr == 0.5
    assert preset_config("kdp_fl_fmnist_noniid_clip_paper_lr").local.lr == 0.05
    uldp = preset_config("uldp_mnist_clip").privacy.mechanism_options
    assert uldp["noise"] == "fixed" and uldp["noise_multiplier"] == 1e-9 and uldp["decay"] is False


def test_rows_add_to_a_stored_table_and_a_rerun_resumes_from_the_record(tmp_path):
    args = ["reproduce", "pldp", "--quick", "--tables", "digits_iid", "--set", "rounds=1", "--out", str(tmp_path)]
    assert main(args + ["--seeds", "1", "--rows", "a,b"]) == 0
    first = json.loads((tmp_path / "pldp.json").read_text())["tables"][0]
    ran = {r["key"]: r for r in first["rows"] if r.get("finals")}
    assert set(ran) == {"a", "b"} and first["command"].endswith("--rows a,b --set rounds=1")
    assert main(args + ["--seeds", "1", "--rows", "c"]) == 0
    second = {r["key"]: r for r in json.loads((tmp_path / "pldp.json").read_text())["tables"][0]["rows"]}
    assert {k for k, r in second.items() if r.get("finals")} == {"a", "b", "c"}
    assert second["a"]["finals"] == ran["a"]["finals"]          # kept, not retrained
    lines = []
    record = reproduce("pldp", quick=True, tables=["digits_iid"], seeds=2, extra={"rounds": 1}, out=tmp_path,
                       rows=["a"], log=lines.append)
    assert any("a / seed 0" in line and "from the record" in line for line in lines)
    assert not any("a / seed 1" in line and "from the record" in line for line in lines)
    row = next(r for r in record["tables"][0]["rows"] if r["key"] == "a")
    assert row["seeds"] == [0, 1] and row["finals"][0] == ran["a"]["finals"][0]
    assert main(args + ["--rows", "nope"]) == 2
    # --no-resume retrains the rows asked for and keeps the others
    assert main(args + ["--seeds", "1", "--rows", "b", "--no-resume"]) == 0
    third = {r["key"]: r for r in json.loads((tmp_path / "pldp.json").read_text())["tables"][0]["rows"]}
    assert {k for k, r in third.items() if r.get("finals")} == {"a", "b", "c"}
    assert third["a"]["finals"] == row["finals"] and third["c"]["finals"] == second["c"]["finals"]


def test_a_tables_rows_and_seeds_train_in_lockstep_with_the_results_they_give_alone(tmp_path):
    """7 rows x 2 seeds of one table (no noise, local DP with rules A/B/C: different mechanisms and
    aggregators, one local training) train as one lockstep batch; each run gives what it gives alone."""
    kw = dict(quick=True, tables=["digits_iid"], seeds=2, extra={"rounds": 2}, log=lambda _: None)
    together = reproduce("pldp", out=tmp_path / "lockstep", **kw)["tables"][0]["rows"]
    alone = reproduce("pldp", out=tmp_path / "alone", lockstep=False, **kw)["tables"][0]["rows"]
    assert [r["key"] for r in together] == [r["key"] for r in alone]
    for t, a in zip(together, alone):
        assert t["lockstep"] == [14, 14] and a["lockstep"] == [1, 1]
        assert t["finals"] == pytest.approx(a["finals"], abs=0.01), t["key"]
        for ct, ca in zip(t["curves"], a["curves"]):
            assert ct == pytest.approx(ca, abs=0.01)
        assert t["epsilon_headline"] == pytest.approx(a["epsilon_headline"], rel=1e-6)
        assert t["threat_model"] == a["threat_model"]
        assert t["signals"].keys() == a["signals"].keys()
        assert t["signals"] == pytest.approx(a["signals"], abs=0.05)


def test_the_lockstep_key_lets_upload_noise_share_a_batch_but_not_a_different_local_training():
    from fedcore.engine.lockstep import batch_key

    uldp = [preset_config(f"uldp_mnist_{r}") for r in ("fedavg", "clip", "dp", "dsdp", "ddp_local")]
    assert len({batch_key(c) for c in uldp}) == 1           # noise on the uploads only
    kdp = {r: preset_config(f"kdp_fl_fmnist_noniid_{r}") for r in ("fedavg", "clip", "clip_paper_lr")}
    assert batch_key(kdp["clip"]) != batch_key(kdp["fedavg"])          # per-sample clipping
    assert batch_key(kdp["clip"]) != batch_key(kdp["clip_paper_lr"])   # another learning rate
    other_clip = kdp["clip"].with_overrides({"privacy.mechanism_options": {"clip_norm": 2.0, "noise_multiplier": 0.0}})
    assert batch_key(other_clip) != batch_key(kdp["clip"])


def test_reproduce_writes_the_markdown_table_paper_vs_ours(tiny_run):
    md = (tiny_run / "pldp.md").read_text()
    assert "paper vs ours" in md and QUICK_LABEL in md
    assert "| method | preset | paper acc % | ours acc % (mean ± std) |" in md
    assert "| A: arithmetic mean | pldp_digits_iid_a |" in md
    assert "C ≥ B ≥ A (final accuracy): **" in md


def test_refresh_recomputes_gains_and_claims_from_the_stored_runs(tiny_run):
    from fedcore.reproduce.run import refresh

    record = json.loads((tiny_run / "pldp.json").read_text())
    rows = {r["key"]: r for r in record["tables"][0]["rows"]}
    for key, acc in (("a", 0.2), ("b", 0.3), ("c", 0.4)):
        rows[key].update(finals=[acc, acc + 0.01], curves=[[0.1, acc], [0.1, acc + 0.01]], seeds=[0, 1],
                         epsilon_headline=[5.0, 5.0])
    table = refresh(record)["tables"][0]
    assert table["claims"][0]["verdict"] == "holds"
    assert {r["key"]: r["gain"] for r in table["rows"] if r["key"] in "abc"} == pytest.approx(
        {"a": 0.0, "b": 0.1, "c": 0.2})


def test_a_table_whose_dataset_is_unavailable_is_recorded_as_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    record = reproduce("pldp", quick=True, tables=["covertype_noniid"], seeds=1, extra={"rounds": 1},
                       out=tmp_path, log=lambda line: None)
    (table,) = record["tables"]
    assert table["status"].startswith("skipped") and "covertype" in table["status"]
    assert all(c["holds"] is None for c in table["claims"])


def test_unknown_paper_or_table_is_a_clear_error(tmp_path, capsys):
    assert main(["reproduce", "pldp", "--tables", "nope", "--out", str(tmp_path)]) == 2
    assert "no table 'nope'" in capsys.readouterr().err


# --- the Papers page ---------------------------------------------------------------------------
@pytest.fixture()
def papers_page(tiny_run, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FEDCORE_REPRODUCTION", str(tiny_run))
    return AppTest.from_file(str(ROOT / "pages" / "papers.py"), default_timeout=120).run()


def test_papers_page_shows_each_paper_our_table_claims_and_plot(papers_page):
    at = papers_page
    assert not at.exception and not at.error
    assert [t.label for t in at.tabs] == ["PLDP-FL", "LDP-FL", "HW-DPFL", "KDP-FL", "ULDP-FED"]
    text = "\n".join(m.value for m in at.markdown)
    assert "C ≥ B ≥ A (final accuracy): **" in text
    # privacy: the threat model in words, our headline epsilon, the paper's claim labelled as such
    assert "**local DP**" in text and "Headline ε of our runs" in text and "**Paper's claim**" in text
    assert "ε = ∞" in text
    first = next(d.value for d in at.dataframe if "preset" in d.value.columns)   # the first paper's table
    cells = dict(zip(first["preset"], first["headline ε (threat model)"]))
    assert cells["pldp_digits_iid_nonoise"] == "∞ (no privacy)" and "(local DP)" in cells["pldp_digits_iid_a"]
    charts = at.get("plotly_chart")
    spec = json.loads(charts[0].proto.spec)
    assert spec["layout"]["uirevision"] == "papers-pldp-digits_iid"
    assert {t["name"] for t in spec["data"]} >= {"A: arithmetic mean", "C: probability-based selection"}
    first = next(d.value for d in at.dataframe if "preset" in d.value.columns)   # the first paper's table
    assert list(first["preset"])[:2] == ["pldp_digits_iid_nonoise", "pldp_digits_iid_a"]
    assert sum("Not reproduced yet" in i.value for i in at.info) == 4
    assert at.selectbox(key="papers.kdp_fl.preset").value == "kdp_fl_fmnist_noniid_fedavg"


def test_papers_page_button_loads_the_preset_into_the_playground(tiny_run, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FEDCORE_REPRODUCTION", str(tiny_run))
    monkeypatch.setenv("FEDCORE_STORE", str(tmp_path / "store"))
    try:
        _open_paper_preset_from_the_app(tmp_path)
    finally:
        from pages.components import server

        server.job_manager(str(tmp_path / "store")).close()


def _open_paper_preset_from_the_app(tmp_path):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/papers.py").run()
    assert not at.exception and at.title[0].value == "Papers"
    at.selectbox(key="papers.pldp.preset").set_value("pldp_mnist_iid_c").run()
    at.button(key="papers.pldp.open").click().run()
    assert not at.exception
    assert at.title[0].value == "Playground"
    assert at.session_state["pg.preset"] == "pldp_mnist_iid_c"
    flat = at.session_state["pg.flat"]
    assert flat["privacy.aggregator"] == "probabilistic" and flat["privacy.epsilon"] == [1.0, 5.0, 10.0]
    assert at.query_params["preset"] in ("pldp_mnist_iid_c", ["pldp_mnist_iid_c"])


def test_papers_page_filters_what_runs_here_and_shows_each_tables_verdict(tiny_run, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FEDCORE_REPRODUCTION", str(tiny_run))
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "no-data"))
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    at = AppTest.from_file(str(ROOT / "pages" / "papers.py"), default_timeout=120).run()
    assert not at.exception
    pldp = at.selectbox(key="papers.pldp.preset")
    assert pldp.options and all("runs here" in o and o.startswith("pldp_digits") for o in pldp.options)
    assert at.selectbox(key="papers.kdp_fl.preset").value is None        # F-MNIST / CIFAR-10 files absent
    text = "\n".join(m.value for m in at.markdown)
    assert "**Verdict: inconclusive** · 1 seed(s) per row" in text        # one seed: no spread to judge by
    at.toggle(key="papers.here").set_value(False).run()
    options = at.selectbox(key="papers.pldp.preset").options
    assert any("needs mnist (not on this server)" in o for o in options) and len(options) > len(pldp.options)


def test_accounting_is_replayed_for_stored_rows_without_a_headline(tmp_path):
    """``reproduce PAPER --accounting`` (issue 29): a record from before the headline field gets each
    row's headline ε, threat model and caveat from a replay of its accounting, equal to what training gave."""
    from fedcore.reproduce.run import replay_accounting

    record = reproduce("pldp", quick=True, tables=["digits_iid"], seeds=1, extra={"rounds": 1}, out=tmp_path,
                       log=lambda _: None, rows=["a", "b"])
    trained = {r["key"]: r["epsilon_headline"] for r in record["tables"][0]["rows"] if r.get("finals")}
    assert trained and all(trained.values())
    stored = json.loads((tmp_path / "pldp.json").read_text())
    for row in stored["tables"][0]["rows"]:
        for key in ("epsilon_headline", "threat_model", "caveat"):
            row.pop(key, None)
    (tmp_path / "pldp.json").write_text(json.dumps(stored, indent=1))
    assert replay_accounting("pldp", tmp_path, log=lambda _: None) == len(trained)
    replayed = {r["key"]: r for r in json.loads((tmp_path / "pldp.json").read_text())["tables"][0]["rows"]}
    for key, heads in trained.items():
        assert replayed[key]["epsilon_headline"] == pytest.approx(heads, rel=1e-9)
        assert replayed[key]["threat_model"] == "local" and replayed[key]["caveat"] == ""


def test_a_seed_resumed_from_a_record_without_caveats_keeps_the_caveat_its_config_implies():
    """Records from before the caveat key: a resumed seed used to carry "" and erase the row's caveat."""
    from fedcore.mechanisms import caveat_of
    from fedcore.reproduce.run import _stored_runs
    from fedcore.resolve import preset_config

    config = {k: v for k, v in preset_config("uldp_mnist_ddp").to_dict().items() if k != "seed"}
    entry = {"config": config, "finals": [0.9], "seeds": [0], "curves": [[0.9]], "rounds": 300}
    assert caveat_of(config["privacy"]) and _stored_runs(entry, config)[0]["caveat"] == caveat_of(config["privacy"])
    assert _stored_runs({**entry, "caveat": ""}, config)[0]["caveat"] == ""     # a stored "" stands
