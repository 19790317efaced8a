"""One error hierarchy. Each error carries its HTTP status, a stable code, a sentence and details;
the API renders every one of them as {"error": {"code", "message", "details"}}. Beside it, the one
failure of work on a worker, `WorkFailed`, whose sentence a failed run or evaluation shows."""

from __future__ import annotations

from typing import Any

from shared import reasons


class TrainerError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, details: Any = None):
        super().__init__(message)
        self.message = message
        self.details = details if details is not None else {}

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}

    def headers(self) -> dict[str, str]:
        """HTTP headers the answer carries besides its body (none but for a 503)."""
        return {}


class ValidationFailed(TrainerError):
    status = 400
    code = "invalid"


class Unauthenticated(TrainerError):
    status = 401
    code = "unauthenticated"


class Forbidden(TrainerError):
    status = 403
    code = "forbidden"


class NotFound(TrainerError):
    status = 404
    code = "not_found"


class MethodNotAllowed(TrainerError):
    status = 405
    code = "method_not_allowed"


class Conflict(TrainerError):
    status = 409
    code = "conflict"


class TooLarge(TrainerError):
    status = 413
    code = "too_large"


class TooManyQueued(TrainerError):
    """A submission past the deployment's cap on the claims one workload may have queued
    (scheduling.maxQueuedPerWorkload). 429 rather than 409: nothing about the resource asked for
    conflicts with anything; the workload has asked for too much at once, and the same request
    succeeds once some of its queued work has started or been cancelled, as after a rate limit."""

    status = 429
    code = "too_many_queued"


class Unprocessable(TrainerError):
    """A well-formed request that this deployment will not carry out (SPEC 3.1: HTTP 422)."""

    status = 422
    code = "refused"


class EndpointStopped(TrainerError):
    """A request reached the trainer after its endpoint was stopped (SPEC 6)."""

    status = 409
    code = "endpoint_stopped"


class BadGateway(TrainerError):
    """An endpoint's serving process did not answer a proxied request."""

    status = 502
    code = "bad_gateway"


class DiskFull(TrainerError):
    """A write the request needed met a full disk (shared/process/disk_full.py): nothing was stored, and the
    same request succeeds once an operator frees space (RFC 4918's 507 Insufficient Storage)."""

    status = 507
    code = "insufficient_storage"

    def __init__(self) -> None:
        super().__init__(reasons.DISK_FULL)


class Internal(TrainerError):
    """Something the trainer did not expect; the API log has the traceback."""

    status = 500
    code = "internal"


class Unavailable(TrainerError):
    """The trainer cannot serve the request now, but may in a moment: the answer says when to try
    again (`Retry-After`, seconds)."""

    status = 503
    code = "unavailable"
    retry_after_s = 2

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}


class StoreUnavailable(Unavailable):
    """Redis did not answer, even after the client's own retries (shared/store/documents.py): every service
    reconnects by itself once it is back, so the same request is worth sending again."""

    def __init__(self) -> None:
        super().__init__(reasons.STORE_UNREACHABLE, details={"retryAfterS": self.retry_after_s})


class WorkFailed(Exception):
    """Work on a worker (a run, an evaluation, a reward call, a rank of a run) that cannot go on.
    Its message is a plain sentence of shared/reasons/ that names what failed and why, never a
    Python class name; the run or evaluation shows it as it fails (`reasons.run_failed`,
    `reasons.evaluation_failed`). `WorkFailed.of` turns whatever the work raised into one."""

    def __init__(self, sentence: str):
        super().__init__(sentence)
        self.sentence = sentence

    @classmethod
    def of(cls, exc: BaseException) -> WorkFailed:
        """The failure a run or evaluation shows for `exc`: a WorkFailed as it is; a TrainerError
        (a dataset row, a reward entry or a load spec refused by code the API shares) by its
        sentence; anything else, which nobody foresaw, by its own words and where its traceback is."""
        if isinstance(exc, WorkFailed):
            return exc
        if isinstance(exc, TrainerError):
            return cls(exc.message)
        return cls(reasons.failed_unforeseen(reasons.error_text(exc)))
