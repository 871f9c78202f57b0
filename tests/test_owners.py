"""Owners: only the owner or an admin stops or deletes a run; lists are private unless the
host says otherwise; a link shows a run read-only (fedcore/runner/owners.py, jobs.py)."""
from __future__ import annotations

import pytest

from fedcore.resolve import preset_config
from fedcore.runner import Jobs
from fedcore.errors import FedcoreError
from fedcore.runner.owners import NotYourRun, SignedIn, Viewer, can_control, describe_owner, listed
from fedcore.runner.record import JobRecord

A, B = Viewer("session:a"), Viewer("session:b")
TEACHER = {"iss": "https://id.school.org", "sub": "t-1", "email": "Teacher@School.org", "email_verified": True}
ADMIN = SignedIn.from_claims(TEACHER).viewer(["teacher@school.org"])


def test_signed_in_users_are_their_issuer_and_subject_and_admins_need_a_verified_email():
    assert ADMIN.admin and ADMIN.owner.startswith("user:") and "teacher" not in ADMIN.owner
    # the same address claimed, unverified, at the same provider: another owner, and no admin
    impostor = SignedIn.from_claims({**TEACHER, "sub": "m-9", "email_verified": False})
    assert impostor.owner != ADMIN.owner and not impostor.viewer(["teacher@school.org"]).admin
    # the same subject at another provider is another person
    assert SignedIn.from_claims({**TEACHER, "iss": "https://evil.example"}).owner != ADMIN.owner
    # a provider without the claim: trusted only when the host says so (email_trust = "claimed")
    silent = {k: v for k, v in TEACHER.items() if k != "email_verified"}
    assert not SignedIn.from_claims(silent).viewer(["teacher@school.org"]).admin
    assert SignedIn.from_claims(silent, "claimed").viewer(["teacher@school.org"]).admin
    assert not SignedIn.from_claims({**TEACHER, "email_verified": "false"}, "claimed").verified
    with pytest.raises(FedcoreError, match="no subject"):
        SignedIn.from_claims({"email": "a@b.c"})


def test_only_the_owner_or_an_admin_controls_a_run():
    run = JobRecord("r", owner=A.owner)
    assert can_control(run, A) and not can_control(run, B) and can_control(run, ADMIN)
    script_run = JobRecord("s", owner=None)
    assert not can_control(script_run, A) and can_control(script_run, ADMIN)


@pytest.mark.parametrize("visibility, scope, b_sees_a", [
    ("private", "mine", False), ("private", "everyone", False),
    ("public", "mine", False), ("public", "everyone", True),
])
def test_lists_are_private_unless_the_host_makes_them_public(visibility, scope, b_sees_a):
    run = JobRecord("r", owner=A.owner)
    assert listed(run, A, scope, visibility)
    assert listed(run, B, scope, visibility) == b_sees_a
    assert listed(run, ADMIN, "everyone", "private")


def test_other_visitors_are_never_named():
    assert describe_owner(JobRecord("r", owner=A.owner), A) == "you"
    assert describe_owner(JobRecord("r", owner=A.owner), B) == "another visitor"
    assert describe_owner(JobRecord("r", owner="user:0123"), ADMIN) == "a signed-in user"
    assert describe_owner(JobRecord("r", owner=None), B) == "a script"


def test_the_manager_refuses_another_visitors_stop_and_delete(tmp_path):
    m = Jobs(tmp_path, warm=False)
    try:
        run_id = m.start(preset_config("demo").replace(rounds=40_000), owner=A.owner, background=True)
        with pytest.raises(NotYourRun, match="only the person who started run"):
            m.stop(run_id, by=B)
        with pytest.raises(NotYourRun):
            m.delete(run_id, by=B)
        assert not m.store.stop_requested(run_id) and m.store.get_job_dict(run_id) is not None
        m.stop(run_id, by=A)
        assert m.store.stop_requested(run_id)
        assert m.delete(run_id, by=ADMIN) and m.store.get_job_dict(run_id) is None
    finally:
        m.close()
