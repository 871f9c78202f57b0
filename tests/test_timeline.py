"""benchmarks.timeline: the marks of a run's output, in order."""
import sys

from benchmarks.timeline import timeline

SCRIPT = """
import sys, time
print('run abc: digits', flush=True)
for r in (1, 2, 3):
    time.sleep(0.05)
    print(f'[###] round {r}/3  acc 0.5', flush=True)
time.sleep(0.05)
print('finished: 3 rounds in 0.2s', flush=True)
print('warning', file=sys.stderr, flush=True)
sys.exit(3)
"""


def test_the_marks_follow_the_output_and_the_exit_status_is_kept():
    lines = []
    marks = timeline([sys.executable, "-c", SCRIPT], echo=lines.append)
    assert lines[0] == "run abc: digits" and lines[-1] == "warning" and len(lines) == 6
    assert marks["returncode"] == 3 and marks["rounds_seen"] == 3
    order = [marks[k] for k in ("first_output_s", "round_1_s", "last_round_s", "finished_s", "exit_s")]
    assert order == sorted(order) and marks["round_1_s"] < marks["last_round_s"]
    assert marks["after_last_round_s"] == round(marks["finished_s"] - marks["last_round_s"], 3) > 0
