"""Phone and accessibility (issue 32, item 6) in a real browser, one page load per page and screen.

- At 390x844 (a phone) the first screen's frontier stacks its panels (pages/components/narrow.py):
  no panel, panel title or axis title runs into another, as the three panels side by side did;
  at 1280x720 the panels stay side by side.
- At 1024x768 with the sidebar open (a classroom projector) every button and widget label of the five
  pages (Compare and History after one run of the visitor's) reads whole (none cut to an ellipsis: "Run" had become "R"), and no chart part overlaps another
  (three copies of a long x title had run into each other).
- axe-core finds no critical or serious violation on the Playground, Frontier, Papers, Compare and
  History pages, on a phone and at 1280x720 (colour contrast was the serious one: the theme's colours in
  .streamlit/config.toml). axe-core comes from the npm registry: scripts/test.sh installs it
  into .npm-tools/ (git-ignored); without it the axe test is skipped, saying how to install it.

Screenshots go to a temporary folder (``FEDCORE_SHOTS=docs/screenshots`` refreshes the committed ones).
"""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import ExitStack, nullcontext
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path(os.environ.get("FEDCORE_SHOTS") or (Path(tempfile.gettempdir()) / "fedcore-shots"))
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import CHROMIUM, fresh_page, settle  # noqa: E402

AXE = ROOT / ".npm-tools" / "node_modules" / "axe-core" / "axe.min.js"
"""Installed by scripts/test.sh: ``npm install --no-save --prefix .npm-tools axe-core@4``."""
PHONE, DESKTOP, PROJECTOR, HALF_SCREEN = (390, 844), (1280, 720), (1024, 768), (800, 600)
PAGES = {"playground": ("/", "text=Each dot is a model trained on the bundled digits by 10 clients"),
         "frontier": ("/frontier", "text=What ε buys: what an attacker gets"),
         "papers": ("/papers", "button:has-text('Open in Playground')"),
         "mechanisms": ("/mechanisms", "[data-testid=stPlotlyChart] .legend")}
"""Each page's path and a selector of what it shows once its script has run (on a phone too)."""
AFTER_A_RUN = {"compare": ("/compare", "[data-testid=stPlotlyChart]"),
               "history": ("/history", "button:has-text('Open in Playground')")}
"""The pages that list the visitor's own runs: opened by one visitor after one Playground run, at each size."""
ALL_PAGES = {**PAGES, **AFTER_A_RUN}
PANELED = ("playground", "frontier")
"""The pages whose faceted frontiers stack on a phone (the Frontier page's accuracy and attack figures too)."""
BLOCKING = ("critical", "serious")
TRUNCATED_JS = """() => [...document.querySelectorAll(
    '[data-testid=stMain] button, [data-testid=stMain] label, [data-testid=stMain] [data-testid=stMetricLabel]')]
    .filter(e => e.offsetParent !== null && [e, ...e.querySelectorAll('*')].some(
        n => n.scrollWidth > n.clientWidth + 1 && getComputedStyle(n).textOverflow === 'ellipsis'))
    .map(e => e.innerText.trim().replace(/\\s+/g, ' ').slice(0, 60))"""
"""The visible buttons and widget labels of the page's main area whose text is cut to an ellipsis."""

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing; the browser test never downloads a browser")]

PARTS_JS = """(el) => {
    // The boxes of a faceted Plotly chart's parts: per panel its plot area ('plot') and that with its x tick
    // labels and y axis title ('box'), each panel title (an annotation) and each x axis title; [] for fewer
    // than two panels.
    const gd = el.querySelector('.js-plotly-plot');
    const box = e => { const r = e && e.getBoundingClientRect();
                       return r && r.width && r.height ? [r.left, r.top, r.right, r.bottom] : null; };
    const join = bs => bs.filter(b => b).reduce((a, b) => [Math.min(a[0], b[0]), Math.min(a[1], b[1]),
                                                           Math.max(a[2], b[2]), Math.max(a[3], b[3])]);
    const names = [...gd.querySelectorAll('.cartesianlayer > .subplot')].map(g => g.classList[1]);
    if (names.length < 2) return [];
    const panels = names.map(n => {
        const [, x, y] = n.match(/^x(\\d*)y(\\d*)$/);
        const sub = gd.querySelector('.cartesianlayer > .subplot.' + n);
        const plot = box(gd.querySelector('.draglayer > .' + n + ' .nsewdrag'));
        return {name: n, plot: plot, box: join([plot,
                                    box(sub.querySelector('.xaxislayer-above')), box(gd.querySelector('.g-y' + y + 'title'))])};
    });
    const titles = [...gd.querySelectorAll('.annotation')].map((a, i) => ({name: 'title ' + i, box: box(a)}));
    // x axis titles on their own: one shared title under the middle of three panels spans its neighbours
    const xtitles = [...gd.querySelectorAll('[class^=g-x][class$=title] text')].map((t, i) => ({name: 'x title ' + i, box: box(t)}));
    return [...panels, ...titles.filter(t => t.box), ...xtitles.filter(t => t.box)];
}"""


