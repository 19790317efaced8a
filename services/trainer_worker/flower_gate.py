"""`python -m services.trainer_worker.flower_gate [FLOWER OPTIONS]`: Flower over this deployment's
Celery app, with its basic auth required on every route.

Flower (2.2) asks for the user only in the handlers that want one: its Prometheus `/metrics`
(task names, worker names, counts), `/healthcheck`, its login and static files answer anyone who
reaches the port (issue 26). Here Flower's own command runs unchanged, but on an application whose
router checks the `Authorization` header of every request before any handler is found: without the
credentials of FLOWER_BASIC_AUTH (or `--basic_auth`), every path answers 401 with
`WWW-Authenticate: Basic`. Started without basic auth at all, it refuses to start and says why.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import sys

import tornado.web
from flower import command as flower_command
from flower.app import Flower

from shared import reasons

CELERY_APP = "services.trainer_worker.celery_entry"


def authorized(header: str, credentials: list[str]) -> bool:
    """Whether an `Authorization` header carries one of `credentials` ("user:password") as HTTP
    basic auth. Every credential is compared, in constant time each."""
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        return False
    try:
        given = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    matched = False
    for credential in credentials:
        matched |= hmac.compare_digest(credential.encode(), given)
    return matched


class AuthRequired(tornado.web.RequestHandler):
    """The answer to every request without the credentials, whatever its method and path."""

    def check_xsrf_cookie(self) -> None:
        pass  # run before prepare for a POST (Flower turns xsrf_cookies on): the answer is 401 anyway

    def prepare(self) -> None:
        self.set_status(401)
        self.set_header("WWW-Authenticate", 'Basic realm="flower"')
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(reasons.FLOWER_AUTH_REQUIRED)


class GatedFlower(Flower):
    """Flower whose router lets a request reach a handler only with the basic auth credentials."""

    def __init__(self, options=None, **kwargs):
        if options is None or not options.basic_auth:
            raise SystemExit(reasons.FLOWER_NEEDS_BASIC_AUTH)
        super().__init__(options=options, **kwargs)

    def find_handler(self, request, **kwargs):
        if not authorized(request.headers.get("Authorization", ""), list(self.options.basic_auth)):
            return self.get_handler_delegate(request, AuthRequired)
        return super().find_handler(request, **kwargs)


def main(argv: list[str] | None = None) -> None:
    from celery.bin.celery import celery
    from celery.bin.celery import main as celery_main

    # Flower's command builds its application from the name `Flower` in its module: the gated one
    flower_command.Flower = GatedFlower
    celery.add_command(flower_command.flower)
    sys.argv = ["celery", "-A", CELERY_APP, "flower", *(sys.argv[1:] if argv is None else argv)]
    sys.exit(celery_main())


if __name__ == "__main__":
    main()
