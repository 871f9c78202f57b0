"""The dashboard pages, driven headlessly with streamlit.testing.v1.AppTest.

Playground: widgets set, a run started and polled until it finished, errors named;
Compare: runs overlaid, seeds launched and grouped; History: reopen, export, delete.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard_server import wait_until  # scripts/ (tests/conftest.py puts it on the path)
from fedcore.catalog import METHODS
from fedcore.events import RunFinished, event_from_dict, replay

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
TIMEOUT = 120


def app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def qp(at, key: str) -> str:
    """A query parameter of the page's URL."""
    value = at.query_params[key]
    return value[0] if isinstance(value, list) else value


def by_label(widgets, label):
    return next(w for w in widgets if w.label == label)


def texts(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "warning", "success", "info")
             for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def progress_text(at) -> str:
    bars = at.get("progress")
    return bars[0].proto.text if bars else ""


def wait_on(at, condition, timeout: float, what) -> AppTest:
    """Run the page again every 0.3 s until ``condition(at)`` holds; fail with ``what(at)`` after
    ``timeout`` s scaled by the host's load (:func:`dashboard_server.wait_until`)."""
    def holds() -> bool:
        if condition(at):
            return True
        at.run()
        return False

    wait_until(holds, timeout, lambda: what(at), interval=0.3)
    return at


def wait_until_done(at, timeout=150) -> AppTest:
    wait_on(at, lambda a: any(s in progress_text(a) for s in ("finished", "stopped", "failed")), timeout,
            lambda a: f"run did not end; last progress {progress_text(a)!r}")
    return at.run()


@pytest.fixture(scope="module")
def finished_run(store_dir):
    """Press Run on the demo with 3 rounds (slider moved) and poll until it finished."""
    at = app()
    assert not at.exception
    by_label(at.slider, "Rounds").set_value(3).run()
    assert qp(at, "rounds") == "3"
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    return at


def test_playground_trains_the_demo_and_keeps_the_finished_run(finished_run):
    at = finished_run
    assert not at.exception
    assert "Round 3 / 3 · finished" in progress_text(at)
    assert "Finished 3 rounds" in texts(at)
    assert len(at.get("plotly_chart")) >= 3          # accuracy, epsilon, participation
    assert qp(at, "run")                              # the link reopens this run
    at.run()                                          # a rerun keeps it on screen
    assert "finished" in progress_text(at)


def test_a_replayed_run_says_so_and_trains_again_on_request(finished_run):
    at = finished_run
    by_label(at.button, "Run").click().run()          # same settings: replayed from the store
    assert "This result is a replay" in texts(at)
    first = qp(at, "run")
    by_label(at.button, "Train again").click().run()
    assert qp(at, "run") != first and "This result is a replay" not in texts(at)
    wait_until_done(at)


def test_slow_motion_trains_live_where_full_speed_replays(finished_run):
    """A Speed picked before Run means "let the class watch the rounds": the same settings train
    again (a run of its own, its rounds drawn one by one), never a replay of the finished one.
    A page of its own (the module's page stays on the finished run); its live run is deleted after."""
    from fedcore.runner.tempo import read_tempo
    from pages.components import state

    at = app()
    by_label(at.slider, "Rounds").set_value(3).run()
    by_label(at.button, "Run").click().run()          # full speed: the module's finished run, replayed
    assert "This result is a replay" in texts(at)
    replayed = qp(at, "run")
    at.session_state["pg.speed"] = "1 s per round"
    by_label(at.button, "Run").click().run()
    live = qp(at, "run")
    manager = state.manager()
    try:
        assert live != replayed and "This result is a replay" not in texts(at)
        assert read_tempo(manager.store, live)["delay"] == 1.0
    finally:
        if live != replayed:  # never the module's finished run
            manager.stop(live)
            wait_until(lambda: manager.store.get_job(live).status not in ("queued", "running"), TIMEOUT, "Stop")
            manager.delete(live)


