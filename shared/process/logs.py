"""structlog set up the same way in every service: JSON lines on stderr, with the service name
and whatever resource id the caller binds (`log.bind(run=run_id)`)."""

from __future__ import annotations

import logging
import signal
import sys
import threading

import structlog


def configure(service: str, level: str = "INFO") -> structlog.stdlib.BoundLogger:
    logging.basicConfig(stream=sys.stderr, level=level, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
    return structlog.get_logger().bind(service=service)


def get(service: str) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger().bind(service=service)


def stop_on_signals(log) -> threading.Event:
    """An event set by SIGTERM or SIGINT, for a service loop to end cleanly between passes."""
    stop = threading.Event()

    def on_signal(signum: int, _frame) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop
