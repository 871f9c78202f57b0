"""docs/reproduction.md is generated from the stored records (``reproduce --report``)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from fedcore.cli import main
from fedcore.reproduce import document
from fedcore.reproduce.report import table_verdict, verdict

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reproduction.md"


def test_the_document_matches_what_the_records_generate(capsys):
    assert main(["reproduce", "--report", "--check"]) == 0, capsys.readouterr().out
    assert document.check() == []


def test_each_stored_record_s_markdown_is_what_the_record_generates():
    from fedcore.reproduce.report import markdown
    from fedcore.reproduce.results import REPO

    folder = REPO / "assets" / "reproduction"
    for stored in sorted(folder.glob("*.md")):
        record = json.loads(stored.with_suffix(".json").read_text())
        assert stored.read_text() == markdown(record), f"{stored.name} is stale: rewrite it from its record"


def test_editing_one_number_in_the_document_fails_the_check(tmp_path, capsys):
    doc = tmp_path / "reproduction.md"
    shutil.copy(DOC, doc)
    text = doc.read_text()
    summary = text.index("<!-- generated: uldp -->")
    m = re.compile(r"\d+\.\d\d").search(text, summary)
    assert m is not None
    edited = text[:m.start()] + ("1" if text[m.start()] != "1" else "2") + text[m.start() + 1:]
    doc.write_text(edited)
    assert main(["reproduce", "--report", "--check", "--doc", str(doc)]) == 1
    assert "uldp" in capsys.readouterr().out
    # --report writes the blocks back; the check passes again and the prose is kept
    assert main(["reproduce", "--report", "--doc", str(doc)]) == 0
    assert main(["reproduce", "--report", "--check", "--doc", str(doc)]) == 0
    assert doc.read_text() == text


def test_prose_outside_the_blocks_is_kept_and_a_missing_block_is_reported(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("# Title\n\nProse.\n\n<!-- generated: summary -->\nstale\n<!-- /generated: summary -->\n")
    stale = document.check(doc)
    assert "summary" in stale and "pldp" in stale           # pldp has no block in this document
    document.write(doc)
    text = doc.read_text()
    assert text.startswith("# Title\n\nProse.\n") and "stale" not in text and "| paper | table |" in text


def test_every_stored_record_names_a_command_runnable_from_the_repository():
    for path in sorted((ROOT / "assets" / "reproduction").glob("*.json")):
        record = json.loads(path.read_text())
        for table in record["tables"]:
            command = table.get("command") or record["command"]
            assert command.startswith(f"python -m fedcore reproduce {record['paper']}"), (path.name, command)
            assert "script" not in command and "(" not in command


def _table(finals_a, finals_b):
    rows = [{"key": "a", "finals": finals_a}, {"key": "b", "finals": finals_b}]
    return {"rows": rows}


def test_verdicts_come_from_the_seeds_spread():
    holds = {"holds": True, "within_noise": False}
    assert verdict(holds, _table([0.9, 0.91], [0.5, 0.52])) == "holds"
    assert verdict({"holds": False, "within_noise": False}, _table([0.5, 0.5], [0.9, 0.9])) == "does not hold"
    assert verdict({"holds": True, "within_noise": True}, _table([0.6, 0.7], [0.62, 0.66])) == "inconclusive"
    assert verdict(holds, _table([0.9], [0.5])) == "inconclusive"        # one seed: no spread to judge by
    assert verdict({"holds": None}, _table([], [])) == "not checked"
    t = {**_table([0.9, 0.9], [0.5, 0.5]), "claims": [holds, {"holds": False, "within_noise": False}]}
    assert table_verdict(t) == "does not hold"
    assert table_verdict({**t, "claims": [holds]}) == "holds"
    assert table_verdict({**t, "claims": [holds, {"holds": True, "within_noise": True}]}) == "inconclusive"
