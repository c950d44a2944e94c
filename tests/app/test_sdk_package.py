"""The SDK's typed results mirror the response schemas the service publishes (how the SDK installs
on its own: ``test_distributions.py``)."""

from __future__ import annotations

import typing

import pytest

from privacy_accountant import models as m

# ------------------------------------------------------------------------------------------ schemas
#: SDK model → the service's response schema (components of /openapi.json)
MIRRORS = {
    m.HealthResponse: "HealthResponse",
    m.RdpResponse: "RdpResponse",
    m.EpsilonResponse: "EpsilonResponse",
    m.DeltaResponse: "DeltaResponse",
    m.EventSource: "EventSource",
    m.CalibrateResponse: "CalibrateResponse",
    m.Budget: "Budget",
    m.Spent: "Spent",
    m.FilterInfo: "FilterInfo",
    m.User: "UserView",
    m.UserListItem: "UserListItem",
    m.UserPage: "UserPage",
    m.BulkUsersResult: "BulkUsersResult",
    m.Actor: "Actor",
    m.Charge: "ChargeAdmitted",
    m.ChargeRecord: "ChargeRecord",
    m.ChargeList: "ChargeList",
    m.RefusalCost: "RefusalCost",
    m.Cohort: "CohortView",
    m.CohortPage: "CohortPage",
    m.MembersChanged: "MembersChanged",
    m.Member: "Member",
    m.MemberList: "MemberList",
    m.Membership: "MembershipView",
    m.UserCohorts: "UserCohorts",
    m.HistoryPoint: "HistoryPoint",
    m.UserHistory: "UserHistory",
    m.CohortHistory: "CohortHistory",
    m.UserCurve: "UserCurve",
    m.TimelineBucket: "TimelineBucket",
    m.LedgerSummary: "LedgerSummary",
    m.ExhaustionEntry: "ExhaustionEntry",
    m.ExhaustionList: "ExhaustionList",
    m.Audit: "Audit",
}


@pytest.fixture(scope="module")
def components() -> dict:
    from app.main import create_app

    return create_app().openapi()["components"]["schemas"]


@pytest.mark.parametrize("model", list(MIRRORS), ids=lambda c: c.__name__)
def test_sdk_models_mirror_the_published_schemas(model, components):
    schema = components[MIRRORS[model]]
    props = set(schema["properties"])
    server_required = set(schema.get("required", []))
    fields = model.model_fields
    assert set(fields) == props, (
        f"{model.__name__}: SDK {sorted(set(fields) - props)} vs service {sorted(props - set(fields))}"
    )
    sdk_required = {k for k, f in fields.items() if f.is_required()}
    assert sdk_required <= server_required, f"{model.__name__} requires what the service may omit"


def test_sdk_models_parse_the_schemas_examples(components):
    for model, name in MIRRORS.items():
        for ex in components[name].get("examples", []):
            parsed = model.model_validate(ex)
            assert parsed.to_dict().keys() >= {k for k, v in ex.items() if v is not None}, name


def test_every_model_is_exported():
    exported = {getattr(m, n) for n in m.__all__}
    defined = {v for v in vars(m).values() if isinstance(v, type) and issubclass(v, m.Model)}
    assert defined <= exported


def test_mapping_style_reads_keep_old_code_working():
    u = m.User.model_validate(
        {
            "user_id": "u",
            "budget": {"epsilon": 1.0, "delta": 1e-6},
            "policy": "declared",
            "spent": {"epsilon": 0.25, "order": 8.0},
            "remaining_epsilon": 0.75,
            "charges": 1,
            "grid_version": 1,
            "created_at": "2025-01-01T00:00:00+00:00",
            "new_field_of_a_later_service": 3,
        }
    )
    assert u["spent"]["epsilon"] == u.spent.epsilon == 0.25 and u.get("filter") is None
    assert "charges" in u and "nope" not in u and u.new_field_of_a_later_service == 3
    with pytest.raises(KeyError):
        u["nope"]
    assert u.to_dict()["created_at"].startswith("2025-01-01T00:00:00")
    assert typing.get_type_hints(type(u))["budget"] is m.Budget