def test_teaching_aids_epsilon_help_and_presets_grouped_by_paper(store_dir):
    at = app()
    presets = by_label(at.selectbox, "Preset")
    assert presets.value == "demo" and presets.options[0].startswith("demo · offline · ~")   # rough CPU duration
    assert presets.options[0].endswith(" s")
    assert any(o.startswith("[PLDP-FL] pldp_") and "needs mnist · ~" in o for o in presets.options)
    assert any(o.startswith("[KDP-FL] kdp_fl_fmnist") and o.endswith(" min") for o in presets.options)
    assert "What ε means, on one number" in texts(at)
    assert "e^ε times more likely" in by_label(at.radio, "Privacy budget ε").help


def test_defaults_are_the_offline_demo(store_dir):
    at = app()
    assert by_label(at.selectbox, "Preset").value == "demo"
    assert by_label(at.selectbox, "Dataset").value == "digits"
    assert by_label(at.number_input, "Clients").value == 10
    assert not at.error


def test_more_clients_than_samples_shows_an_error_naming_the_field(store_dir):
    at = app()
    by_label(at.number_input, "Clients").set_value(5000).run()
    errors = [e.value for e in at.error]
    assert any("num_clients" in e and "1437" in e for e in errors), errors
    assert by_label(at.button, "Run").disabled


def test_an_incompatible_combination_is_reported_by_field(store_dir):
    at = app()
    by_label(at.selectbox, "Mechanism (client side)").select("two_point").run()
    by_label(at.selectbox, "Aggregator (server side)").select("fedavg").run()
    errors = [e.value for e in at.error]
    assert any("privacy.aggregator" in e for e in errors), errors
    assert by_label(at.button, "Run").disabled


def test_a_method_recipe_fills_in_mechanism_aggregator_and_options(store_dir):
    name = next(n for n in METHODS.names() if METHODS.get(n).get("privacy.mechanism", "none") != "none")
    recipe = METHODS.get(name)
    at = app()
    by_label(at.selectbox, "Method (one-click recipe)").select(name).run()
    assert not at.exception
    assert by_label(at.selectbox, "Mechanism (client side)").value == recipe["privacy.mechanism"]
    if "privacy.aggregator" in recipe:
        assert by_label(at.selectbox, "Aggregator (server side)").value == recipe["privacy.aggregator"]
    assert qp(at, "method") == json.dumps(name)


def test_mechanism_options_are_generated_from_the_options_dataclass(store_dir):
    at = app()
    by_label(at.selectbox, "Mechanism (client side)").select("gaussian").run()
    clip = by_label(at.number_input, "clip")
    assert clip.value == 2.0                          # the dataclass default
    clip.set_value(3.0).run()
    assert json.loads(qp(at, "privacy.mechanism_options")) == {"clip": 3.0}
    assert any(c.label == "delta from size" for c in at.checkbox)


def test_per_client_budgets_sliders_then_tiers_table(store_dir):
    at = app(preset="demo")
    by_label(at.number_input, "Clients").set_value(4).run()
    by_label(at.radio, "Privacy budget ε").set_value("Per client").run()
    sliders = [s for s in at.select_slider if s.label.startswith("ε client")]
    assert len(sliders) == 4
    by_label(at.select_slider, "ε client 2").set_value(5.0).run()
    assert json.loads(qp(at, "privacy.epsilon")) == [1.0, 1.0, 5.0, 1.0]
    by_label(at.number_input, "Clients").set_value(12).run()    # many clients: number inputs, not 90-px sliders
    assert not [s for s in at.select_slider if s.label.startswith("ε client")]
    inputs = [i for i in at.number_input if i.label.startswith("ε client")]
    assert len(inputs) == 12
    by_label(at.number_input, "ε client 11").set_value(7.0).run()
    assert json.loads(qp(at, "privacy.epsilon"))[10:] == [1.0, 7.0]
    by_label(at.number_input, "Clients").set_value(30).run()
    by_label(at.radio, "Privacy budget ε").set_value("Tiers (paper groups)").run()
    assert not at.exception
    eps = json.loads(qp(at, "privacy.epsilon"))
    assert eps == [1.0] * 9 + [5.0] * 12 + [10.0] * 9  # L/M/H 30/40/30
    assert len(at.sidebar.get("dataframe")) == 1        # the editable per-client table


