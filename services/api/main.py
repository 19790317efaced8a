"""Entry point: `python -m services.api.main [--host H] [--port P] [--workers N]` serves the API
(services/api/asgi.py) with uvicorn: its event loop (uvloop) and HTTP parser (httptools) are C, so
a request costs the API far less CPU than under a pure-Python WSGI server, which matters most for
the requests proxied to endpoints (docs/endpoints-benchmark.md)."""

from __future__ import annotations

import argparse

import uvicorn

from shared import reasons
from shared.config.deployment import MIN_TOKEN_LENGTH, load_config, weak_tokens
from shared.errors import TrainerError
from shared.process import logs
from shared.process.private_files import use_private_umask

GRACEFUL_SHUTDOWN_S = 30  # on SIGTERM, requests in flight (a streamed answer) get this long to end


def served_app():
    """The factory each uvicorn worker process calls (logging is set up per process)."""
    from services.api.asgi import create_asgi_app

    logs.configure("api")
    config = load_config()
    refuse_weak_tokens(config)
    return create_asgi_app(config)


def refuse_weak_tokens(config) -> None:
    """An API guarded by a guessable token is not guarded: refuse to serve (exit 2) and say why."""
    weak = weak_tokens(config)
    if weak:
        message = reasons.weak_tokens_refused(weak, MIN_TOKEN_LENGTH)
        logs.get("api").error("cannot start", error=message)
        raise SystemExit(message)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the trainer's REST API")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8600)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    use_private_umask()  # datasets, imports, logs: this user's only (shared/process/private_files.py)
    logs.configure("api")
    try:
        refuse_weak_tokens(load_config())  # before uvicorn starts: a clear exit, not a worker that dies
    except TrainerError as exc:
        logs.get("api").error("cannot start", error=exc.message)
        raise SystemExit(exc.message) from None
    uvicorn.run("services.api.main:served_app", factory=True, host=args.host, port=args.port,
                workers=args.workers, loop="uvloop", http="httptools", lifespan="on",
                log_config=None, log_level="warning", access_log=False,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)


if __name__ == "__main__":
    main()
