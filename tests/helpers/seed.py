"""Seed a running service's ledger with a small, varied population (for the dashboard's browser
tests and its screenshots), through the SDK.

    from tests.helpers.seed import seed_ledger
    facts = seed_ledger(url, admin_key, pipeline_key)

Users: eight named people (declared budgets, one Rényi-filter budget), and 60 devices
``device-0`` … ``device-59`` created in bulk; cohorts ``keyboard-eu`` (devices 0–39) and
``keyboard-us`` (devices 40–59 and alice), each charged a few subsampled rounds; explicit Gaussian
charges of different sizes to the people, until ``bob`` is refused. Returns what the tests check
against (ids, counts).
"""

from __future__ import annotations

from privacy_accountant import AccountantClient, BudgetExceeded

PEOPLE = {  # user → (budget ε, δ, policy)
    "alice": (8.0, 1e-6, "declared"),
    "bob": (1.7, 1e-6, "declared"),
    "carol": (4.0, 1e-6, "declared"),
    "dave": (6.0, 1e-8, "declared"),
    "erin": (3.0, 1e-6, "declared"),
    "frank": (5.0, 1e-6, "filter"),
    "grace": (10.0, 1e-5, "declared"),
    "heidi": (2.5, 1e-6, "declared"),
}
DEVICES = 60


def seed_ledger(url: str, admin_key: str, pipeline_key: str) -> dict:
    with (
        AccountantClient(url, api_key=admin_key) as admin,
        AccountantClient(url, api_key=pipeline_key) as pipe,
    ):
        for uid, (eps, delta, policy) in PEOPLE.items():
            if policy == "filter":
                admin.put_user(
                    uid,
                    budget={"epsilon": eps, "delta": delta},
                    policy="filter",
                    planned_event={"mechanism": "gaussian", "noise_multiplier": 3.0, "count": 20},
                )
            else:
                admin.put_user(uid, budget={"epsilon": eps, "delta": delta}, policy=policy)
        admin.bulk_create_users(
            id_range={"prefix": "device-", "start": 0, "count": DEVICES},
            budget={"epsilon": 4.0, "delta": 1e-6},
            on_conflict="skip",
        )
        admin.create_cohort("keyboard-eu", "EU devices of the keyboard model")
        admin.create_cohort("keyboard-us", "US devices of the keyboard model")
        admin.add_members("keyboard-eu", id_range={"prefix": "device-", "start": 0, "count": 40})
        admin.add_members("keyboard-us", [f"device-{i}" for i in range(40, DEVICES)] + ["alice"])

        sub = {"mechanism": "subsampled_shuffle", "n": 100_000, "k": 1000, "epsilon0": 1.0, "count": 50}
        for r in range(4):
            pipe.charge(sub, cohort="keyboard-eu", idempotency_key=f"seed-eu-{r}")
        for r in range(2):
            pipe.charge(sub, cohort="keyboard-us", idempotency_key=f"seed-us-{r}")

        plan = {  # user → noise multipliers of its successive Gaussian charges
            "alice": [6.0, 4.0, 3.0, 5.0, 2.5],
            "bob": [3.0, 2.5, 2.5, 2.0],
            "carol": [5.0, 5.0],
            "dave": [4.0],
            "frank": [3.0, 3.0, 3.0],
            "grace": [8.0],
            "heidi": [2.5, 2.5],
        }
        admitted, refused = 0, []
        for step in range(max(len(v) for v in plan.values())):
            for uid, sigmas in plan.items():
                if step >= len(sigmas):
                    continue
                ev = {"mechanism": "gaussian", "noise_multiplier": sigmas[step], "count": 1}
                try:
                    pipe.charge(ev, [uid], idempotency_key=f"seed-{uid}-{step}")
                    admitted += 1
                except BudgetExceeded as exc:
                    refused.append((uid, exc))
        return {
            "people": sorted(PEOPLE),
            "devices": DEVICES,
            "users": len(PEOPLE) + DEVICES,
            "cohorts": ["keyboard-eu", "keyboard-us"],
            "explicit_admitted": admitted,
            "refused": [u for u, _ in refused],
        }
