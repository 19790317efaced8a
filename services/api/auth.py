"""Bearer tokens mapped to workloads: a token sees and acts only on its workloads' resources;
an admin token sees all (docs/api.md)."""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from typing import Any

from flask import g, request

from shared import reasons
from shared.config.deployment import DeploymentConfig
from shared.errors import Forbidden, NotFound, Unauthenticated, ValidationFailed
from shared.plans import WORKLOAD_PATTERN


@dataclass(frozen=True)
class Principal:
    name: str
    workloads: tuple[str, ...]
    admin: bool

    def may_use(self, workload: str) -> bool:
        return self.admin or workload in self.workloads

    @property
    def name_scope(self) -> tuple[str, ...] | None:
        """The workloads whose endpoint names this token's lookups read (None: all, an admin's)."""
        return None if self.admin else self.workloads

    def default_workload(self, fallback: str) -> str:
        if self.admin or fallback in self.workloads or not self.workloads:
            return fallback
        return self.workloads[0]


def authenticate(config: DeploymentConfig) -> Principal:
    return principal_for(config, request.headers.get("Authorization", ""))


def principal_for(config: DeploymentConfig, header: str) -> Principal:
    """Who an `Authorization` header's bearer token is; 401 when there is none or it is not known."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated(reasons.AUTHORIZATION_MISSING)
    for known in config.tokens:
        if hmac.compare_digest(known.token.encode(), token.strip().encode()):
            return Principal(known.name, known.workloads, known.admin)
    raise Unauthenticated(reasons.TOKEN_UNKNOWN)


def principal() -> Principal:
    return g.principal


def require_workload(workload: str) -> str:
    """The workload a request acts for, if this token may: 400 for one no workload could be named
    (the form fields and query parameters that carry one pass no schema), 403 for another's."""
    if not isinstance(workload, str) or not re.fullmatch(WORKLOAD_PATTERN, workload):
        raise ValidationFailed(reasons.WORKLOAD_RULE, details={"field": "workload"})
    if not principal().may_use(workload):
        raise Forbidden(
            reasons.workload_forbidden(workload),
            details={"workload": workload, "allowed": list(principal().workloads)},
        )
    return workload


def visible(doc: dict[str, Any] | None, what: str, resource_id: str) -> dict[str, Any]:
    """The resource if this token may see it; otherwise 404, so ids of others are not revealed."""
    if doc is None or not principal().may_use(doc.get("workload", "")):
        raise NotFound(reasons.resource_unknown(what, resource_id), details={"id": resource_id})
    return doc
