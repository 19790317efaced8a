"""Each resource kind's lifecycle: the one place its status (or phase) is written (see the modules)."""