def test_a_link_reopens_the_same_settings(store_dir):
    at = app(preset="demo", rounds="7", **{"partition.kind": '"dirichlet"', "partition.alpha": "0.3"})
    assert by_label(at.slider, "Rounds").value == 7
    assert by_label(at.selectbox, "Partition").value == "dirichlet"
    assert by_label(at.number_input, "alpha").value == 0.3


def test_a_change_sent_with_the_previous_url_is_not_undone(store_dir):
    # The browser sends the query string it has; a slider step made before it received the
    # previous rerun's URL arrives with that older URL, which must not reload the settings.
    at = app(preset="demo", rounds="200")
    by_label(at.slider, "Rounds").set_value(201).run()
    assert qp(at, "rounds") == "201"
    at.query_params["rounds"] = "200"  # stale: the browser had not applied rounds=201 yet
    by_label(at.slider, "Rounds").set_value(202).run()
    assert by_label(at.slider, "Rounds").value == 202 and qp(at, "rounds") == "202"
    at.query_params["rounds"] = "9"  # a URL this session never wrote is still loaded
    at.run()
    assert by_label(at.slider, "Rounds").value == 9


def copy_ending(finished_run, store_dir, keep: int, end: RunFinished, name: str) -> str:
    """A copy of the finished run's first ``keep`` events, ended by ``end``; its id."""
    from pages.components import server

    store = server.job_manager(str(store_dir)).store
    source = at_run_id(finished_run)
    record = store.get_job_dict(source)
    copy = store.create_run(record["config"], f"{name}-copy", label=f"copy: {name}")["id"]
    for e in store.read_events(source)[:keep]:
        store.append_event(copy, event_from_dict(e))
    store.append_event(copy, end)
    return copy


def test_a_failed_run_shows_its_error_and_keeps_its_rounds(finished_run, store_dir):
    failed = copy_ending(finished_run, store_dir, 3, RunFinished("failed", 2, 1.0, None, "RuntimeError: boom"),
                         "crashed")  # start + 2 rounds
    at = app(run=failed)
    # the stored error is shown as plain text (escaped markdown, no server path)
    assert any("RuntimeError: boom" in e.value.replace("\\", "") and "2 rounds" in e.value for e in at.error)
    assert len(at.get("plotly_chart")) >= 2


def test_a_paused_run_reports_its_training_time_apart_from_the_time_it_was_held(finished_run, store_dir):
    held = copy_ending(finished_run, store_dir, 4, RunFinished("finished", 3, 12.5, 0.5, held_s=10.0),
                       "paused")  # start + 3 rounds
    at = app(run=held)
    assert any("Finished 3 rounds in 2.5 s of training (10.0 s paused or slowed down)" in s.value
               for s in at.success), [s.value for s in at.success]


def at_run_id(at) -> str:
    return qp(at, "run")


