"""benchmarks.roofline: a profile reads several warm rounds, and busy time is a union of spans."""
from benchmarks.roofline import covered, profile_round
from fedcore.config import RunConfig


def test_overlapping_spans_count_once():
    assert covered([]) == 0
    assert covered([(0, 2), (1, 3), (5, 6)]) == 4
    assert covered([(0, 10), (2, 3), (4, 5)]) == 10     # nested spans (a graph's overlapping kernels)
    assert covered([(3, 4), (0, 1)]) == 2               # any order


def test_a_profile_reports_every_profiled_round_and_the_median_one():
    cfg = RunConfig(rounds=2, num_clients=4, test_size=100, device="cpu")
    text = profile_round(cfg, rounds=3)
    head, median_line = text.splitlines()[:2]
    assert head.startswith("aten kernels busy in rounds 2-4: ")
    shares = head.split(": ")[1].split(" (median")[0].split(", ")
    assert len(shares) == 3 and all(s.endswith("%") for s in shares)
    median = head.split("(median ")[1].split("%")[0] + "%"
    assert sorted(shares, key=lambda s: int(s[:-1]))[1] == median
    assert median_line.startswith("aten kernels ") and f"({median})" in median_line
