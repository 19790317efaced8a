"""One module per resource; each exposes its click group (or command)."""
