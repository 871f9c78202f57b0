"""FL Privacy Lab: the Streamlit router. Pages live in pages/; the engine in fedcore/.

    streamlit run app.py
"""
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

# a local icon file: a material icon here would make every browser fetch it from Google's servers
st.set_page_config(page_title="FL Privacy Lab", page_icon=str(HERE / "assets" / "icon.png"), layout="wide")
# less empty space above each page's title (the menu sits in the top bar)
st.html("<style>[data-testid='stMainBlockContainer'] {padding-top: 3.5rem;}</style>")

pages = [
    st.Page("pages/playground.py", title="Playground", icon=":material/science:", default=True),
    st.Page("pages/compare.py", title="Compare", icon=":material/stacked_line_chart:"),
]
# pages written by other parts of the project join the menu once their file exists
for name, title, icon in (("mechanisms", "Mechanisms", ":material/tune:"),
                          ("papers", "Papers", ":material/menu_book:"), ("frontier", "Frontier", ":material/show_chart:")):
    if (HERE / "pages" / f"{name}.py").exists():
        pages.append(st.Page(f"pages/{name}.py", title=title, icon=icon))
pages.append(st.Page("pages/history.py", title="History", icon=":material/history:"))

from pages.components.host import require_store, sign_in_controls  # noqa: E402  (after set_page_config)

page = st.navigation(pages, position="top")
if page.title not in ("Mechanisms", "Papers"):  # the pages that read no run store
    require_store()  # a store that cannot be used: one message, never a blank page
# who is looking (signed in, or the browser's "keep my runs" code): every page, since every page can start
# a job (a reproduction, an audit) and its buttons wait until the page knows its visitor
sign_in_controls()
page.run()