def test_compare_overlays_runs_and_groups_seeds(finished_run, store_dir):
    at = finished_run
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    picker = by_label(at.multiselect, "Runs to compare")
    assert at_run_id(finished_run) in picker.value
    assert len(at.get("plotly_chart")) == 2
    by_label(at.number_input, "Seeds").set_value(2).run()
    by_label(at.button, "Run seeds").click().run()
    def both_seeds(a) -> bool:  # seed 0 replays the finished run, seed 1 trains
        table = a.dataframe[0].value
        seeds = table[table["run"].str.contains("3 rounds")]
        return set(seeds["seed"]) >= {0, 1} and (seeds["status"] == "finished").all()

    wait_on(at, both_seeds, 150, lambda a: a.dataframe[0].value.to_dict("records"))
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    legend = [t.get("name", "") for t in spec["data"]]
    assert any("(mean of " in n for n in legend), legend  # one group with a band
    # the same ledger as the Playground's by default, and exports of what is compared (issue 32)
    assert by_label(at.selectbox, "Privacy ledger for the x axis").value == "headline ε"
    from pages.components.compare import build, export_json

    series, _, summary_rows = build(by_label(at.multiselect, "Runs to compare").value, group=True, view="headline ε")
    exported = json.loads(export_json(summary_rows, series, "headline ε"))
    assert exported["ledger"] == "headline ε" and len(exported["runs"]) == len(summary_rows)
    assert all(g["band"]["mean"] for g in exported["groups"])
    labels = [b.proto.label for b in at.get("download_button")]
    assert {"CSV", "JSON"} <= set(labels), labels


def test_history_lists_exports_reopens_and_deletes(finished_run, store_dir):
    at = finished_run
    run_id = at_run_id(finished_run)
    at.switch_page("pages/history.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert run_id in set(table["id"])
    # what a class reads first comes first (a 1024 px projector shows about four columns)
    assert list(table.columns[:4]) == ["run", "final accuracy", "status", "progress"], list(table.columns)
    by_label(at.selectbox, "Run").set_value(run_id).run()
    assert {"CSV (per round)", "JSON (config + events)"} <= {b.label for b in at.download_button}
    by_label(at.button, "Open in Playground").click().run()
    assert "Round 3 / 3 · finished" in progress_text(at)
    at.switch_page("pages/history.py").run()
    by_label(at.selectbox, "Run").set_value(run_id).run()
    by_label(at.button, "Delete").click().run()
    by_label(at.button, "Yes, delete").click().run()
    assert not at.exception
    ids = set(at.dataframe[0].value["id"]) if at.dataframe else set()
    assert run_id not in ids


def test_a_one_click_method_on_the_demo_trains_at_its_demo_scale(store_dir):
    # The Playground, the CLI and the sweep apply a method the same way: picking hw_dpfl on the
    # demo also sets the rounds and steps at which it trains on digits (fedcore.presets).
    from fedcore.layering import build_config
    from fedcore.links import config_from_params

    at = app(preset="demo")
    by_label(at.selectbox, "Method (one-click recipe)").select("hw_dpfl").run()
    assert not at.exception
    cli = build_config("demo", None, ["method=hw_dpfl"])
    link = config_from_params({k: qp(at, k) for k in at.query_params})
    assert link.config_hash() == cli.config_hash() and (cli.rounds, cli.local.steps) == (80, 1)
    assert any("trains at: rounds = 80" in c.value for c in at.sidebar.caption)


@pytest.mark.slow   # a live run paused and stepped, ~9 s: in the full suite only
def test_pause_step_and_resume_a_live_run(store_dir):
    at = app()
    by_label(at.slider, "Rounds").set_value(60).run()
    by_label(at.button, "Run").click().run()
    by_label(at.button, "Pause").click().run()
    wait_on(at, lambda a: "· paused" in progress_text(a), 120, progress_text)
    assert "Paused after round" in texts(at)
    held = progress_text(at)
    time.sleep(1.5)
    assert progress_text(at.run()) == held                      # held between two rounds
    done = int(held.split()[1])
    by_label(at.button, "Step").click().run()
    wait_on(at, lambda a: f"Round {done + 1} / 60 · paused" in progress_text(a), 120, progress_text)
    by_label(at.button, "Resume").click().run()
    wait_until_done(at)
    assert "Round 60 / 60 · finished" in progress_text(at)


def test_the_pickers_offer_only_what_this_server_can_load(store_dir, tmp_path, monkeypatch):
    from pages.components import host

    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path))       # nothing downloaded here
    monkeypatch.setenv("FEDCORE_MODELS", "logreg,mlp")
    host.limits.clear()
    try:
        at = app()
        datasets = by_label(at.selectbox, "Dataset").options
        assert "digits" in datasets and "cifar10" not in datasets and "mnist" not in datasets
        assert "Not offered on this server" in texts(at) and "cifar10" in texts(at)
        assert by_label(at.selectbox, "Model").options == ["logreg", "mlp"]
    finally:
        host.limits.clear()


