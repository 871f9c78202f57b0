"""PLDP-FL's rule C: the sentence naming why it trails is decided by the measured rows (issue 39 §3)."""
from fedcore.reproduce.decompose import rule_c_causes
from fedcore.reproduce.report import table_markdown


def _row(key, finals, empty=None):
    mean = sum(finals) / len(finals)
    std = (sum((f - mean) ** 2 for f in finals) / (len(finals) - 1)) ** 0.5
    return {"key": key, "label": key, "preset": key, "finals": finals, "seeds": list(range(len(finals))),
            "mean": mean, "std": std,
            "signals": {} if empty is None else {"empty_round": empty}}


def _table(c, c_max, b):
    return {"key": "t", "title": "t", "status": "ran", "notes": "", "reference": "a",
            "rows": [_row("a", [0.50, 0.51, 0.52]), _row("b", b), _row("c", c, empty=0.4), _row("c_max", c_max)],
            "claims": [{"claim": "C ≥ B ≥ A (final accuracy)", "verdict": "does not hold", "holds": False, "detail": ""}]}


def test_empty_rounds_named_when_c_max_closes_the_gap():
    lines = rule_c_causes(_table(c=[0.40, 0.41, 0.42], c_max=[0.60, 0.61, 0.62], b=[0.60, 0.62, 0.61]))
    assert "40 % of its rounds" in lines[0]
    assert lines[1].startswith("The numbers support the empty rounds as the cause")


def test_averaging_named_when_c_max_stays_with_c():
    lines = rule_c_causes(_table(c=[0.40, 0.41, 0.42], c_max=[0.40, 0.42, 0.41], b=[0.60, 0.62, 0.61]))
    assert lines[1].startswith("The numbers support the averaging as the cause")


def test_both_and_neither():
    both = rule_c_causes(_table(c=[0.40, 0.41, 0.42], c_max=[0.50, 0.51, 0.52], b=[0.60, 0.62, 0.61]))
    assert both[1].startswith("The numbers support both causes")
    # seeds whose pairs disagree in sign: the paired intervals include zero
    noisy = rule_c_causes(_table(c=[0.30, 0.45, 0.60], c_max=[0.40, 0.42, 0.62], b=[0.38, 0.50, 0.61]))
    assert noisy[1].startswith("Neither cause separates")
    # a constant paired gap separates although the seeds spread widely (the rule pairs by seed)
    paired = rule_c_causes(_table(c=[0.30, 0.45, 0.60], c_max=[0.35, 0.50, 0.65], b=[0.40, 0.55, 0.70]))
    assert paired[1].startswith("The numbers support both causes")


def test_nothing_said_when_c_holds_or_rows_are_missing():
    table = _table(c=[0.70, 0.71, 0.72], c_max=[0.60, 0.61, 0.62], b=[0.60, 0.62, 0.61])
    table["claims"][0].update(holds=True, verdict="holds")
    assert rule_c_causes(table) == []
    table = _table(c=[0.40, 0.41, 0.42], c_max=[0.60, 0.61, 0.62], b=[0.60, 0.62, 0.61])
    table["rows"] = [r for r in table["rows"] if r["key"] != "c_max"]
    assert rule_c_causes(table) == []


def test_the_document_carries_the_sentence():
    table = _table(c=[0.40, 0.41, 0.42], c_max=[0.60, 0.61, 0.62], b=[0.60, 0.62, 0.61])
    assert "Why C trails B" in table_markdown(table)
