"""Identity in a real browser (issue 22): what used to let a visitor take over another's run.

Before, the owner key was a hash of Streamlit's ``_streamlit_xsrf`` cookie: readable from
JavaScript, sent to every port of the same host, and accepted from any client. Here a page
on another port of the same host reads every cookie it can in A's browser, a second browser
(B) sets them all and opens A's run by its link: the run stays read-only for B (no Stop,
and Pause / Step greyed out), and A keeps its Stop. Only A's "keep my runs" code, which no
cookie and no other page holds, moves the run to B, and that spends the code.

Sign-in (``st.login``) against a real OIDC provider the test starts (``oidc-provider-mock``,
requirements-dev.txt; skipped without it or Authlib): a signed-in user keeps her run in a new
page session and stops it, another signed-in user cannot, an admin (``FEDCORE_ADMINS``) can.
"""
from __future__ import annotations

import http.server
import re
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import (CHROMIUM, dashboard_server, enabled_controls, free_port, press_until,  # noqa: E402
                              round_counter, scaled_ms, settle, wait_until)

SIGNED_IN_HOST = {"FEDCORE_MAX_RUNNING": "2", "FEDCORE_OWNER_GRACE_S": "60", "FEDCORE_MAX_ROUNDS": "5000",
                  "FEDCORE_LIMITS": "", "FEDCORE_ADMINS": "teacher@school.org"}
SLOW = "/?preset=demo&rounds=5000&local.epochs=5&local.batch_size=8&seed=71"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing (apt-get install chromium); "
                                 "the browser test never downloads a browser")]

STEAL = b"""<!doctype html><title>another port</title>
<pre id="jar"></pre><script>document.getElementById('jar').textContent = document.cookie;</script>"""


class _Thief(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(STEAL)

    def log_message(self, *args):  # noqa: D102
        pass


@pytest.fixture(scope="module")
def thief():
    """A page on another port of the same host (127.0.0.1): it reads document.cookie."""
    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Thief)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}/"
    httpd.shutdown()


def new_page(context):
    page = context.new_page()
    page.set_default_timeout(90_000)
    return page


def store_record(store, run_id):
    from fedcore.runner import JobStore

    return JobStore(store).get_job_dict(run_id)


def test_cookies_read_from_another_port_do_not_take_over_a_run(browser, shared_server, thief):
    # the classroom server of tests/test_browser_shared.py (conftest.SHARED_HOST: one worker slot)
    url, store = shared_server
    a_ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    a = new_page(a_ctx)
    a.goto(url + SLOW)
    settle(a, 0.5)
    a.get_by_role("button", name="Run").click()
    wait_until(lambda: round_counter(a) >= 1, 120, "A's run never showed a round")
    wait_until(lambda: "run=" in a.url, 30, "A's URL never named its run")
    link = a.url
    run_id = re.search(r"run=([^&]+)", link).group(1)
    assert "Stop" in enabled_controls(a)

    # a page on another port of the same host, in A's browser, reads the cookies it can
    other = new_page(a_ctx)
    other.goto(thief)
    jar = other.locator("#jar").inner_text()
    stolen = dict(part.strip().split("=", 1) for part in jar.split(";") if "=" in part)
    assert "_streamlit_xsrf" in stolen  # what the old owner key was made from
    other.close()

    # B: another browser, with every cookie A's browser showed the other page, opens the link
    b_ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    b_ctx.add_cookies([{"name": k, "value": v, "url": url} for k, v in stolen.items()])
    b = new_page(b_ctx)
    b.goto(link)
    b.get_by_text("shared run, read-only").wait_for()
    wait_until(lambda: round_counter(b) >= 1, 60, "B does not see A's run")
    settle(b, 1.0)
    assert enabled_controls(b) == []
    # ... also with every cookie of A's browser (HttpOnly ones included), and after a reload
    b_ctx.add_cookies([{k: c[k] for k in ("name", "value", "domain", "path")} for c in a_ctx.cookies()])
    b.reload()
    b.get_by_text("shared run, read-only").wait_for()
    settle(b, 1.0)
    assert enabled_controls(b) == []
    assert store_record(store, run_id)["status"] == "running"
    assert "Stop" in enabled_controls(a)  # A still controls it

    # the code A can save (sidebar "Keep my runs") is in no cookie and was not on the other page
    a.get_by_text("Keep my runs").click()
    code = a.locator("[data-testid=stSidebar] code").first.inner_text().strip()
    assert code.startswith("keep-")
    assert code not in jar and all(code not in c["value"] for c in a_ctx.cookies())

    # entering that code is what moves the run: B now controls it (and stops it)
    b.get_by_text("Keep my runs").click()
    b.get_by_label("Claim runs with a saved code").fill(code)
    b.get_by_role("button", name="Claim my runs").click()
    b.get_by_text("are yours in this tab").wait_for()
    b.get_by_role("button", name="Stop", exact=True).wait_for(timeout=scaled_ms(30))
    b.screenshot(path=str(Path(store).parent / "claimed.png"))
    b.get_by_role("button", name="Stop", exact=True).click()
    wait_until(lambda: store_record(store, run_id)["status"] == "stopped", 30, "B's Stop did not stop the claimed run")
    # the code is spent: entering it again claims nothing
    b.get_by_label("Claim runs with a saved code").fill(code)
    b.get_by_role("button", name="Claim my runs").click()
    b.get_by_text("not valid").wait_for()
    # A's page is told that its runs moved (when it next reruns: here, as the run it shows ended)
    a.get_by_text("This browser's runs moved").wait_for()
    a_ctx.close()
    b_ctx.close()


