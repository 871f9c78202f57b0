"""A page whose script run outlasts the grace period (``tests/test_presence.py``): its first run
starts a long demo run for this visitor, then holds the script for ``?hold=`` seconds of its training
(as a starved server's poll does) without one heartbeat of its own. The run must keep training while
this page's browser stays connected, and stop after the grace period once the page is closed."""
import sys
import time
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from fedcore.resolve import preset_config  # noqa: E402
from pages.components import host  # noqa: E402

owner = host.viewer().owner
if "run" not in st.session_state:
    cfg = preset_config("demo").with_overrides({"rounds": 4000, "local.epochs": 5, "local.batch_size": 8})
    st.session_state["run"] = host.manager().start(cfg, owner=owner, reuse=False)
st.write(f"holding run {st.session_state['run']}")
while host.manager().status(st.session_state["run"]) == "queued":   # the hold counts from its start:
    time.sleep(0.2)                                                   # a busy host spawns workers slowly
time.sleep(float(st.query_params.get("hold", "0")))
st.write("held")
