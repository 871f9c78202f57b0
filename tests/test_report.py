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


def test_verdicts_are_the_claims_own_and_the_table_reads_them():
    assert verdict({"verdict": "holds"}) == "holds"
    assert verdict({"holds": True}) == "not checked"          # stored before the paired rule: not judged
    hold, fail, open_, unequal = ({"verdict": v} for v in ("holds", "does not hold", "inconclusive", "unequal privacy"))
    assert table_verdict({"claims": [hold, fail]}) == "does not hold"
    assert table_verdict({"claims": [hold, hold]}) == "holds"
    assert table_verdict({"claims": [hold, open_]}) == "inconclusive"
    assert table_verdict({"claims": [unequal, {"verdict": "not checked"}]}) == "unequal privacy"
    assert table_verdict({"claims": [hold, unequal]}) == "holds where ε is equal"
    assert table_verdict({"claims": []}) == "not checked"


def test_the_report_s_header_states_the_paired_rule():
    from fedcore.reproduce.stats import RULE_TEXT

    text = DOC.read_text()
    assert RULE_TEXT in text and "95 % Student-t interval" in RULE_TEXT
    for stored in sorted((ROOT / "assets" / "reproduction").glob("*.md")):
        assert RULE_TEXT in stored.read_text(), stored.name


def test_the_prose_states_no_result_and_the_check_catches_one(tmp_path, capsys):
    assert document.prose_state(DOC.read_text()) == []
    doc = tmp_path / "reproduction.md"
    text = DOC.read_text()
    doc.write_text(text.replace("## Audited privacy", "The full table has one seed per row.\n\n## Audited privacy"))
    assert main(["reproduce", "--report", "--check", "--doc", str(doc)]) == 1
    assert "prose" in capsys.readouterr().out
