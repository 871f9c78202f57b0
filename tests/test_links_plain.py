"""No markup from links: every page, opened with a markdown payload in every query parameter
it reads, shows the payload as literal text (issue 22).

Every echo of a query value goes through one helper, :func:`pages.components.plain.plain`.
The walk below opens each page of :data:`CASES` headlessly (AppTest) with
:data:`PAYLOAD` in one parameter and checks every element that Streamlit renders as
markdown (messages, captions, markdown, titles, widget labels and help): wherever the
payload is echoed, each of its markup characters reaches the page escaped, and no element
carries a link to the payload's address. A page that reads a new parameter adds a
``(page, {parameter: PAYLOAD})`` line to :data:`CASES`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages.components.plain import plain

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

PAYLOAD = "**Session expired.** [Log in again](http://127.0.0.1:8748/ph)"
"""The issue's payload: bold text and a link to a page of the attacker's."""
EXTRA = "__Act now__ ![i](http://127.0.0.1:8748/i.png) :red[red] :material/lock: <b>b</b> $x$ www.example.com"
"""More markup: emphasis by underscores, an image, a colour, an icon, HTML, maths, a bare address."""

PLAYGROUND, COMPARE, MECHANISMS = "pages/playground.py", "pages/compare.py", "pages/mechanisms.py"
PAPERS, HISTORY, FRONTIER = "pages/papers.py", "pages/history.py", "pages/frontier.py"


def _case(page: str, params: dict, marks=()):
    name = page.split("/")[-1].removesuffix(".py") + ":" + "&".join(
        k if v in (PAYLOAD, EXTRA) else f"{k}={v}" for k, v in params.items() if k != PAYLOAD) \
        + (":key" if PAYLOAD in params else "")
    return pytest.param(page, params, marks=marks, id=name)


CASES = [
    # the Playground reads every config field (a name, a number, a list, a mapping), its
    # preset, the run on screen and the presentation switch; a field's *name* is echoed too
    *(_case(PLAYGROUND, {name: PAYLOAD}) for name in (
        "preset", "method", "run", "present", "rounds", "dataset", "privacy.epsilon", "privacy.mechanism",
        "privacy.mechanism_options", "privacy.mechanism_options.clip", "partition.kind", "local.lr")),
    _case(PLAYGROUND, {"preset": "demo", "run": PAYLOAD}),
    _case(PLAYGROUND, {"preset": "demo", "privacy.mechanism": "gaussian", "privacy.mechanism_options": EXTRA}),
    _case(PLAYGROUND, {PAYLOAD: "1"}),
    _case(PLAYGROUND, {"preset": EXTRA}),
    _case(COMPARE, {"runs": PAYLOAD}),
    _case(COMPARE, {"runs": "a," + PAYLOAD}),
    _case(MECHANISMS, {"mechanism": PAYLOAD}),
    _case(PAPERS, {"preset": PAYLOAD}),      # reads none: a stray parameter stays unseen
    _case(HISTORY, {"run": PAYLOAD}),        # reads none
    *(_case(FRONTIER, {name: PAYLOAD})
      for name in ("preset", "methods", "eps", "seeds", "audit", "match", "scenario")),
]

MARKDOWN_ELEMENTS = {"Markdown", "Caption", "Latex", "Error", "Warning", "Info", "Success", "Exception",
                     "Title", "Header", "Subheader", "Toast", "Divider"}
"""AppTest element types whose text Streamlit renders as markdown (st.text, st.code and st.json
render literally; widget labels and help are markdown too and are read separately)."""


def _walk(node):
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _walk(child)


def markdown_texts(at: AppTest) -> list[str]:
    """The source of every markdown that the page rendered."""
    out = []
    for node in _walk(at._tree):
        kind = type(node).__name__
        if kind in MARKDOWN_ELEMENTS:
            for attr in ("value", "body", "message"):
                text = getattr(node, attr, None)
                if isinstance(text, str):
                    out.append(text)
                    break
        for attr in ("label", "help"):   # widget labels and help texts render markdown
            text = getattr(node, attr, None)
            if isinstance(text, str) and kind not in MARKDOWN_ELEMENTS:
                out.append(text)
    return out


_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_LITERAL = "\x00"


def structure(markdown: str) -> str:
    """``markdown`` with every backslash-escaped character replaced by one placeholder: what
    is left is what the markdown parser may read as markup."""
    return _ESCAPE.sub(_LITERAL, markdown)


def echoes(markdown: str, payload: str, anchor: str) -> list[str]:
    """The stretches of ``structure(markdown)`` where ``payload`` is echoed (found by the
    ``anchor`` word it holds), as long as the payload (word joiners not counted)."""
    masked, out = structure(markdown), []
    before = payload.index(anchor)
    for m in re.finditer(re.escape(anchor), masked):
        start = end = max(0, m.start() - before)
        taken = 0
        while end < len(masked) and taken < len(payload):
            taken += masked[end] != "\u2060"
            end += 1
        out.append(masked[start:end])
    return out


MARKUP = re.compile(r"[*\[\]()<>:$~`|!#&]|(?<![^\W_])_|_(?![^\W_])|www\.|@")
"""Characters (and patterns) that make markup in Streamlit's markdown when left unescaped."""


