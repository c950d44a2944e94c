"""What a command of ``privacy-accountant`` raises for a bad command line, and its exit status."""

from __future__ import annotations

EXIT_USAGE = 2


class CliError(Exception):
    pass
