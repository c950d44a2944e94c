# syntax=docker/dockerfile:1
# privacy-accountant service image: python slim, non-root, PostgreSQL driver included.
#   docker build -t privacy-accountant .
#   docker run -p 127.0.0.1:8000:8000 -e ACCOUNTANT_API_KEYS=... privacy-accountant
# (SQLite at /data/accountant.db by default; set DATABASE_URL=postgresql+psycopg://... for PostgreSQL,
#  see compose.yaml.)

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY accountant ./accountant
COPY mechanisms ./mechanisms
COPY app ./app
COPY privacy_accountant ./privacy_accountant
COPY migrations ./migrations
# wheels of the project and every dependency (with the postgres extra), built once
RUN pip wheel --wheel-dir /wheels ".[postgres]"

FROM python:${PYTHON_VERSION}-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DATABASE_URL=sqlite:////data/accountant.db \
    ACCOUNTANT_LOG_LEVEL=INFO
RUN groupadd --system --gid 10001 accountant \
 && useradd --system --uid 10001 --gid accountant --home-dir /data --shell /usr/sbin/nologin accountant \
 && mkdir -p /data && chown accountant:accountant /data
COPY --from=build /wheels /wheels
RUN pip install --no-index --find-links /wheels "privacy-accountant[postgres]" && rm -rf /wheels
USER accountant:accountant
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status == 200 else 1)"]
# `serve` migrates the database to head, then starts uvicorn (JSON logs on stderr)
CMD ["privacy-accountant", "serve", "--host", "0.0.0.0", "--port", "8000"]
