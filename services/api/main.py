"""Entry point: `python -m services.api.main [--host H] [--port P]` serves the API with gunicorn
(threads, one process per --workers)."""

from __future__ import annotations

import argparse

from gunicorn.app.base import BaseApplication

from shared import logs


class _Server(BaseApplication):
    def __init__(self, options: dict):
        self.options = options
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        from services.api.app import create_app

        return create_app()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the trainer's REST API")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8600)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args(argv)
    logs.configure("api")
    _Server({
        "bind": f"{args.host}:{args.port}",
        "workers": args.workers,
        "threads": args.threads,
        "worker_class": "gthread",
        "timeout": 120,
        "accesslog": None,
        "loglevel": "warning",
    }).run()


if __name__ == "__main__":
    main()