def shown_run(pg) -> str:
    """The run the page shows, from its address (read in the page: ``page.url`` can lag)."""
    query = "new URLSearchParams(location.search).get('run') || ''"
    wait_until(lambda: pg.evaluate(query), 90, "the page's address never named its run")
    return pg.evaluate(query)


def test_a_reload_and_a_second_tab_are_the_same_visitor(browser, shared_server, thief):
    """Issue 30: the browser keeps its visitor across a reload (Stop stays, History lists the run)
    and a second tab shares it, and its per-owner cap; a page on another port of the same host,
    in the same browser, reads no cookie or storage that gives control."""
    url, store = shared_server
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    a = new_page(ctx)
    a.goto(url + SLOW.replace("seed=71", "seed=91"))
    settle(a, 1.0)
    a.get_by_role("button", name="Run").click()
    run_id = shown_run(a)
    owner = store_record(store, run_id)["owner"]

    a.reload()                                         # F5: the same visitor
    press_ready = a.get_by_role("button", name="Stop", exact=True)
    press_ready.wait_for(timeout=scaled_ms(90))
    wait_until(press_ready.is_enabled, 60, "Stop is gone after a reload")
    a.get_by_role("link", name="History").click()
    a.get_by_role("button", name="Open in Playground").wait_for(timeout=scaled_ms(60))

    tab = new_page(ctx)                                # a second tab of the same browser
    tab.goto(url + SLOW.replace("seed=71", "seed=92"))
    settle(tab, 0.5)
    tab.get_by_role("button", name="Run").click()
    second = shown_run(tab)
    assert store_record(store, second)["owner"] == owner          # one visitor, not one per tab
    a.goto(url + SLOW.replace("seed=71", "seed=93"))              # a third job: over the per-owner cap of 2
    settle(a, 0.5)
    a.get_by_role("button", name="Run").click()
    a.get_by_text("max_active_per_owner").first.wait_for(timeout=scaled_ms(60))

    other = new_page(ctx)                              # another port: no storage of this origin
    other.goto(thief)
    assert "keep-" not in other.locator("#jar").inner_text()
    assert other.evaluate("Object.keys(window.localStorage)") == []
    other.close()
    from fedcore.runner import JobStore

    for rid in (run_id, second):
        JobStore(store).request_stop(rid)
    ctx.close()


# --- sign-in: a real OIDC provider (oidc-provider-mock) started by the test ----------------
ADMIN_EMAIL = SIGNED_IN_HOST["FEDCORE_ADMINS"]
IMPOSTOR = "mallory"


@pytest.fixture(scope="module")
def signed_in_server(tmp_path_factory):
    """The dashboard with ``[auth]`` pointing at a local OIDC provider, and FEDCORE_ADMINS."""
    pytest.importorskip("authlib", reason="st.login needs Authlib (requirements-dev.txt)")
    oidc = pytest.importorskip("oidc_provider_mock", reason="requirements-dev.txt: oidc-provider-mock")
    port = free_port()  # the redirect URI names it
    folder = tmp_path_factory.mktemp("auth")
    users = [oidc.User(sub=email, claims={"email": email, "email_verified": True})
             for email in ("alice@example.org", "bob@example.org", ADMIN_EMAIL)]
    # an account whose e-mail claim is the admin's address, unverified (issue 30)
    users.append(oidc.User(sub=IMPOSTOR, claims={"email": ADMIN_EMAIL, "email_verified": False}))
    with oidc.run_server_in_thread(user_claims=users) as provider:
        issuer = f"http://localhost:{provider.server_port}"
        (folder / "secrets.toml").write_text(
            "[auth]\n"
            f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
            'cookie_secret = "test-cookie-secret-not-for-production-0123456789"\n'
            'client_id = "fedcore-lab"\n'
            'client_secret = "fedcore-lab-secret"\n'
            f'server_metadata_url = "{issuer}/.well-known/openid-configuration"\n')
        store = tmp_path_factory.mktemp("store")
        with dashboard_server(store, tmp_path_factory.mktemp("log"), port=port,
                              env={**SIGNED_IN_HOST, "STREAMLIT_SECRETS_FILES": str(folder / "secrets.toml")}) as url:
            yield url, store


