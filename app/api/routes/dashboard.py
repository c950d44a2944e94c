"""The budget dashboard (``/dashboard``), the service's own copies of Swagger UI (``/docs``) and
ReDoc (``/redoc``), the static files they load (``/static``), and the one JSON read the dashboard
needs beyond the ledger endpoints: a user's spent RDP curve against its budget, order by order.

Everything the pages load is served from here (``app/static``; the vendored libraries and their
licences are listed in ``app/static/vendor/README.md``), so they work without reaching any other
host. The dashboard is static HTML + JavaScript: it asks for an API key (a viewer key is enough),
keeps it in ``sessionStorage`` (a link ``/dashboard#key=…`` logs in directly; the fragment of a
URL is never sent to the server) and reads the same JSON endpoints as the SDK. Every number it
shows comes from those answers; it recomputes none.

``install(app)`` wires all of it into an application.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import numpy as np
from fastapi import APIRouter, Depends, FastAPI
from fastapi import Path as PathParam
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.routing import Route

from accountant.conversion import _MIN_CONVERSION_ORDER, epsilon_vector
from app.api.deps import get_db, require_reader
from app.api.routes.ledger import AUTH_ERRORS
from app.db.session import Database
from app.ledger import curves as cv
from app.ledger import repository as repo
from app.ledger.errors import NotFound
from app.ledger.grid import stored_grids
from app.schemas import ledger as sch
from app.schemas import ledger_views as views

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
VENDOR = "/static/vendor"

#: the dashboard page may load and call only this origin; no inline script
DASHBOARD_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/v1", tags=["ledger"])


@pages.get("/dashboard")
def dashboard() -> FileResponse:
    return FileResponse(STATIC_DIR / "dashboard" / "index.html", headers=DASHBOARD_HEADERS)


@pages.get("/dashboard/")
def dashboard_slash() -> RedirectResponse:
    return RedirectResponse("/dashboard", status_code=308)


# ------------------------------------------------------------------------------------- RDP curve
class UserCurve(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "user_id": "u1",
                    "policy": "declared",
                    "budget": {"epsilon": 8.0, "delta": 1e-6},
                    "filter": None,
                    "grid_version": 1,
                    "orders": [2.0, 4.0, 8.0],
                    "spent": [0.05, 0.11, 0.24],
                    "budget_curve": [-5.12, 3.54, 6.41],
                    "epsilon": [13.17, 4.57, 1.83],
                    "spent_epsilon": 1.83,
                    "spent_order": 8.0,
                }
            ]
        }
    }
    user_id: str
    policy: str
    budget: views.Budget
    filter: views.FilterInfo | None = None
    grid_version: int
    orders: list[float] = Field(description="the Rényi orders α of the ledger's grid")
    spent: list[float | None] = Field(
        description="the user's spent RDP curve ε(α): the order-wise sum of every charge that reached "
        "the user, as admission uses it (null = unbounded)"
    )
    budget_curve: list[float | None] = Field(
        description="B(α) = ε_B − (log(1/δ_B) + (α−1)·log(1−1/α) − log α)/(α−1): the largest spent ε(α) "
        "whose conversion at α gives ε_B (null where α is too small to convert). Declared policy: the "
        "user can afford what keeps spent ≤ B at some order; filter policy: at α_f only"
    )
    epsilon: list[float | None] = Field(
        description="ε at δ_B when the spent curve is converted at each order (the conversion of "
        "bounds.md §4, before the minimum; null = unbounded or unusable)"
    )
    spent_epsilon: float = Field(description="as in GET /v1/users/{user_id}: the ε the policy reports")
    spent_order: float | None


def _json_list(a: np.ndarray) -> list[float | None]:
    return [float(x) if math.isfinite(x) else None for x in a]


def user_curve(db: Database, user_id: str) -> UserCurve:
    """The user's running spent curve (the one admission reads) with its budget curve."""
    with db.read() as s:
        row = repo.user_row(s, user_id)
        if row is None:
            raise NotFound(f"unknown user {user_id!r}; create it with PUT /v1/users/{{user_id}}")
        c = repo.class_by_id(s, row.class_id)
        orders = cv.ORDERS if c.grid_version == cv.GRID_VERSION else stored_grids(s)[c.grid_version]
    b = c.budget
    # B(α) = ε_B − conversion term: epsilon_vector(α) ≤ ε_B ⇔ spent(α) ≤ B(α) (orders that convert)
    budget_curve = np.array(
        [
            b.epsilon - cv.conversion_term(o, b.delta) if o > _MIN_CONVERSION_ORDER else math.nan
            for o in orders
        ]
    )
    # the RDP part of the stored vector (side slots — additive δ, (ε, δ) releases — follow it; the
    # policy's own ε, spent_epsilon, accounts for them)
    spent = cv.rdp_part(c.spent)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eps = epsilon_vector(orders, spent, b.delta)
    return UserCurve(
        user_id=user_id,
        policy=b.policy,
        budget=views.Budget.of(b),
        filter=views.FilterInfo.of(b) if b.policy == "filter" else None,
        grid_version=c.grid_version,
        orders=[float(o) for o in orders],
        spent=_json_list(spent),
        budget_curve=_json_list(budget_curve),
        epsilon=_json_list(np.maximum(eps, 0.0)),
        spent_epsilon=c.spent_epsilon,
        spent_order=c.spent_order,
    )


