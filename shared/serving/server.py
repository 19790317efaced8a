"""The built-in serving process: a transformers model behind an OpenAI-compatible HTTP server.

    python -m shared.serving.server --host 127.0.0.1 --port 8001 --load-spec spec.json \
        [--endpoint-id ep-...]

It stands where vLLM cannot run (CPU nodes, development, CI) and answers like vLLM's server
(see `openai_app.py`). Lifecycle, which the endpoint manager relies on:

    start -> load the model (port closed: "connection refused" means still loading)
          -> bind the port and serve (GET /health answers 200)
          -> SIGTERM or SIGINT: stop serving and exit 0 (also while still loading)

It exits 1 when the load spec cannot be read or the model cannot be loaded or the port is taken,
after logging why. Logs are JSON lines on stderr (shared.process.logs), bound to the endpoint id.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
import warnings

from shared.errors import TrainerError
from shared.process import logs
from shared.process.private_files import use_private_umask

SERVICE = "endpoint-server"
API_KEY_ENV = "TRAINING_SERVING_API_KEY"  # the bearer token requests must carry (shared/serving/backends.py)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m shared.serving.server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, required=True, help="port to listen on")
    parser.add_argument("--load-spec", required=True, help="path of the load spec JSON (shared.models.load_spec.LoadSpec)")
    parser.add_argument("--endpoint-id", default=os.environ.get("TRAINING_ENDPOINT_ID"),
                        help="the endpoint this process serves, bound to every log line")
    parser.add_argument("--log-level", default=os.environ.get("TRAINING_LOG_LEVEL", "INFO"))
    return parser.parse_args(argv)


class _Stop:
    """SIGTERM/SIGINT: while loading, leave at once (exit 0); while serving, let main shut down cleanly."""

    def __init__(self):
        self.event = threading.Event()
        self.serving = False
        self.signal: str | None = None

    def __call__(self, signum, frame):
        self.signal = signal.Signals(signum).name
        if not self.serving:
            raise SystemExit(0)
        self.event.set()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    use_private_umask()  # whatever it (or the model's code) writes is this user's only
    log = logs.configure(SERVICE, args.log_level)
    if args.endpoint_id:
        log = log.bind(endpoint=args.endpoint_id)
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # our own JSON line per request instead
    # stderr is a JSON log: library deprecation notices would be the only lines that are not.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    from transformers.utils import logging as hf_logging

    from shared.models.load_spec import LoadSpec, load_model
    from shared.serving.generation import Generator
    from shared.serving.openai_app import create_app

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        spec = LoadSpec.read(args.load_spec)
        log = log.bind(model=spec.model, served_model_name=spec.served_model_name)
        log.info("loading model", model_dir=spec.model_dir, dtype=spec.dtype, device=spec.device,
                 adapters=sorted(spec.adapters), batch_invariant=spec.batch_invariant)
        started = time.monotonic()
        model, tokenizer = load_model(spec)
    except TrainerError as exc:
        log.error("cannot load the model", reason=exc.message)
        return 1
    except Exception as exc:
        log.exception("cannot load the model", reason=f"{type(exc).__name__}: {exc}")
        return 1
    log.info("model loaded", load_s=round(time.monotonic() - started, 2))

    from werkzeug.serving import make_server

    generator = Generator(model, tokenizer, spec)
    # The secret comes in the environment, never on the command line (which every local user can read).
    app = create_app(generator, log, api_key=os.environ.get(API_KEY_ENV) or None)
    try:
        server = make_server(args.host, args.port, app, threaded=True)
    except OSError as exc:
        log.error("cannot listen", host=args.host, port=args.port, reason=str(exc))
        return 1
    stop.serving = True
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    import torch

    log.info("serving", host=args.host, port=server.server_port, threads=torch.get_num_threads())
    while not stop.event.wait(0.5):
        pass
    log.info("stopping", signal=stop.signal)
    server.shutdown()
    if not generator.shutdown(timeout_s=10.0):
        log.warning("a generation did not stop in time; exiting anyway")
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without interpreter finalization: request threads (daemons) may still be writing their
    # log line to stderr, and a daemon thread that holds stderr's lock while the interpreter
    # finalizes makes CPython abort (SIGABRT) instead of exiting with the code main returned.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