BAR_TEXT_JS = """(el) => [...el.querySelectorAll('.js-plotly-plot .bartext')].map((t, i) => {
    // each bar's value label as drawn: its text and box
    const r = t.getBoundingClientRect();
    return {name: t.textContent + ' #' + i, box: [r.left, r.top, r.right, r.bottom]};
}).filter(p => p.box[2] > p.box[0])"""
"""The boxes of a chart's bar value labels (Plotly's ``.bartext``)."""


def overlaps(parts: list[dict], slack: float = 1.0) -> list[tuple[str, str]]:
    """The pairs of ``parts`` (``{"name", "box": [left, top, right, bottom]}``) whose boxes overlap
    by more than ``slack`` pixels both ways."""
    out = []
    for i, a in enumerate(parts):
        for b in parts[i + 1:]:
            (l1, t1, r1, b1), (l2, t2, r2, b2) = a["box"], b["box"]
            if min(r1, r2) - max(l1, l2) > slack and min(b1, b2) - max(t1, t2) > slack:
                out.append((a["name"], b["name"]))
    return out


@pytest.fixture(scope="module")
def server(dashboards):
    """The dashboard with its default host settings (shared with the other browser modules)."""
    return dashboards({})


@pytest.fixture(scope="module")
def visit(browser, server):
    """``visit(page, size)``: the page opened once at ``size`` (width, height) in a fresh context,
    and what the tests read of it: the parts of each visible faceted chart, axe-core's
    violations (None without axe-core) and a screenshot; later calls get the same reading."""
    url, _ = server
    seen: dict = {}
    stack = ExitStack()
    ran: list = []

    def visitor_with_a_run():
        """One visitor's page, kept for the module, after one finished demo run."""
        if not ran:
            pg = stack.enter_context(fresh_page(browser, *DESKTOP))
            pg.set_default_timeout(180_000)
            pg.goto(url + "/")
            pg.get_by_role("button", name="Run", exact=True).click()
            pg.get_by_text("· finished").first.wait_for()
            ran.append(pg)
        return ran[0]

    def get(page: str, size: tuple[int, int]) -> dict:
        if (page, size) not in seen:
            path, ready = ALL_PAGES[page]
            with nullcontext(visitor_with_a_run()) if page in AFTER_A_RUN else fresh_page(browser, *size) as pg:
                pg.set_default_timeout(180_000)
                pg.set_viewport_size({"width": size[0], "height": size[1]})
                pg.goto(url + path)
                pg.locator(ready).first.wait_for()
                if page in PANELED:
                    pg.locator("[data-testid=stPlotlyChart]:visible .legend").first.wait_for()
                settle(pg, 1.0)
                truncated = pg.evaluate(TRUNCATED_JS)
                charts = pg.locator("[data-testid=stPlotlyChart]:visible")
                parts = [part for part in (charts.nth(i).evaluate(PARTS_JS) for i in range(charts.count())) if part]
                labels = [charts.nth(i).evaluate(BAR_TEXT_JS) for i in range(charts.count())]
                if parts:                          # the screenshot shows the chart from its top (below the menu bar)
                    charts.first.evaluate("e => { e.style.scrollMarginTop = '64px'; e.scrollIntoView(); }")
                    settle(pg, 0.5)
                SHOTS.mkdir(parents=True, exist_ok=True)
                pg.screenshot(path=str(SHOTS / f"a11y-{page}-{size[0]}x{size[1]}.png"))
                violations = None
                if AXE.exists():
                    pg.add_script_tag(path=str(AXE))
                    violations = pg.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']}))
                        .violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                               nodes: v.nodes.map(n => n.html.slice(0, 120) + ' | ' + n.failureSummary)}))""")
                seen[(page, size)] = {"parts": parts, "violations": violations, "truncated": truncated,
                                      "bar_labels": labels}
        return seen[(page, size)]

    with stack:
        yield get


@pytest.mark.parametrize("page", PANELED)
def test_the_frontier_panels_stack_on_a_phone_and_sit_side_by_side_at_1280(visit, page):
    """At 390 px every panel of the frontier takes the chart's width (stacked: one under another) and
    no panel, panel title or axis title overlaps another (issue 32: three panels side by side
    were 110 px wide each and their titles ran into each other); at 1280x720 the panels are still
    side by side, on one level, and do not overlap either."""
    phone, desktop = visit(page, PHONE)["parts"], visit(page, DESKTOP)["parts"]
    assert phone and desktop, "no faceted chart visible"
    for charts, size in ((phone, PHONE), (desktop, DESKTOP)):
        for parts in charts:
            assert not overlaps(parts), (size, overlaps(parts), parts)
    stacked = [p["plot"] for p in phone[0] if "plot" in p]
    assert len(stacked) >= 3 and all(stacked[i][3] < stacked[i + 1][1] for i in range(len(stacked) - 1)), stacked
    assert min(right - left for left, _, right, _ in stacked) > 0.6 * PHONE[0], stacked
    wide = [p["plot"] for p in desktop[0] if "plot" in p]
    assert len(wide) == len(stacked) and len({round(top) for _, top, _, _ in wide}) == 1, wide


@pytest.mark.parametrize("page", ALL_PAGES)
def test_a_projector_at_1024_reads_every_label_whole_and_no_chart_part_overlaps(visit, page):
    seen = visit(page, PROJECTOR)
    assert seen["truncated"] == [], f"cut to an ellipsis at {PROJECTOR}: {seen['truncated']}"
    for parts in seen["parts"]:
        assert not overlaps(parts), (overlaps(parts), parts)


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_label_reads_whole_in_a_half_screen_window_with_the_sidebar_open(visit, page):
    """A teacher's browser on half of a 1,600 px screen: in fixed columns the Playground's Run and Stop
    were cut to "R." and "S.", the Frontier's "Train it live" and toggles, the Papers' "Open in Playground"
    and the audit's "accountant's ε (upper bound)"; those rows now wrap."""
    seen = visit(page, HALF_SCREEN)
    assert seen["truncated"] == [], f"cut to an ellipsis at {HALF_SCREEN}: {seen['truncated']}"


