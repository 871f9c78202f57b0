"""The one plain-text helper: how a page echoes anything a visitor can type into a link.

Every Streamlit text element that takes a string (``st.error``, ``st.warning``, ``st.info``,
``st.caption``, ``st.markdown``, ``st.toast``, widget labels and help) renders it as
Markdown: a query-parameter value pasted into one as-is can draw bold text, a clickable
link, an image, a coloured or icon-decorated phrase, maths, or a heading on our page
(``?preset=**Session expired.** [Log in again](http://evil.example/)``). So every echo of a
value that came from ``st.query_params`` (or an error message quoting one) goes through
:func:`plain`::

    from pages.components.plain import plain

    st.warning(f"The link's settings were not used: {plain(exc)}")      # our markdown + their text
    st.caption(f"Preset {plain(params['preset'])} is not known here")

- :func:`plain` ``(text, limit=ECHO_LIMIT) -> str``: ``text`` (anything; ``str()`` is taken)
  on one line, cut to ``limit`` characters, with every character that could start Markdown
  or Streamlit markup escaped, so Streamlit shows it literally. Put it inside our own
  markdown wherever the value goes; never call it twice on the same text. It is also what
  visitors see of an error: an exception shows its ``public`` text where it has one (a
  dataset missing on the server: no server path, no library's exception text), and the
  server's paths are removed from any text (:func:`fedcore.data.root.public_message`).
- :func:`link_warning` ``(message, detail)``: ``st.warning`` with ``message`` (our own
  markdown) followed by ``detail`` from the link through :func:`plain`.

``st.text``, ``st.code`` and ``st.json`` render literally and need no escaping (but a long
value should still be cut, e.g. ``plain_text(value)``).
"""
from __future__ import annotations

import re

ECHO_LIMIT = 200
"""Characters of a link's value (or an error quoting it) shown at most."""

_MARKDOWN = re.compile(r"([\\`*{}\[\]()#!|<>$:~&])")
"""Characters that could make a link, an image, code, emphasis, an icon (``:material/x:``),
a colour (``:red[x]``), maths (``$x$``), strikethrough, a table, raw HTML or an entity
(``&#91;``) in Streamlit's markdown: each is backslash-escaped (CommonMark renders ``\\c``
as ``c`` for every ASCII punctuation character)."""
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
"""An ``_`` that is not between two letters or digits: only such an underscore can open or
close emphasis (``__bold__``); ``num_clients`` stays as it is, readable in the page source."""
_BLOCK_START = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")
"""A list item (``- x``, ``+ x``, ``1. x``) or a setext underline at the start of the text."""
_AUTOLINK = re.compile(r"(?i)\\?:/|www\.|@")
"""GitHub-flavoured markdown links bare addresses even when escaped (``http\\://x``, ``www.x``,
``a@b.c``): an invisible word joiner (U+2060) breaks each pattern."""
_JOINER = "\u2060"


def plain_text(text, limit: int = ECHO_LIMIT) -> str:
    """``text`` as one line of at most ``limit`` characters (whitespace runs become one space),
    without the server's paths, not escaped: for ``st.text`` / ``st.code``, which render
    literally."""
    from fedcore.data.root import public_message

    text = " ".join(public_message(text).split())
    return text[: limit - 1] + "…" if len(text) > limit else text


def plain(text, limit: int = ECHO_LIMIT) -> str:
    """``text`` as markdown that Streamlit renders literally: one line, at most ``limit``
    characters, every markup character escaped.

    >>> plain("**Session expired.** [Log in](http://x)")
    '\\\\*\\\\*Session expired.\\\\*\\\\* \\\\[Log in\\\\]\\\\(http\\\\:\\u2060//x\\\\)'
    >>> plain("__now__ num_clients")
    '\\\\_\\\\_now\\\\_\\\\_ num_clients'
    >>> plain("- 1. item")
    '\\\\- 1. item'
    >>> plain("no files under /srv/private/data")
    'no files under \\\\<path\\\\>'
    """
    text = _MARKDOWN.sub(r"\\\1", plain_text(text, limit))
    text = _UNDERSCORE.sub(r"\\_", text)
    text = _BLOCK_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if not m.group(2).isdigit()
                                                    else m.group(2) + "\\"), text, count=1)
    return _AUTOLINK.sub(lambda m: m.group(0)[:-1] + _JOINER + m.group(0)[-1], text)


def link_warning(message: str, detail) -> None:
    """A warning: ``message`` (our own markdown) plus ``detail`` from the link as plain text."""
    import streamlit as st

    st.warning(f"{message} {plain(detail)}" if detail else message, icon=":material/link_off:")


FLASH_S = 20.0
"""How long a one-off notice stays at least (the page reruns at once when the browser reports its
visitor code, so a notice shown only once would vanish before it is read)."""
FLASH_RUNS = 3
"""In how many of the page's script runs a one-off notice shows at least, however long they take:
on a busy server the run that reads the visitor code can come more than :data:`FLASH_S` after the
one that set the notice (a link's "could not be loaded" was gone when the page first settled)."""


def flash(key: str, message) -> None:
    """Keep ``message`` under ``key`` for :func:`flashed` to show in the next :data:`FLASH_RUNS`
    script runs and over the next :data:`FLASH_S` s."""
    import time

    import streamlit as st

    st.session_state[key] = (message, time.monotonic(), 0)


def flashed(key: str):
    """The message :func:`flash` kept under ``key`` while it is recent or has been shown in fewer than
    :data:`FLASH_RUNS` runs (call once per script run), else None (and it is dropped)."""
    import time

    import streamlit as st

    item = st.session_state.get(key)
    if not isinstance(item, tuple) or len(item) != 3:
        st.session_state.pop(key, None)
        return None
    message, at, shown = item
    if shown >= FLASH_RUNS and time.monotonic() - at > FLASH_S:
        st.session_state.pop(key, None)
        return None
    st.session_state[key] = (message, at, shown + 1)
    return message
