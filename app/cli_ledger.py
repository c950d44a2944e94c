"""The ledger commands of ``privacy-accountant``, under their former module name: see
:mod:`app.cli.ledger`."""

from app.cli.ledger import CONNECTION_HELP, DEFAULT_URL, EXIT_REFUSED, LedgerCliError, add_ledger_commands

__all__ = ["CONNECTION_HELP", "DEFAULT_URL", "EXIT_REFUSED", "LedgerCliError", "add_ledger_commands"]