def markup_in(markdown: str) -> list[str]:
    """Why ``markdown`` would render the payloads as markup (empty: it shows them as text)."""
    problems = []
    for payload, anchor in ((PAYLOAD, "Session expired"), (EXTRA, "Act now")):
        for stretch in echoes(markdown, payload, anchor):
            found = sorted(set(MARKUP.findall(stretch)))
            if found:
                problems.append(f"{stretch!r} leaves {found} unescaped")
    masked = structure(markdown)
    for pattern in ("](http", "://127.0.0.1", "<b>", "**Session", "__Act"):
        if pattern in masked:
            problems.append(f"unescaped {pattern!r}")
    return problems


@pytest.fixture(scope="module", autouse=True)
def _store(store_dir):
    """A fresh run store for the module (conftest); the Frontier page's sweep jobs closed after."""
    yield store_dir
    import sys

    if "pages.components.server" in sys.modules:
        sys.modules["pages.components.server"].manager().close()


def open_page(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if page != PLAYGROUND:
        at.switch_page(page)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


@pytest.mark.parametrize("page, params", CASES)
def test_a_markdown_payload_in_a_link_renders_as_plain_text(page, params):
    at = open_page(page, params)
    assert not at.exception, [e.value for e in at.exception]
    texts = markdown_texts(at)
    assert texts, "the page rendered nothing"
    problems = [p for text in texts for p in markup_in(text)]
    assert not problems, problems


def test_the_checker_sees_markup_that_is_not_escaped():
    """The test above fails on a raw echo and passes on :func:`plain`'s."""
    assert markup_in(f"The link's settings were not used: {PAYLOAD}")
    assert markup_in(f"Unknown: {EXTRA}")
    assert not markup_in(f"**Our own words.** The link's settings were not used: {plain(PAYLOAD)}")
    assert not markup_in(f"Unknown: {plain(EXTRA)}")
    assert not markup_in(f"preset: {plain(repr(PAYLOAD[:60]))}")


@pytest.mark.parametrize("text", [PAYLOAD, EXTRA, "a\nb\n\n# heading", "- item", "1. item", "&#91;x&#93;",
                                  "`code`", "x" * 500])
def test_plain_is_one_escaped_line(text):
    out = plain(text)
    assert "\n" not in out and len(structure(out)) <= 200 + out.count("\u2060")
    assert not re.search(r"(?<!\\)[*\[\]()<>:$~`#&]", out.replace("\\\\", "")), out
    assert not re.match(r"[-+]|\d+\.", out), out


def test_plain_keeps_names_readable():
    assert plain("num_clients: got 5000") == "num_clients\\: got 5000"
    assert plain("privacy.epsilon[0]") == "privacy.epsilon\\[0\\]"
