"""The API's Flask application: `create_app(config=None)`."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import redis
from flask import Flask, Response, g, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.routing import RequestRedirect

from services.api.auth import authenticate
from services.api.bodies import ApiRequest
from services.api.context import Context
from services.api.openapi import build_spec, docs_page
from services.api.views import (
    base_models,
    comparisons,
    dashboard,
    datasets,
    endpoints,
    evaluations,
    info,
    pools,
    runs,
    snapshots,
)
from shared import logs, reasons
from shared.config import DeploymentConfig, load_config
from shared.disk_full import disk_full
from shared.errors import DiskFull, Internal, StoreUnavailable, TooLarge, TrainerError

OPEN_PATHS = {"/v1/health", "/v1/openapi.json", "/docs", "/"}  # "/": a redirect to the dashboard


def create_app(config: DeploymentConfig | None = None) -> Flask:
    config = config or load_config()
    app = Flask(__name__)
    app.request_class = ApiRequest  # a chunked body bounded as it streams (services/api/bodies.py)
    app.config["MAX_CONTENT_LENGTH"] = config.max_upload_bytes
    app.json.sort_keys = False
    # werkzeug answers `/v1//runs` (merge_slashes) and a rule's defaults (redirect_defaults) with a
    # 308 whose Location it builds from the request's Host header, which the sender chooses: such a
    # path is an unknown route here (404 in the error shape). The one redirect left, `/x` to a rule
    # `/x/` (strict_slashes; no rule of the API has only the slashed form), is made relative below.
    app.url_map.merge_slashes = False
    app.url_map.redirect_defaults = False
    app.extensions["trainer"] = Context.build(config)
    log = logs.get("api")

    for blueprint in (info.bp, base_models.bp, datasets.bp, runs.bp, snapshots.bp, endpoints.bp, pools.bp,
                      evaluations.bp, comparisons.bp, dashboard.bp):
        app.register_blueprint(blueprint)

    @app.before_request
    def _relative_redirect():
        # werkzeug's routing redirect names the request's Host header in its Location and body; no
        # answer repeats a Host the sender chose (issue 26), so the redirect keeps the path only
        moved = request.routing_exception
        if isinstance(moved, RequestRedirect) and urlsplit(moved.new_url).netloc:
            parts = urlsplit(moved.new_url)
            request.routing_exception = RequestRedirect(urlunsplit(("", "", parts.path, parts.query, "")))

    @app.before_request
    def _authenticate():
        # the dashboard's files need no token; its pages send the user's with every API call
        if request.path not in OPEN_PATHS and not dashboard.is_dashboard_path(request.path):
            g.principal = authenticate(config)

    @app.after_request
    def _log_request(response):
        ids = {k: v for k, v in (request.view_args or {}).items() if k.endswith("_id")}
        if request.path != "/v1/health":
            log.info("request", method=request.method, path=request.path, status=response.status_code,
                     principal=getattr(g.get("principal"), "name", None), **ids)
        return response

    @app.get("/v1/openapi.json")
    def openapi():
        return build_spec()

    @app.get("/docs")
    def docs():
        return Response(docs_page(build_spec()), mimetype="text/html")

    @app.errorhandler(TrainerError)
    def _trainer_error(exc: TrainerError):
        return exc.to_dict(), exc.status, exc.headers()

    @app.errorhandler(redis.ConnectionError)
    @app.errorhandler(redis.TimeoutError)
    def _store_unreachable(exc: redis.RedisError):
        # Redis is down or restarting, and the client's retries (shared/store.py) ran out: a 503
        # the client may send again, not a 500 (docs/faults.md).
        log.warning("store unreachable", path=request.path, error=f"{type(exc).__name__}: {exc}")
        err = StoreUnavailable()
        return err.to_dict(), err.status, err.headers()

    @app.errorhandler(RequestEntityTooLarge)
    def _too_large(exc):
        limit = request.max_content_length or config.max_upload_bytes  # a route may raise it (snapshot import)
        err = TooLarge(reasons.request_too_large(limit), details={"maxBytes": limit})
        return err.to_dict(), err.status

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.code, "bad_request")
        message = reasons.route_unknown(request.method, request.path) if exc.code in (404, 405) else exc.description
        allowed = getattr(exc, "valid_methods", None)  # a 405 says which methods the route takes (RFC 9110)
        headers = {"Allow": ", ".join(allowed)} if exc.code == 405 and allowed else {}
        return {"error": {"code": code, "message": message, "details": {}}}, exc.code, headers

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        if disk_full(exc):
            # A write met a full disk (a dataset, an imported snapshot, an upload spooled by the
            # form parser): the writer removed what it had half-written; a 507 saying so, not a 500.
            log.warning("disk full", path=request.path, error=f"{type(exc).__name__}: {exc}")
            err = DiskFull()
            return err.to_dict(), err.status
        log.exception("unhandled error", path=request.path)
        return Internal(reasons.INTERNAL_ERROR).to_dict(), Internal.status

    return app