@pytest.mark.parametrize("size", (PHONE, PROJECTOR), ids=("phone", "projector"))
@pytest.mark.parametrize("page", ALL_PAGES)
def test_no_two_bar_value_labels_run_into_each_other(visit, page, size):
    """The Mechanisms page's empirical and analytic bars stand side by side, each with its probability
    written on it: at 1024 px "0.385" and "0.384" ran together into "0.3850.384" (no gap between
    their boxes). Labels closer than 3 px count as running together."""
    for labels in visit(page, size)["bar_labels"]:
        assert not overlaps(labels, slack=-3.0), (size, overlaps(labels, slack=-3.0), labels)


@pytest.mark.parametrize("size", (PHONE, DESKTOP), ids=("phone", "desktop"))
@pytest.mark.parametrize("page", ALL_PAGES)
def test_axe_core_finds_no_serious_violation(visit, page, size):
    """axe-core (WCAG rules, run in the page) reports nothing critical or serious; what it does
    report is in the message."""
    if not AXE.exists():
        pytest.skip(f"axe-core is not installed ({AXE.relative_to(ROOT)}): "
                    "npm install --no-save --prefix .npm-tools axe-core@4 (scripts/test.sh does)")
    found = visit(page, size)["violations"]
    blocking = [v for v in found if v["impact"] in BLOCKING]
    assert not blocking, "\n".join(f"{v['impact']} {v['id']} ({v['help']}): {len(v['nodes'])} node(s)\n  "
                                   + "\n  ".join(v["nodes"][:5]) for v in blocking)
