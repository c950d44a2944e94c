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
from fastapi import APIRouter, FastAPI
from fastapi import Path as PathParam
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import Route

from app.api.deps import DbDep, ReaderDep
from app.api.routes.ledger import AUTH_ERRORS
from app.ledger import reads
from app.ledger.records import UserCurve as UserCurveRecord
from app.schemas import ledger as sch
from app.schemas import ledger_views as views
from app.schemas.ledger_reads import UserCurve

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
def _json_list(a: np.ndarray) -> list[float | None]:
    return [float(x) if math.isfinite(x) else None for x in a]


def _curve_view(c: UserCurveRecord) -> UserCurve:
    b = c.budget
    return UserCurve(
        user_id=c.user_id,
        policy=b.policy,
        budget=views.Budget.of(b),
        filter=views.FilterInfo.of(b) if b.policy == "filter" else None,
        grid_version=c.grid_version,
        orders=[float(o) for o in c.orders],
        spent=_json_list(c.spent),
        budget_curve=_json_list(c.budget_curve),
        epsilon=_json_list(c.epsilon),
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
def get_user_curve(user_id: UserPath, db: DbDep, _actor: ReaderDep) -> UserCurve:
    return _curve_view(reads.user_curve(db, user_id))


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
