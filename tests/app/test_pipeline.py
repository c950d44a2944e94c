"""The SDK's pipeline helper (privacy_accountant.pipeline) against a stand-in client: a round is charged before its
body runs, a refusal stops the run before any data is touched, keys make re-runs replay, and every
charged round (even one whose body fails) is kept in the history with the probe user's ε."""

from __future__ import annotations

import pytest

from privacy_accountant import BudgetExceeded
from privacy_accountant.pipeline import Pipeline, RoundRefused


class FakeClient:
    """Admits ``capacity`` charges (per distinct key), then refuses; remembers keys (replays)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.keys: list[str] = []
        self.log: list[str] = []

    def charge(self, event, users=None, *, cohort=None, idempotency_key=None):
        del event, users, cohort  # a stand-in: only the key matters
        if idempotency_key in self.keys:
            self.log.append(f"replay {idempotency_key}")
            return {"replayed": True}
        if len(self.keys) >= self.capacity:
            self.log.append(f"refuse {idempotency_key}")
            raise BudgetExceeded(409, "charge refused", body={"refused_count": 3})
        self.keys.append(idempotency_key)
        self.log.append(f"charge {idempotency_key}")
        return {"status": "admitted"}

    def charge_cohort(self, event, cohort, *, idempotency_key=None):
        return self.charge(event, cohort=cohort, idempotency_key=idempotency_key)

    def get_user(self, user_id):
        del user_id
        return {"spent": {"epsilon": 0.5 * len(self.keys)}, "remaining_epsilon": 10 - 0.5 * len(self.keys)}


EV = [{"mechanism": "pure_dp", "epsilon": 0.5}]


def test_rounds_are_charged_before_they_run_and_stop_on_refusal():
    c = FakeClient(capacity=3)
    pipe = Pipeline(c, run_id="r", cohort="pop", probe_user="u0")
    ran = []
    for rnd in pipe.rounds(10, EV):
        assert c.log[-1] == f"charge r-round-{rnd.index}"  # paid first
        ran.append(rnd.index)
        rnd.record(accuracy=0.1 * rnd.index)
    assert ran == [1, 2, 3]
    assert isinstance(pipe.stopped, RoundRefused) and pipe.stopped.round == 4
    assert c.log[-1] == "refuse r-round-4"
    assert [r.spent_epsilon for r in pipe.history] == [0.5, 1.0, 1.5]
    assert pipe.curve("accuracy") == ([0.5, 1.0, 1.5], [0.1, 0.2, 0.30000000000000004])


def test_rerunning_a_run_id_replays_charged_rounds():
    c = FakeClient(capacity=2)
    first = Pipeline(c, run_id="r", users=["a", "b"])
    assert len(list(first.rounds(2, EV))) == 2
    again = Pipeline(c, run_id="r", users=["a", "b"])
    rounds = list(again.rounds(3, EV))
    assert [r.replayed for r in rounds] == [True, True] and again.stopped.round == 3


def test_a_failing_body_is_still_a_charged_round():
    c = FakeClient(capacity=5)
    pipe = Pipeline(c, run_id="r", cohort="pop", probe_user="u0")
    with pytest.raises(ZeroDivisionError), pipe.round(EV):
        raise ZeroDivisionError("the body failed")
    assert len(pipe.history) == 1 and "ZeroDivisionError" in pipe.history[0].error
    with pipe.round(EV) as rnd:
        rnd.record(loss=1.0)
    assert pipe.history[-1].outcome == {"loss": 1.0} and pipe.history[-1].index == 2


def test_several_events_per_round_get_their_own_keys_and_refusal_raises_before_the_body():
    c = FakeClient(capacity=3)
    pipe = Pipeline(c, run_id="r", cohort="pop")
    with pipe.round(EV * 2):
        pass
    assert c.keys == ["r-round-1-0", "r-round-1-1"]
    body_ran = False
    with pytest.raises(RoundRefused), pipe.round(EV * 2):
        body_ran = True
    assert not body_ran
    with pytest.raises(ValueError):
        Pipeline(c, run_id="x")


def test_typed_answers_are_read_like_dicts():
    """The SDK may answer with typed models (attribute access) instead of dicts."""
    from types import SimpleNamespace

    class Typed(FakeClient):
        def charge(self, event, users=None, *, cohort=None, idempotency_key=None):
            d = super().charge(event, users, cohort=cohort, idempotency_key=idempotency_key)
            return SimpleNamespace(replayed=bool(d.get("replayed")))

        def get_user(self, user_id):
            d = super().get_user(user_id)
            return SimpleNamespace(
                spent=SimpleNamespace(epsilon=d["spent"]["epsilon"]), remaining_epsilon=1.0
            )

    c = Typed(capacity=2)
    pipe = Pipeline(c, run_id="t", users=["a"])
    assert [r.spent_epsilon for r in pipe.rounds(5, EV)] == [None, None]  # read after each round ends
    assert [r.spent_epsilon for r in pipe.history] == [0.5, 1.0] and pipe.stopped.round == 3
    assert Pipeline(c, run_id="t", users=["a"]).charge(EV).replayed
