"""The per-user budget ledger (ledger.md): admission arithmetic and database operations."""