UserPath = Annotated[
    str, PathParam(min_length=1, max_length=256, pattern=sch.ID_PATTERN, description="user (data subject) id")
]


@api.get(
    "/users/{user_id}/curve",
    response_model=UserCurve,
    summary="Dashboard: a user's spent RDP curve against its budget, order by order (any role)",
    description="The running spent curve ε(α) on the ledger's order grid, the budget curve B(α) (the largest "
    "ε(α) that converts to ε_B at δ_B), and the ε each order would give. `null` = unbounded.",
    responses={404: {"model": views.ErrorBody, "description": "unknown user"}, **AUTH_ERRORS},
)
def get_user_curve(user_id: UserPath, db: Database = Depends(get_db), _actor=Depends(require_reader)):
    return user_curve(db, user_id)


# ------------------------------------------------------------------------------------ API docs
def _replace_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/redoc`` with the vendored Swagger UI and ReDoc instead of a CDN's."""
    docs_url, redoc_url, openapi_url = app.docs_url, app.redoc_url, app.openapi_url
    if openapi_url is None:
        return
    replaced = {u for u in (docs_url, redoc_url) if u}
    app.router.routes[:] = [r for r in app.router.routes if not (isinstance(r, Route) and r.path in replaced)]
    title = app.title
    if docs_url:

        async def swagger() -> HTMLResponse:
            return get_swagger_ui_html(
                openapi_url=openapi_url,
                title=f"{title} — API",
                swagger_js_url=f"{VENDOR}/swagger-ui/swagger-ui-bundle.js",
                swagger_css_url=f"{VENDOR}/swagger-ui/swagger-ui.css",
                swagger_favicon_url=f"{VENDOR}/swagger-ui/favicon-32x32.png",
                oauth2_redirect_url=app.swagger_ui_oauth2_redirect_url,
                swagger_ui_parameters={**(app.swagger_ui_parameters or {}), "validatorUrl": None},
            )

        app.add_api_route(docs_url, swagger, include_in_schema=False, methods=["GET"])
    if redoc_url:

        async def redoc() -> HTMLResponse:
            return get_redoc_html(
                openapi_url=openapi_url,
                title=f"{title} — API reference",
                redoc_js_url=f"{VENDOR}/redoc/redoc.standalone.js",
                redoc_favicon_url=f"{VENDOR}/swagger-ui/favicon-32x32.png",
                with_google_fonts=False,
            )

        app.add_api_route(redoc_url, redoc, include_in_schema=False, methods=["GET"])


def install(app: FastAPI) -> None:
    """The dashboard, its JSON read, the static files and the offline API docs."""
    app.include_router(pages)
    app.include_router(api)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _replace_docs(app)
