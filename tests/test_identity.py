"""Anonymous identity: issued by the server, kept in the Streamlit session, claimed with a
"keep my runs" code that is spent when used (fedcore/runner/owners.py Identities,
pages/components/host.py). The browser side (no cookie names an owner): test_browser_identity.py.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.runner.owners import CODE_PREFIX, Identities

ROOT = Path(__file__).resolve().parents[1]


def test_each_issue_is_a_new_owner_with_its_own_code(tmp_path):
    ids = Identities(tmp_path / "owners.db")
    issued = [ids.issue() for _ in range(5)]
    owners, codes = zip(*issued)
    assert len(set(owners)) == 5 and len(set(codes)) == 5
    assert all(o.startswith("visitor:") and c.startswith(CODE_PREFIX) and len(c) >= 30 for o, c in issued)
    assert all(ids.valid(o, c) for o, c in issued)
    assert not ids.valid(owners[0], codes[1])  # a code is one owner's, not anyone's
    # only digests are stored: the file does not hold a code
    rows = sqlite3.connect(tmp_path / "owners.db").execute("SELECT * FROM codes").fetchall()
    assert not any(c in str(rows) for c in codes)
    # the owner id says nothing about the code
    assert not any(o.split(":")[1] in c for o, c in issued)


def test_a_claim_moves_the_owner_and_spends_the_code(tmp_path):
    ids = Identities(tmp_path / "owners.db")
    owner, code = ids.issue()
    got = ids.claim("  " + code + "\n")
    assert got is not None and got[0] == owner and got[1] != code
    assert not ids.valid(owner, code) and ids.valid(owner, got[1])
    assert ids.claim(code) is None  # spent: whoever else holds it gets nothing
    # a second database handle (another process) sees the same
    assert Identities(tmp_path / "owners.db").valid(owner, got[1])


@pytest.mark.parametrize("code", ["", "keep-", "keep-guessed", "visitor:abc", "x" * 5000, None, 42])
def test_a_code_the_server_did_not_issue_claims_nothing(tmp_path, code):
    ids = Identities(tmp_path / "owners.db")
    ids.issue()
    assert ids.claim(code) is None


SCRIPT = """
import streamlit as st
from pages.components import host
host.keep_my_runs()
st.write("owner=" + host.viewer().owner)
"""


def owner_of(at) -> str:
    return next(m.value for m in at.markdown if str(m.value).startswith("owner="))[len("owner="):]


def test_sessions_get_their_own_owner_and_a_saved_code_claims_it_in_another(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDCORE_STORE", str(tmp_path / "store"))
    monkeypatch.chdir(ROOT)
    a = AppTest.from_string(SCRIPT, default_timeout=60).run()
    b = AppTest.from_string(SCRIPT, default_timeout=60).run()
    a_owner, b_owner = owner_of(a), owner_of(b)
    assert a_owner.startswith("visitor:") and b_owner.startswith("visitor:") and a_owner != b_owner
    assert owner_of(a.run()) == a_owner  # a rerun (a click, a page switch) keeps it
    code = a.sidebar.code[0].value
    assert code.startswith(CODE_PREFIX)

    # B enters A's code: B now owns A's runs, A's page is a newcomer, the code is spent
    b.sidebar.text_input[0].input(code)
    b.sidebar.button[0].click().run()
    assert owner_of(b) == a_owner
    assert any("are yours in this tab" in s.value for s in b.sidebar.success)
    assert b.sidebar.code[0].value not in (code, "")
    import time

    time.sleep(2.1)  # host.RECHECK_S
    assert owner_of(a.run()) not in (a_owner, b_owner)

    # the spent code claims nothing
    c = AppTest.from_string(SCRIPT, default_timeout=60).run()
    c_owner = owner_of(c)
    c.sidebar.text_input[0].input(code)
    c.sidebar.button[0].click().run()
    assert owner_of(c) == c_owner
    assert any("not valid" in e.value for e in c.sidebar.error)


def test_many_script_threads_share_the_registry(tmp_path):
    # the server's sessions run their scripts in threads of one process: one connection, locked
    from concurrent.futures import ThreadPoolExecutor

    ids = Identities(tmp_path / "owners.db")

    def visit(_):
        owner, code = ids.issue()
        new = ids.claim(code)
        return ids.valid(owner, new[1]) and not ids.valid(owner, code)

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(visit, range(80)))
