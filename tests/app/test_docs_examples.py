"""The user documentation's examples, executed against a real server so they cannot drift.

For each page in ``DOCS`` a fresh ``serve`` (its own SQLite file; API keys ``admin-secret``,
``pipeline-secret``, ``viewer-secret``, the ones the pages use) runs every example in order:

* a fenced ``bash`` block runs in ``bash -euo pipefail`` (``localhost:8000`` pointing at the test
  server, curl printing the HTTP status after the body through a ``.curlrc``); blocks that start a
  server or install packages are shown, not run;
* a fenced ``python`` block runs as a script in a fresh interpreter (same substitution);
* the block right after it, if it is ``json`` (optionally ``json <status>``) or ``text``, is the
  expected output: for JSON, every key shown must be in the answer with an equal value (a number to
  the digits shown, the string ``"…"`` matches anything; keys not shown are not checked); for
  text, each line must match, ``…`` standing for any characters.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from tests.helpers.server import start_server

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["docs/api.md", "docs/ledger.md", "docs/sdk.md", "README.md", "client/README.md"]
KEYS = "admin-secret:admin,pipeline-secret:pipeline,viewer-secret:viewer"
SHOWN_ONLY = re.compile(
    r"privacy-accountant serve|pip install|^\s*python -m pytest|docker|\.ci/run|examples/", re.M
)

pytestmark = pytest.mark.slow


@dataclass
class Block:
    lang: str
    info: str
    code: str
    line: int


def blocks(text: str) -> list[Block]:
    out = []
    for m in re.finditer(r"^```([^\n]*)\n(.*?)^```\s*$", text, re.M | re.S):
        info = m.group(1).strip()
        out.append(
            Block(info.split()[0] if info else "", info, m.group(2), text[: m.start()].count("\n") + 1)
        )
    return out


def examples(path: str) -> list[tuple[Block, Block | None]]:
    bs = blocks((ROOT / path).read_text())
    out = []
    for i, b in enumerate(bs):
        if b.lang not in ("bash", "python") or (b.lang == "bash" and SHOWN_ONLY.search(b.code)):
            continue
        if b.lang == "python" and "localhost:8000" not in b.code:
            continue  # library examples without a server (the README's own) are run elsewhere
        nxt = bs[i + 1] if i + 1 < len(bs) and bs[i + 1].lang in ("json", "text") else None
        out.append((b, nxt))
    return out


class Num(float):
    """A number as written in the docs: equal to answers that round to it."""

    def __new__(cls, text: str):
        obj = super().__new__(cls, float(text))
        obj.text = text
        return obj

    def matches(self, x) -> bool:
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            return False
        if float(self) == x:
            return True
        exp = Decimal(self.text.lower()).as_tuple().exponent
        return math.isclose(x, float(self), abs_tol=0.5 * 10.0**exp * 1.000001)


def _doc_json(text: str):
    return json.loads(text, parse_float=Num, parse_int=Num)


def match(shown, actual, where: str = "") -> list[str]:
    """Mismatches of the documented value ``shown`` against the answer ``actual``."""
    if shown == "…":
        return []
    if isinstance(shown, Num):
        return [] if shown.matches(actual) else [f"{where or '.'}: docs say {shown.text}, got {actual!r}"]
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return [f"{where}: docs show an object, got {actual!r}"]
        errs = []
        for k, v in shown.items():
            if k not in actual:
                errs.append(f"{where}.{k}: in the docs, not in the answer")
            else:
                errs += match(v, actual[k], f"{where}.{k}")
        return errs
    if isinstance(shown, list):
        if shown and shown[-1] == "…":
            if not isinstance(actual, list) or len(actual) < len(shown) - 1:
                return [f"{where}: docs show at least {len(shown) - 1} items, got {actual!r}"]
            return [e for i, v in enumerate(shown[:-1]) for e in match(v, actual[i], f"{where}[{i}]")]
        if not isinstance(actual, list) or len(actual) != len(shown):
            return [f"{where}: docs show {len(shown)} items, got {actual!r}"]
        return [e for i, v in enumerate(shown) for e in match(v, actual[i], f"{where}[{i}]")]
    return [] if shown == actual else [f"{where or '.'}: docs say {shown!r}, got {actual!r}"]


def _text_lines_match(shown: str, out: str) -> list[str]:
    got = [ln.rstrip() for ln in out.strip("\n").splitlines()]
    want = [ln.rstrip() for ln in shown.strip("\n").splitlines()]
    if len(got) != len(want):
        return [f"docs show {len(want)} lines, got {len(got)}:\n{out}"]
    errs = []
    for w, g in zip(want, got):
        pattern = "^" + ".*".join(re.escape(part) for part in w.split("…")) + "$"
        if not re.match(pattern, g):
            errs.append(f"docs: {w!r}\n got: {g!r}")
    return errs


@pytest.fixture(scope="module")
def curlrc(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("curl")
    (d / ".curlrc").write_text('write-out = "\\n%{http_code}\\n"\n')
    return d


@pytest.mark.parametrize("path", DOCS)
def test_examples_run_as_documented(path, tmp_path, curlrc):
    todo = examples(path)
    if path != "README.md":
        assert todo, f"{path} has no runnable example"
    if not todo:
        return
    env_srv = {"DATABASE_URL": f"sqlite:///{tmp_path}/docs.db", "ACCOUNTANT_API_KEYS": KEYS}
    with start_server(env_srv) as srv:
        base = srv.url.replace("http://", "")
        env = {
            **os.environ,
            "CURL_HOME": str(curlrc),
            "ACCOUNTANT_URL": srv.url,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "client")]),
        }
        env.pop("ACCOUNTANT_API_KEY", None)
        for code, expected in todo:
            src = code.code.replace("http://localhost:8000", srv.url).replace("localhost:8000", base)
            cmd = (
                ["bash", "-euo", "pipefail", "-c", src]
                if code.lang == "bash"
                else [sys.executable, "-c", src]
            )
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
            where = f"{path}:{code.line}"
            out = r.stdout
            status = None
            if code.lang == "bash" and "curl" in src:
                out, _, status = out.rstrip("\n").rpartition("\n")
            if expected is None:
                assert r.returncode == 0, f"{where} failed:\n{r.stdout}\n{r.stderr}"
                continue
            want_status = expected.info.split()[1] if len(expected.info.split()) > 1 else None
            if want_status and not want_status.isdigit():
                want_code = int(want_status.split("=")[1])
                assert r.returncode == want_code, (
                    f"{where}: exit {r.returncode}, docs say {want_code}\n{r.stderr}"
                )
                out = out + r.stderr
            else:
                assert r.returncode == 0, f"{where} failed:\n{r.stdout}\n{r.stderr}"
            if want_status and want_status.isdigit():
                assert status == want_status, f"{where}: HTTP {status}, docs say {want_status}\n{out}"
            elif status is not None:
                assert status.startswith("2"), f"{where}: HTTP {status}\n{out}"
            if expected.lang == "json":
                try:
                    actual = json.loads(out)
                except json.JSONDecodeError:
                    pytest.fail(f"{where}: the answer is not JSON:\n{out}\n{r.stderr}")
                errs = match(_doc_json(expected.code), actual)
                assert not errs, f"{where}:\n" + "\n".join(errs) + f"\n\nanswer: {json.dumps(actual)}"
            else:
                errs = _text_lines_match(expected.code, out)
                assert not errs, f"{where}:\n" + "\n".join(errs)


def test_the_matcher_is_strict():
    assert not match(_doc_json('{"a": 1.08, "b": "…", "c": [1, "…"]}'), {"a": 1.0772, "b": 5, "c": [1, 2, 3]})
    assert match(_doc_json('{"a": 1.08}'), {"a": 1.0851})
    assert match(_doc_json('{"a": 1}'), {"a": 2}) and match(_doc_json('{"a": 1}'), {})
    assert match(_doc_json('{"a": [1, 2]}'), {"a": [1, 2, 3]})
    assert match(_doc_json('{"s": "x"}'), {"s": "y"})
    assert not _text_lines_match("a … b\nc", "a 12:00 b\nc\n")
    assert _text_lines_match("a … b", "a b c")
