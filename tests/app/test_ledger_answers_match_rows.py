"""Issue 25 item 2: an answer never contradicts the database.

Before: a membership change (or a user's budget, a new cohort) committed inside its write unit and
then read its answer in a separate transaction; when that read came after the operation's deadline
(a slow commit), the answer was ``503 "nothing was recorded"`` although the rows were committed.
Now the answer is read in the write's own transaction. Here every commit is made slow — past the
deadline — and the answer is checked against the rows."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.deps import get_api_keys
from app.db.migrate import upgrade_to_head
from app.db.session import Database, DbOptions
from app.main import app
from tests.helpers.ledger import ADMIN, KEYS

TIMEOUT = 1.0


@pytest.fixture
def slow_commits(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/slow.db"
    upgrade_to_head(url)
    db = Database(url, options=DbOptions(timeout=TIMEOUT))
    keys = [(k.encode(), r, f"{r}-{i + 1}") for i, (k, r) in enumerate(KEYS.items())]
    app.dependency_overrides[get_api_keys] = lambda: keys
    app.state.ledger_db = db
    slow = {"on": False}
    real_commit = Session.commit

    def commit(self):
        real_commit(self)
        if slow["on"]:
            time.sleep(TIMEOUT + 0.3)  # committed; the operation's deadline passes meanwhile

    monkeypatch.setattr(Session, "commit", commit)
    try:
        with TestClient(app) as c:
            yield c, db, slow
    finally:
        app.dependency_overrides.pop(get_api_keys, None)
        app.state.ledger_db = None
        db.dispose()


def test_a_slow_commit_is_answered_as_committed(slow_commits):
    c, db, slow = slow_commits
    assert (
        c.post(
            "/v1/users/bulk",
            json={"id_range": {"prefix": "d", "count": 50}, "budget": {"epsilon": 4, "delta": 1e-6}},
            headers=ADMIN,
        ).status_code
        == 201
    )
    slow["on"] = True
    r = c.post("/v1/cohorts", json={"cohort_id": "devices"}, headers=ADMIN)
    assert r.status_code == 201, r.text
    r = c.post("/v1/cohorts/devices/members", json={"id_range": {"prefix": "d", "count": 50}}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json()["added"] == 50 and r.json()["cohort"]["members"] == 50
    r = c.put("/v1/users/d7", json={"budget": {"epsilon": 9, "delta": 1e-6}}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json()["budget"]["epsilon"] == 9
    slow["on"] = False
    # the rows say the same
    assert c.get("/v1/cohorts/devices", headers=ADMIN).json()["members"] == 50
    assert c.get("/v1/users/d7", headers=ADMIN).json()["budget"]["epsilon"] == 9


def test_membership_changes_and_bulk_creation_are_bounded_up_front(slow_commits):
    c, _db, _slow = slow_commits
    big = {"id_range": {"prefix": "x", "count": 100_001}}
    r = c.post("/v1/users/bulk", json={**big, "budget": {"epsilon": 4, "delta": 1e-6}}, headers=ADMIN)
    assert r.status_code == 422 and "100000" in r.text
    assert c.post("/v1/cohorts", json={"cohort_id": "c"}, headers=ADMIN).status_code == 201
    r = c.post("/v1/cohorts/c/members", json=big, headers=ADMIN)
    assert r.status_code == 422 and "100000" in r.text
