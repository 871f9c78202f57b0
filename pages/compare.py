"""Compare: overlay runs from the store, and launch several seeds of one experiment.

Runs whose configs differ only in the seed form one group: their mean accuracy is drawn
with the min–max band. The second chart places every run by its final accuracy and the
largest epsilon any client spent.
"""
import pandas as pd
import streamlit as st

from pages.components import charts, compare, history, host, pacing, plot, routing, state
from pages.components.form import keyed
from pages.components.press import pressed
from fedcore.runner import ACTIVE
from fedcore.runner.record import RUN
from fedcore.tables import BASIC

routing.through_router()

st.title("Compare runs")
host.store_banner()

with st.expander("Run several seeds of the Playground's experiment", icon=":material/casino:"):
    base = state.current_config()
    st.caption(f"Experiment: {base.method or base.privacy.mechanism + ' + ' + base.privacy.aggregator} · "
               f"{base.dataset} / {base.model} · {base.num_clients} clients · {base.rounds} rounds")
    c1, c2, c3 = st.columns([1, 1, 2], vertical_alignment="bottom")
    count = c1.number_input("Seeds", min_value=1, max_value=10, value=3, key="cmp.seed_count")
    first = c2.number_input("First seed", min_value=0, value=int(base.seed), key="cmp.seed_first")
    if pressed(c3, "Run seeds", icon=":material/play_arrow:", key="cmp.seed_run"):
        ids = compare.launch_seeds(base, int(first), int(count))
        st.session_state["cmp.selected"] = list(dict.fromkeys(ids + st.session_state.get("cmp.selected", [])))
        if len(ids) == int(count):
            st.rerun()  # else stay: the refusal's message is on screen

scope = history.scope_picker("cmp.scope")
every = [r for r in state.manager().store.list_jobs(RUN) if r.done > 0 or r.status in ACTIVE]
records = compare.pickable(every, scope)
by_id = {r.id: r for r in records}

if not records:
    st.info("No runs yet: train something in the Playground first.")
    st.stop()

compare.init_selection(records)
selected = keyed(st.multiselect, "Runs to compare", list(by_id), key="cmp.selected",
                          format_func=lambda i: compare.run_title(by_id[i]),
                          placeholder="Pick runs from the store")
c1, c2 = st.columns(2)
group = c1.toggle("Group seeds", value=True, key="cmp.group",
                  help="Runs that differ only in the seed are drawn as one: their mean and min–max band.")
view = keyed(c2.selectbox, "Privacy ledger for the x axis", compare.available_views(selected), key="cmp.view",
                    format_func=lambda v: "basic composition" if v == BASIC else v,
                    help="The headline ε (the tightest proven bound, as on the Playground) when the runs carry it.")
st.query_params["runs"] = ",".join(selected)

if not selected:
    st.info("Pick one or more runs above.")
    st.stop()

live = any(by_id[i].status in ACTIVE for i in selected)


def comparison():
    if live and not any(job is not None and job.status in ACTIVE
                        for job in map(state.manager().store.get_job, selected)):
        st.rerun()  # the whole page: the run picker's labels ("running · acc ...") and the timer
    series, points, summary = compare.build(selected, group=group, view=view)
    left, right = st.columns([3, 2])
    plot.chart(charts.compare_accuracy(series, "compare"), "cmp-acc", left, width="stretch")
    if len(points):
        plot.chart(charts.accuracy_vs_epsilon(points, view, "compare"), "cmp-eps", right, width="stretch")
    else:
        right.info("No privacy ledger for these runs yet.")
    st.dataframe(pd.DataFrame(summary), hide_index=True, width="stretch",
                 column_config={"final accuracy": st.column_config.NumberColumn(format="%.3f"),
                                "final ε (largest)": st.column_config.NumberColumn(format="%.4g")})
    guessing = compare.guessing(selected)
    if guessing:
        st.warning("No better than a blind guess: " + "; ".join(guessing) + ". These models learned nothing "
                   "usable, whatever their ε.", icon=":material/casino:")
    downloads = st.container(horizontal=True)   # each at its own width: labels whole at any size
    downloads.download_button("CSV", pd.DataFrame(summary).to_csv(index=False), file_name="compare.csv", mime="text/csv",
                       icon=":material/download:", key="cmp-csv", width="content")
    downloads.download_button("JSON", compare.export_json(summary, series, view), file_name="compare.json",
                       mime="application/json", icon=":material/download:", key="cmp-json", width="content")


# a container of its own: see pacing.polling_fragment (a blank page otherwise)
pacing.polling_fragment(comparison, pacing.poll_seconds(1.0) if live else None)()
