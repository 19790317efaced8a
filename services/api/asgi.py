"""The API as one ASGI application: `create_asgi_app(config=None)`.

Two handlers behind one address:
- `POST /v1/chat/completions`, `POST /v1/completions`: the proxy to endpoints (proxy.Gateway),
  asyncio all the way, because these are the requests whose added latency users feel;
- everything else: the Flask app (app.create_app), run in a pool of threads through a2wsgi, as
  a WSGI server would run it.

uvicorn serves it (main.py). Both halves share one Context (config, Redis, store).

A body sent without Content-Length (chunked) reaches the Flask half whole and bounded
(services/api/bodies.py).
"""

from __future__ import annotations

from a2wsgi import WSGIMiddleware

from services.api.app import create_app
from services.api.bodies import input_terminated
from services.api.proxy import PROXIED_PATHS, Gateway, method_not_allowed
from shared.config.deployment import DeploymentConfig, load_config

FLASK_THREADS = 16  # requests the Flask app handles at once (as gunicorn's threads did before)


def create_asgi_app(config: DeploymentConfig | None = None):
    config = config or load_config()
    flask_app = create_app(config)
    rest = WSGIMiddleware(input_terminated(flask_app), workers=FLASK_THREADS)
    gateway = Gateway(flask_app.extensions["trainer"])

    async def app(scope: dict, receive, send) -> None:
        if scope["type"] == "http":
            if scope["path"] not in PROXIED_PATHS:
                await rest(scope, receive, send)
            elif scope["method"] == "POST":
                await gateway(scope, receive, send)
            else:
                await method_not_allowed(scope, send)
        elif scope["type"] == "lifespan":
            await _lifespan(receive, send, gateway)

    app.flask_app = flask_app  # for tests and tools that want the WSGI half
    app.gateway = gateway
    return app


async def _lifespan(receive, send, gateway: Gateway) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await gateway.close()
            await send({"type": "lifespan.shutdown.complete"})
            return
