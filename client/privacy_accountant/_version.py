"""The SDK's version: that of the installed ``privacy-accountant-client`` distribution."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("privacy-accountant-client")
except PackageNotFoundError:  # pragma: no cover - running from a source tree that is not installed
    __version__ = "0.0.0"
