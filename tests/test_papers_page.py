"""The Papers page (pages/papers.py), driven headlessly with streamlit.testing.v1.AppTest:
'Only what runs here' lists the presets whose dataset this server offers and holds, each
preset's label says where it runs and how long it takes, and every reproduced table shows the
verdict and seed count computed from its stored record."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.catalog import PRESETS
from fedcore.reproduce import report, results
from fedcore.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def papers_page(store_dir, tmp_path, monkeypatch):
    """The page on an offline server whose data root holds MNIST only (digits is bundled)."""
    from pages.components import server

    (tmp_path / "data" / "MNIST" / "raw").mkdir(parents=True)
    (tmp_path / "data" / "MNIST" / "raw" / "train-images-idx3-ubyte.gz").write_bytes(b"")
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "data"))
    server.limits.clear()

    def open_page(**env) -> AppTest:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        server.limits.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.switch_page("pages/papers.py").run()
        assert not at.exception
        return at
    yield open_page
    server.limits.clear()


def options(at) -> dict[str, list[str]]:
    """``{paper: its preset picker's labels}``."""
    return {key: at.selectbox(key=f"papers.{key}.preset").options for key in PAPERS}


def dataset(label: str) -> str:
    return PRESETS.get(label.split(" · ")[0]).get("dataset", "digits")


def test_only_what_runs_here_lists_the_presets_whose_data_is_here(papers_page):
    at = papers_page()
    listed = [label for labels in options(at).values() for label in labels]
    assert listed and {dataset(label) for label in listed} <= {"digits", "mnist"}
    assert "mnist" in {dataset(label) for label in listed}
    assert all(" · runs here" in label for label in listed)
    at.toggle(key="papers.here").set_value(False).run()
    every = [label for labels in options(at).values() for label in labels]
    assert len(every) > len(listed)
    assert any(dataset(label) == "cifar10" and "needs cifar10 (not on this server)" in label for label in every)
    assert all(("runs here" in label) == (dataset(label) in ("digits", "mnist")) for label in every)


def test_a_dataset_the_host_does_not_offer_does_not_run_here(papers_page):
    at = papers_page(FEDCORE_DATASETS="digits")                   # MNIST's files are here, but not offered
    listed = [label for labels in options(at).values() for label in labels]
    assert listed and {dataset(label) for label in listed} == {"digits"}


def test_every_label_carries_a_duration(papers_page):
    at = papers_page()
    at.toggle(key="papers.here").set_value(False).run()
    for labels in options(at).values():
        for label in labels:
            assert label.rsplit(" · ", 1)[-1].startswith("~"), label


def verdict_lines(at) -> str:
    return "\n".join(str(e.value) for e in at.markdown)


def test_each_reproduced_table_shows_the_verdict_and_seeds_its_record_gives(papers_page):
    at = papers_page()
    text = verdict_lines(at)
    summaries = [row for df in at.dataframe if "verdict" in df.value.columns for row in df.value.to_dict("records")]
    expected = []
    for key in PAPERS:
        for table in (results.load(key) or {}).get("tables", []):
            if table["status"] == "ran":
                verdict, seeds = report.table_verdict(table), report.table_seeds(table)
                assert f"**Verdict: {verdict}** · {seeds} seed(s) per row" in text, (key, table["key"])
                expected.append((table["title"], verdict, seeds))
    assert expected
    assert sorted((r["table"], r["verdict"], r["seeds per row"]) for r in summaries) == sorted(expected)


def test_the_verdict_follows_the_record_not_the_page(papers_page, tmp_path, monkeypatch):
    folder = tmp_path / "records"
    shutil.copytree(results.results_dir(), folder)
    record = json.loads((folder / "kdp_fl.json").read_text())
    table = next(t for t in record["tables"] if t["status"] == "ran")
    for row in table["rows"]:                                       # keep one seed of every row
        for field in ("seeds", "finals", "curves", "seconds_per_seed", "load_average", "epsilon_headline"):
            if isinstance(row.get(field), list):
                row[field] = row[field][:1]
    from fedcore.reproduce.run import fill_in                        # its claims judged anew on that seed

    spec = next(t for t in PAPERS["kdp_fl"].tables if t.key == table["key"])
    table.update(fill_in(spec, table))
    (folder / "kdp_fl.json").write_text(json.dumps(record))
    monkeypatch.setenv("FEDCORE_REPRODUCTION", str(folder))
    text = verdict_lines(papers_page())
    assert report.table_seeds(table) == "1" and report.table_verdict(table) in ("inconclusive", "not checked")
    assert f"**Verdict: {report.table_verdict(table)}** · 1 seed(s) per row" in text


def test_the_headline_range_counts_the_noised_rows_and_names_the_clip_only_ones(papers_page):
    """KDP-FL's record-level rows include clip-only runs (ε = ∞): the range is that of the DP
    rows' headline ε, and the clip-only rows are said to be left out rather than swallowing the range."""
    at = papers_page()
    rows = [r for t in results.load("kdp_fl")["tables"] for r in t["rows"] if r.get("threat_model") == "record"]
    finite = [e for r in rows for e in r["epsilon_headline"] if e is not None]
    assert finite and len(finite) < sum(len(r["epsilon_headline"]) for r in rows)
    from fedcore.accounting.headline import format_epsilon

    span = (f"**{format_epsilon(min(finite))} – {format_epsilon(max(finite))}**. Clipping-only reference rows "
            "are left out.")
    assert any(span in ln for ln in verdict_lines(at).splitlines() if "Record-level DP" in ln), span


def test_the_page_states_the_paired_rule_and_each_pldp_table_s_cause(papers_page):
    """Issue 52 §5: every PLDP-FL table where C trails the rule it is claimed to beat shows the sentence
    naming its measured cause (or that neither separates), the same as docs/reproduction.md."""
    from fedcore.reproduce.stats import RULE_TEXT

    at = papers_page()
    text = verdict_lines(at)
    assert RULE_TEXT in text
    ran, _ = results.paper_tables(PAPERS["pldp"], results.load("pldp"))
    causes = [" ".join(report.rule_c_causes(t)) for t in ran if report.rule_c_causes(t)]
    assert causes and all(c in text for c in causes)
    ran, _ = results.paper_tables(PAPERS["kdp_fl"], results.load("kdp_fl"))
    assert all(line in text for t in ran for line in report.rounds_status(t) if line.startswith("- "))
