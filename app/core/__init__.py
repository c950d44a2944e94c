"""Service plumbing: settings, structured logging, metrics, middleware."""
