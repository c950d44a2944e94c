"""The baseline of ``bench/bench_service.py``: a bare FastAPI app under the same uvicorn settings as
``serve``, answering the benchmark's requests with fixed bytes of the same size as the service's
cached answers (it reads the request body, and does nothing else).

    python bench/_bare_app.py PORT ANSWER_FILE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_app(answers: dict[str, bytes]) -> FastAPI:
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict:
        return {
            "status": "ok",
            "version": "0.0.0",
            "calibration": True,
            "default_orders": 81,
            "grid_version": 1,
        }

    for path, body in answers.items():

        async def answer(request: Request, _body: bytes = body) -> Response:
            await request.body()
            return Response(content=_body, media_type="application/json")

        app.add_api_route(path, answer, methods=["POST"])
    return app


def main() -> None:
    from app.cli import uvicorn_options
    from app.core.config import Settings

    port = int(sys.argv[1])
    answers = {k: v.encode() for k, v in json.loads(Path(sys.argv[2]).read_text()).items()}
    options = uvicorn_options(Settings(), "WARNING")
    uvicorn.run(make_app(answers), host="127.0.0.1", port=port, **options)


if __name__ == "__main__":
    main()