def signed_in(browser, url, sub, email=None):
    """A browser signed in as subject ``sub`` (whose e-mail claim is ``email``, default ``sub``)
    through the provider's authorization form."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = new_page(context)
    pg.goto(url + "/")
    settle(pg, 0.5)
    # a press that lands while the button is drawn again reaches no script run (a busy host): press again
    press_until(pg.get_by_role("button", name="Log in"), lambda: _on_form(pg), "Log in never reached the provider's form")
    pg.locator("input[name=sub]").fill(sub)  # the provider's form: who signs in
    pg.get_by_role("button", name="Authorize").click()
    pg.get_by_text(signed_in_as(email or sub)).wait_for()
    return pg


def _on_form(pg) -> bool:
    """Whether the page shows the provider's form (False while it is still navigating there)."""
    try:
        return pg.locator("input[name=sub]").count() > 0
    except Exception:  # noqa: BLE001 -- the page navigated while asked
        return False


def signed_in_as(email):
    """The sidebar's caption (plain text: a word joiner keeps the address from becoming a link)."""
    return re.compile("Signed in as " + re.escape(email.split("@")[0]))


def press_stop(pg, who):
    stop = pg.get_by_role("button", name="Stop", exact=True)
    try:
        settle(pg, 0.5)
        stop.wait_for(timeout=scaled_ms(90))
        wait_until(stop.is_enabled, 30, f"{who}'s Stop stayed greyed out")
    except Exception as exc:
        raise AssertionError((who, str(exc)[:300], pg.url, enabled_controls(pg))) from None
    stop.click()


def start_run(pg, url, seed):
    pg.goto(url + SLOW.replace("seed=71", f"seed={seed}"))
    settle(pg, 0.5)
    pg.get_by_role("button", name="Run").click()
    wait_until(lambda: round_counter(pg) >= 1, 120, "the run never showed a round")
    wait_until(lambda: "run=" in pg.url, 30, "the URL never named the run")
    return pg.url, re.search(r"run=([^&]+)", pg.url).group(1)


def test_signed_in_users_control_their_own_runs_and_admins_any(browser, signed_in_server):
    url, store = signed_in_server
    alice = signed_in(browser, url, "alice@example.org")
    link, run_id = start_run(alice, url, 81)
    owner = store_record(store, run_id)["owner"]
    assert owner.startswith("user:") and "alice" not in owner   # the provider's issuer and subject, hashed
    assert "Stop" in enabled_controls(alice)
    assert alice.locator("[data-testid=stSidebar]").get_by_text("Keep my runs").count() == 0

    # Bob, signed in too, opens Alice's link: read-only
    bob = signed_in(browser, url, "bob@example.org")
    bob.goto(link)
    bob.get_by_text("shared run, read-only").wait_for()
    settle(bob, 1.0)
    assert enabled_controls(bob) == []

    # Alice, in a new page of her browser (a new Streamlit session), still owns it, and stops it
    alice.goto(link)
    alice.get_by_text(signed_in_as("alice@example.org")).wait_for()
    press_stop(alice, "alice")
    wait_until(lambda: store_record(store, run_id)["status"] == "stopped", 30, "Alice could not stop her run")

    # an account that claims the admin's address without the provider verifying it is no admin
    link2, run2 = start_run(alice, url, 82)
    mallory = signed_in(browser, url, IMPOSTOR, ADMIN_EMAIL)
    mallory.get_by_text("e-mail not verified: no admin rights").wait_for()
    mallory.goto(link2)
    mallory.get_by_text("shared run, read-only").wait_for()
    settle(mallory, 1.0)
    assert enabled_controls(mallory) == [] and store_record(store, run2)["status"] in ("queued", "running")

    # the host's admin (FEDCORE_ADMINS, verified) may stop anybody's run
    teacher = signed_in(browser, url, ADMIN_EMAIL)
    teacher.goto(link2)
    press_stop(teacher, "teacher")
    wait_until(lambda: store_record(store, run2)["status"] == "stopped", 30, "the admin could not stop the run")
    for pg in (alice, bob, mallory, teacher):
        pg.context.close()
