# syntax=docker/dockerfile:1
# privacy-accountant service image: python slim, non-root, PostgreSQL driver and the compiled clone
# kernels included, dependencies at the versions of constraints.txt.
#   docker build -t privacy-accountant .
#   docker run -p 127.0.0.1:8000:8000 -e ACCOUNTANT_API_KEYS=... privacy-accountant
# (SQLite at /data/accountant.db by default; set DATABASE_URL=postgresql+psycopg://... for PostgreSQL,
#  see compose.yaml.)

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY client ./client
COPY accountant ./accountant
COPY mechanisms ./mechanisms
COPY app ./app
COPY migrations ./migrations
# wheels of both distributions (the service and the SDK it depends on, client/) and of every
# dependency, with the postgres extra and the fast extra (numba: the compiled clone kernels), at
# the versions of constraints.txt (the ones the tests pass with, for the default Python 3.11)
RUN pip wheel --wheel-dir /wheels -c constraints.txt ./client ".[postgres,fast]"

FROM python:${PYTHON_VERSION}-slim
# ACCOUNTANT_NUMBA=1: the compiled kernels of the clone engine (the same bounds, new clone curves
# about 2x faster); NUMBA_CACHE_DIR: where numba keeps the compiled code, filled below at build time
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DATABASE_URL=sqlite:////data/accountant.db \
    ACCOUNTANT_LOG_LEVEL=INFO \
    ACCOUNTANT_NUMBA=1 \
    NUMBA_CACHE_DIR=/opt/numba-cache
RUN groupadd --system --gid 10001 accountant \
 && useradd --system --uid 10001 --gid accountant --home-dir /data --shell /usr/sbin/nologin accountant \
 && mkdir -p /data && chown accountant:accountant /data
COPY --from=build /wheels /wheels
RUN pip install --no-index --find-links /wheels "privacy-accountant[postgres,fast]" && rm -rf /wheels
# compile every clone kernel now, into NUMBA_CACHE_DIR, so that no request waits for a compilation
# (seconds): the service loads them from there. numba's code is for the building machine's CPU; on
# another CPU model a process compiles once more and stores that too (the directory is the
# service user's).
RUN python -c "from accountant import clones; print('compiled:', ', '.join(clones.precompile()))" \
 && chown -R accountant:accountant /opt/numba-cache
USER accountant:accountant
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status == 200 else 1)"]
# `serve` migrates the database to head, then starts uvicorn (JSON logs on stderr)
CMD ["privacy-accountant", "serve", "--host", "0.0.0.0", "--port", "8000"]