def test_a_presentation_link_opens_the_presentation_layout_and_keeps_it(store_dir):
    at = app(preset="demo", rounds="7", present="1")
    assert not at.exception
    assert by_label(at.toggle, "Presentation").value is True
    assert not [t for t in at.title if t.value == "Playground"]      # the big title makes room for the charts
    assert qp(at, "present") == "1" and qp(at, "rounds") == "7"
    by_label(at.toggle, "Presentation").set_value(False).run()
    assert "present" not in at.query_params and [t for t in at.title if t.value == "Playground"]


# --- issue 22: nothing private or host-specific in what visitors see ------------------------------
def all_texts(at) -> str:
    """Every text the page shows: messages, markdown, captions, titles, toasts, tables' cells."""
    parts = [str(getattr(e, "value", "")) for kind in ("markdown", "caption", "error", "warning", "success", "info",
                                                        "toast", "title", "header", "subheader", "text", "code")
             for e in at.get(kind)]
    parts += [df.value.to_csv() for df in at.dataframe]
    return "\n".join(parts)


def test_a_dataset_missing_offline_is_refused_without_the_servers_data_path(store_dir, tmp_path, monkeypatch):
    from pages.components import host

    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "private-data"))      # nothing downloaded here
    host.limits.clear()
    try:
        at = app(preset="demo", dataset='"fashion_mnist"')
        shown = all_texts(at)
        assert "Not allowed on this server" in shown and "fashion_mnist" in shown
        assert str(tmp_path) not in shown and "private-data" not in shown, shown
    finally:
        host.limits.clear()


def test_an_unavailable_dataset_tells_visitors_neither_the_path_nor_the_exception(tmp_path, monkeypatch):
    from fedcore.data import load_dataset
    from fedcore.data.root import public_message
    from fedcore.errors import DatasetUnavailable
    from fedcore.runner.worker import one_line_error

    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable) as err:
        load_dataset("covertype", root=tmp_path / "private-data")
    assert "private-data" in str(err.value)                 # the CLI and the host's log keep the details
    for shown in (public_message(err.value), one_line_error(err.value)):    # a visitor's view, a run's record
        assert "private-data" not in shown and "OSError" not in shown and "download_if_missing" not in shown
        assert "covertype" in shown and "$FEDCORE_DATA" in shown


def test_the_papers_page_and_its_records_show_no_server_path_or_exception_text(store_dir):
    import re

    records = ROOT / "assets" / "reproduction"
    for path in sorted(records.iterdir()):
        text = path.read_text()
        assert not re.search(r"(?<![\w.:/])/(?:tmp|root|home|Users|srv|var|work|proc)/", text), path.name
        assert not re.search(r"\b(?:OSError|RuntimeError|Traceback)\b", text), path.name
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page("pages/papers.py").run()
    assert not at.exception
    shown = all_texts(at)
    assert "covertype" in shown and "not available on this server" in shown      # a skipped table, said plainly
    assert not re.search(r"/(?:tmp|root|home)/|OSError|download_if_missing", shown)


