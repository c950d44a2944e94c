"""Pydantic models of the HTTP API (api.md)."""
