"""The API's own answers: unknown routes, internal errors, an unreachable store, a full disk,
request bodies and the JSON values users send (issue 14), lists and query parameters, Flower's gate."""

from __future__ import annotations



def weak_tokens_refused(names: list[str], min_length: int) -> str:
    """The API's refusal to start (services/api/main.py) with a token anyone could guess."""
    return (f"refusing to start: the token(s) {', '.join(names)} are empty, a placeholder such as change-me, or "
            f"shorter than {min_length} characters; set TRAINING_ADMIN_TOKEN (and the config's tokens) to long "
            "random values, e.g. `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`")


def route_unknown(method: str, path: str) -> str:
    return f"{method} {path} is not part of this API"


INTERNAL_ERROR = "the trainer hit an internal error; see the API log"


# A 503 while Redis is down or restarting (shared/errors.StoreUnavailable, docs/faults.md).
STORE_UNREACHABLE = ("the trainer cannot reach its store (Redis) right now; it reconnects by itself, "
                     "so send the request again in a few seconds")


REQUEST_BODY_NOT_JSON_OBJECT = "the request body must be a JSON object (Content-Type: application/json)"


def request_too_large(max_bytes: int) -> str:
    return f"the upload is larger than this deployment accepts ({max_bytes} bytes)"


def status_unknown(what: str, status: str, known: list[str]) -> str:
    return f"status {status} is not a state of {what}; they are {', '.join(known)}"


def list_has_no_status(what: str) -> str:
    return f"{what} have no status to filter by; drop ?status="


def cursor_unknown(cursor: str) -> str:
    """?after= names no item of the list: a cursor is the nextCursor a page of this list gave."""
    return f"after={cursor} is not a cursor of this list; pass the nextCursor of the page before"


def json_too_deep(max_depth: int) -> str:
    """JSON nested deeper than shared/json_values.MAX_DEPTH (a phrase: the body, a row or a field precedes it)."""
    return f"nests lists and objects more than {max_depth} levels deep"


def lone_surrogate(code: int) -> str:
    """A JSON string escaping half of a UTF-16 surrogate pair alone: not text any tokenizer reads."""
    return f"holds a lone surrogate (\\u{code:04x}), which is not text; a surrogate escape must be half of a pair"


def lone_surrogate_in_key(code: int) -> str:
    return f"has a key holding a lone surrogate (\\u{code:04x}), which is not text; a surrogate escape must be half of a pair"


def request_body_refused(field: str | None, problem: str) -> str:
    """A JSON request body that shared/json_values refuses (`problem` from json_too_deep, lone_surrogate)."""
    return f"the request body {problem}" if field is None else f"the request body's field {field} {problem}"


WORKLOAD_RULE = "workload must be 1 to 64 letters, digits or `_.-`"


ENDPOINT_NAME_DOTS = "may not be `.` or `..`, which a URL path reads as a step, not a name"


def status_empty(what: str, known: list[str], *, param: str = "status") -> str:
    """?status= (or an endpoint list's ?phase=) given with nothing in it: a slip, not "any state"."""
    return f"?{param}= names no state of {what}; name one or more of {', '.join(known)}, or leave it out"


def log_after_invalid(raw: str, max_index: int) -> str:
    """?after=N of an event or metric log: the index of its first entry to answer."""
    return f"after must be a whole number from 0 to {max_index}, not {raw!r}"


WORKLOAD_NAME_RULE = "a workload name is 1 to 64 letters, digits or `_.-`"


def query_workload_invalid(param: str = "workload") -> str:
    """A query parameter naming a workload breaks the rule of workload names (shared/schemas/names.py)."""
    return f"?{param}= must name a workload: 1 to 64 letters, digits or `_.-`"


def query_id_invalid(param: str, what: str, prefix: str) -> str:
    """A query parameter naming a resource by id (?run=, ?comparison=, ?after=) has no id's shape."""
    return f"?{param}= must be the id of a {what}: `{prefix}-` then 1 to 64 letters, digits, `_` or `-`"


def query_file_name_invalid(param: str, max_chars: int) -> str:
    """?name= of a snapshot import: the upload's file name, one path segment."""
    return f"?{param}= must be a file name: 1 to {max_chars} characters, no `/` and no control characters"


FLOWER_NEEDS_BASIC_AUTH = ("flower: set FLOWER_BASIC_AUTH (user:password); this deployment serves no Flower "
                           "route without it")


FLOWER_AUTH_REQUIRED = "Flower needs its basic auth (user:password) on every route"


# The answer (507) of a request whose write met a full disk (ENOSPC, EDQUOT) where the trainer
# keeps artifacts: services/api/app.py, shared/process/disk_full.py. Whatever was half-written is removed.
DISK_FULL = ("the trainer's disk is full (no space left where it stores artifacts), so nothing was stored; "
             "free space there, then send the request again")


def number_not_finite(token: str) -> str:
    """A JSON number that is not finite: NaN, Infinity, -Infinity, or one too large for a double (1e400)."""
    shown = token if len(token) <= 40 else token[:37] + "..."
    return f"is {shown}, which is not a finite number; every number must be finite"


def number_too_long(digits: int, most: int) -> str:
    return f"is a whole number of {digits} digits; a number may have at most {most}"


# A number field given a string ("0.1"): marshmallow would read it as the number.
NUMBER_NOT_A_STRING = "must be a JSON number, not a string"


# --- Request bodies and the resources they name (shared/*_schema.py, shared/store/documents.py, services/api/auth.py).

def body_not_an_object(what: str) -> str:
    """A resource's body (`what`: endpoint, evaluation, comparison, plan) that is not a JSON object."""
    return f"the {what} must be a JSON object"


def body_field_refused(what: str, field: str, problem: str) -> str:
    """The first field a body's schema refused (`problem`: marshmallow's words, or one of ours)."""
    return f"{what} field {field}: {problem}"


# An evaluation's reward entry that names a judge: its judge is its own field.
EVALUATION_REWARD_JUDGE = "an evaluation's rewards are reward functions; its judge is the `judge` field"
COMPARISON_SNAPSHOT_TWICE = "names a snapshot twice"
# Issue 30: a comparison needs two rows: two snapshots, or one and its base model (`base: true`).
COMPARISON_ONE_ROW = "needs at least 2 snapshots, or 1 with \"base\": true to compare it with its base model"


def resource_unknown(what: str, resource_id: str) -> str:
    """A resource this token may not see or that is not there (the two read the same)."""
    return f"{what} {resource_id} does not exist"


def resource_id_unknown(resource_id: str) -> str:
    return f"{resource_id} does not exist"


AUTHORIZATION_MISSING = "this request needs an Authorization: Bearer TOKEN header"
TOKEN_UNKNOWN = "this token is not known to the deployment"


def workload_forbidden(workload: str) -> str:
    return f"this token may not act for workload {workload}"


def page_limit_invalid(shown: str, most: int) -> str:
    """?limit= of a list (`shown`: what was given, as the answer quotes it)."""
    return f"limit must be a whole number from 1 to {most}, not {shown}"