def test_a_replays_download_carries_neither_the_original_run_id_nor_a_server_path(tmp_path):
    from fedcore.tables import export_json
    from fedcore.runner.store import JobStore

    store = JobStore(tmp_path / "store")
    try:
        original = store.create_run({"rounds": 1}, "hash-1", label="demo", owner="browser:alice")["id"]
        store.update_job(original, error="dataset 'mnist' is not available under /srv/private/data: OSError")
        copy = store.copy_job(original, owner="browser:bob")
        record = store.get_job_dict(copy)
        assert record["replayed_from"] == original                  # the store knows; the download does not
        text = export_json(record, replay(store.read_events(copy)))
        assert original not in text and "replayed_from" not in text and "alice" not in text and "bob" not in text
        assert "/srv/private" not in text and "dataset 'mnist' is not available" in text
    finally:
        store.close()


def test_the_sign_in_secrets_stay_out_of_git_and_out_of_the_image():
    import re

    def excluded(ignore_file: Path, path: str) -> bool:
        """Whether ``path`` is excluded by a .gitignore / .dockerignore (last match wins; a
        pattern without a slash matches at any depth in .gitignore)."""
        verdict = False
        for line in ignore_file.read_text().splitlines():
            pattern = line.strip()
            if not pattern or pattern.startswith("#"):
                continue
            negate = pattern.startswith("!")
            pattern = pattern.lstrip("!").strip("/")
            anywhere = ignore_file.name == ".gitignore" and "/" not in pattern
            regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*") \
                .replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
            regex = ("(?:.*/)?" if anywhere else "") + regex + "(?:/.*)?"
            if re.fullmatch(regex, path):
                verdict = not negate
        return verdict

    for name in (".gitignore", ".dockerignore"):
        for path in (".streamlit/secrets.toml", "deploy/.streamlit/secrets.toml"):
            assert excluded(ROOT / name, path), (name, path)
        assert not excluded(ROOT / name, ".streamlit/config.toml"), name     # the server's settings ship


# --- issue 24: the first minute teaches ---------------------------------------------------------
def figure_spec(chart) -> dict:
    return json.loads(chart.proto.spec)


def epsilon_points(spec: dict) -> set:
    """The distinct ε (x) values of a frontier figure's private points."""
    xs = set()
    for trace in spec.get("data", []):
        for x in trace.get("x") or []:
            if isinstance(x, (int, float)) and x > 0:
                xs.add(round(float(x), 6))
    return xs


def test_the_first_screen_shows_a_trade_off_and_a_private_default(store_dir):
    at = app()                                             # no link, no click
    assert not at.exception
    charts = at.get("plotly_chart")
    assert charts, "no figure on the first screen"
    assert len(epsilon_points(figure_spec(charts[0]))) >= 3   # accuracy at >= 3 values of ε
    assert "Each dot is a model trained on the bundled digits" in texts(at)
    assert by_label(at.selectbox, "Mechanism (client side)").value != "none"
    link = {k: qp(at, k) for k in at.query_params}
    from fedcore.links import config_from_params

    assert config_from_params(link).privacy.mechanism != "none"
    assert by_label(at.toggle, "Spend exactly ε in total").value is True
    assert "can't tell whether your data was in it" in texts(at)     # plain words first
    titles = [a["title"]["text"] for k, a in figure_spec(charts[0])["layout"].items()
              if k.startswith("xaxis") and a["title"]["text"]]
    assert titles == ["ε spent (log; smaller = more private)"]        # not "headline ε ... RDP accountant"; once
    preset_caption = next(c.value for c in at.caption if c.value.startswith("Digits, logistic regression"))
    assert "no noise" not in preset_caption                           # the demo's caption, under dp_fedavg
    by_label(at.toggle, "Plain words").set_value(False).run()
    titles = {a["title"]["text"] for k, a in figure_spec(at.get("plotly_chart")[0])["layout"].items()
              if k.startswith("xaxis")} - {""}
    assert titles == {"headline ε spent (log; exact PLD accountant)"}        # the exact terms, when asked for


