"""Whether text a user reads shows a Python class name (issue 28: "evaluation failed:
ValidationFailed: ..." told users how the code is built, not what went wrong).

tests/conftest.py looks through every resource a test left in Redis (the `detail` of runs,
evaluations and endpoints, and every event) as the test's keys are deleted, so each failure path a
test drives is checked for it; tests/test_user_sentences.py checks the code that formats failures."""

from __future__ import annotations

import json
import re

# An exception's class name as Python prints it (`ValidationFailed`, `torch.OutOfMemoryError`,
# `requests.exceptions.ConnectionError`): a capitalised word ending the way exception classes do.
CLASS_NAME = re.compile(r"\b(?:[a-z_][a-z0-9_]*\.)*([A-Z][A-Za-z0-9]*(?:Error|Exception|Failed|Refused|Damaged|Lost|"
                        r"Gone|NotReady|Interrupt|Timeout))\b")


def class_names_in(text: str) -> list[str]:
    return CLASS_NAME.findall(text or "")


def shown_class_names(client, prefix: str) -> list[str]:
    """`KEY: TEXT` for each detail and event under `prefix` that names an exception class."""
    found = []
    for key in client.scan_iter(match=f"{prefix}res:*", count=1000):
        try:
            doc = json.loads(client.get(key) or "null")
        except (ValueError, TypeError):
            continue  # not a JSON document (none is written so, but a test may store anything)
        detail = doc.get("detail") if isinstance(doc, dict) else None
        if isinstance(detail, str) and class_names_in(detail):
            found.append(f"{key}: {detail}")
    for key in client.scan_iter(match=f"{prefix}events:*", count=1000):
        for raw in client.lrange(key, 0, -1):
            try:
                message = json.loads(raw).get("message")
            except (ValueError, AttributeError):
                continue
            if isinstance(message, str) and class_names_in(message):
                found.append(f"{key}: {message}")
    return found