def test_speed_is_set_before_run_and_pause_step_are_there_at_once(store_dir):
    at = app()
    speed = next(w for w in at.get("button_group") if w.label == "Speed")
    speed.set_value("1 s per round").run()
    assert by_label(at.button, "Pause").disabled and by_label(at.button, "Step").disabled
    by_label(at.slider, "Rounds").set_value(4).run()
    by_label(at.button, "Run").click().run()
    assert not by_label(at.button, "Pause").disabled              # reachable at once
    from pages.components import state as page_state
    from fedcore.runner.tempo import read_tempo

    run_id = qp(at, "run")
    assert read_tempo(page_state.manager().store, run_id)["delay"] == 1.0
    at = wait_until_done(at)
    assert "Round 4 / 4 · finished" in progress_text(at)


def test_a_matched_ldp_fl_run_shows_the_epsilon_set_and_spent_in_one_unit(store_dir):
    at = app(preset="demo", method="ldp_fl", rounds="3", **{"privacy.epsilon": "[10.0]"})
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["ε you set"] == "10"
    spent = float(metrics["ε spent, whole run"].replace(",", ""))
    assert 9.9 <= spent <= 10.0                                  # spend exactly ε in total
    assert "Both numbers are for the whole run" in texts(at)
    assert "per weight, per round" in texts(at)


def test_an_unmatched_ldp_fl_run_says_why_the_spent_epsilon_is_larger(store_dir):
    at = app(preset="demo", method="ldp_fl", rounds="3", **{"privacy.epsilon": "[1.0]"})
    by_label(at.toggle, "Spend exactly ε in total").set_value(False).run()
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["ε you set"] == "1"
    assert "," in metrics["ε spent, whole run"] and "e+" not in metrics["ε spent, whole run"]   # 1,950 not 1.95e+03
    assert "every single weight of the model in every round" in texts(at)


def test_per_client_epsilons_survive_5_sliders_12_30_10_clients_and_a_partition(store_dir):
    at = app(preset="demo")
    by_label(at.number_input, "Clients").set_value(5).run()
    by_label(at.radio, "Privacy budget ε").set_value("Per client").run()
    sliders = [s for s in at.select_slider if s.label.startswith("ε client")]
    assert len(sliders) == 5 and sliders[0].options[0] == "0.1" and sliders[0].options[-1] == "100"
    by_label(at.select_slider, "ε client 1").set_value(0.5).run()
    by_label(at.select_slider, "ε client 3").set_value(50.0).run()
    expected = [1.0, 0.5, 1.0, 50.0, 1.0]
    assert json.loads(qp(at, "privacy.epsilon")) == expected
    for n in (12, 30, 10):
        by_label(at.number_input, "Clients").set_value(n).run()
        assert not at.exception
        eps = json.loads(qp(at, "privacy.epsilon"))
        assert len(eps) == n and eps[:5] == expected and all(e > 0 for e in eps), (n, eps)
    by_label(at.selectbox, "Partition").select("dirichlet").run()
    eps = json.loads(qp(at, "privacy.epsilon"))
    assert eps[:5] == expected and all(e > 0 for e in eps), eps
    assert all(i.value > 0 for i in at.number_input if i.label.startswith("ε client"))
    assert not by_label(at.button, "Run").disabled and not at.error


def test_an_rdp_headline_names_its_accountant_and_shows_no_second_one(store_dir):
    """ULDP-FED's decaying clips are accounted by RDP round by round: the ε spent's help says so, and no caption puts
    the end's PLD figure (``RunFinished.epsilon_pld``) beside it, in Plain words or not (one accountant a screen)."""
    at = app(method='"dsdp_fedavg"', rounds="4")
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    assert "Round 4 / 4 · finished" in progress_text(at)
    for plain in (True, False):
        by_label(at.toggle, "Plain words").set_value(plain).run()
        spent = next(m for m in at.metric if m.label == "ε spent, whole run")
        assert "RDP accountant" in spent.help and "(PLD)" not in texts(at), (plain, spent.help)
