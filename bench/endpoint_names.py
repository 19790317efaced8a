"""Endpoint name lookups benchmark (not a test): `python bench/endpoint_names.py [--endpoints N]`.

An unknown endpoint name used to cost a scan of every endpoint (shared/store/endpoint_names.py before
issue 26), 4x a known one over HTTP: a timing oracle for another workload's names, and an amplifier
(each request by an unknown name read up to 1,000 documents). The lookup now reads one hash entry
per workload the token may use and the documents named, in one Lua script. This measures, for a
workload token, the same three kinds of name:

- known: a live endpoint of the token's own workload;
- unknown: a name no endpoint has;
- another workload's: a live endpoint of a workload the token may not use (what an oracle probes),

1. in process: `find_endpoint` on the real Redis, the three interleaved (the order rotates), and
   the old cost of an unknown name (the scan it made: `Store.list` over the endpoints, limit 1,000)
   as the baseline;
2. over HTTP: `GET /v1/endpoints/NAME` on the real API (uvicorn in a thread, the Flask half), the
   three interleaved.

Medians and the ratios unknown/known and another's/known. Setup: `--endpoints` endpoints (default
2,000) in 20 workloads, named, half of them ended. Runs under a prefix of its own on
TRAINING_BENCH_REDIS_URL (default redis://127.0.0.1:6379/13) and deletes its keys at the end.
Results: docs/endpoints-benchmark.md ("Name lookups").
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests  # noqa: E402
import uvicorn  # noqa: E402

from shared.config.deployment import parse_config  # noqa: E402
from shared.process.ports import free_port  # noqa: E402
from shared.store.documents import Store, connect  # noqa: E402
from shared.store.endpoint_names import _is_live_named, create_endpoint_doc, find_endpoint  # noqa: E402
from shared.store.ids import Kind, new_id  # noqa: E402
from shared.store.keys import Keys  # noqa: E402

URL = os.environ.get("TRAINING_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
WORKLOADS = 20
TEAM_TOKEN = "bench-team-token-" + secrets.token_hex(8)
ADMIN_TOKEN = "bench-admin-token-" + secrets.token_hex(8)


def interleaved(calls: dict[str, callable], repeat: int) -> dict[str, list[float]]:
    """Each call `repeat` times, the order rotating every round, so a drift of the machine's load
    falls on all of them alike. Seconds per call."""
    names = list(calls)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for i in range(repeat):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start = time.perf_counter()
            calls[name]()
            samples[name].append(time.perf_counter() - start)
    return samples


def summary(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {name: {"medianMs": round(statistics.median(s) * 1000, 4), "p90Ms": round(
        statistics.quantiles(s, n=10)[-1] * 1000, 4)} for name, s in samples.items()}


def ratios(figures: dict[str, dict[str, float]]) -> dict[str, float]:
    known = figures["known"]["medianMs"]
    return {"unknownOverKnown": round(figures["unknown"]["medianMs"] / known, 3),
            "anotherWorkloadsOverKnown": round(figures["anotherWorkloads"]["medianMs"] / known, 3)}


def populate(store: Store, count: int) -> None:
    for i in range(count):
        doc = create_endpoint_doc(store, {"id": new_id(Kind.ENDPOINT), "kind": "endpoint", "name": f"name-{i}",
                                          "workload": f"w{i % WORKLOADS:02d}", "phase": "QUEUED"})
        if i % 2:  # half of them ended: their names stay in the index and read as free
            store.update(doc["id"], lambda d: {**d, "phase": "TERMINATED"})
    create_endpoint_doc(store, {"id": new_id(Kind.ENDPOINT), "kind": "endpoint", "name": "ours", "workload": "team",
                                "phase": "READY"})
    create_endpoint_doc(store, {"id": new_id(Kind.ENDPOINT), "kind": "endpoint", "name": "theirs",
                                "workload": "w00", "phase": "READY"})


def serve(config) -> tuple[str, uvicorn.Server, threading.Thread]:
    from services.api.asgi import create_asgi_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_asgi_app(config), host="127.0.0.1", port=port, loop="asyncio",
                                           http="httptools", lifespan="on", log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the API did not start")
        time.sleep(0.02)
    return f"http://127.0.0.1:{port}", server, thread


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2000, help="lookups of each kind in process")
    parser.add_argument("--http-repeat", type=int, default=500, help="requests of each kind over HTTP")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    prefix = f"bench-{secrets.token_hex(4)}:"
    client = connect(URL)
    store = Store(client, Keys(prefix))
    try:
        import logging

        logging.disable(logging.INFO)  # the API's request log line per request is not what is measured
        populate(store, args.endpoints)
        scope = ["team"]
        lookups = {"known": lambda: find_endpoint(store, "ours", workloads=scope),
                   "unknown": lambda: find_endpoint(store, "no-such-name", workloads=scope),
                   "anotherWorkloads": lambda: find_endpoint(store, "theirs", workloads=scope)}
        assert lookups["known"]() and lookups["unknown"]() is None and lookups["anotherWorkloads"]() is None
        interleaved(lookups, 50)  # warm-up
        in_process = summary(interleaved(lookups, args.repeat))
        old_scan = summary(interleaved({"oldUnknown": lambda: store.list(
            "ep", where=lambda d: _is_live_named(d, "no-such-name"), limit=1000)}, max(20, args.repeat // 20)))

        config = parse_config({
            "pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}]}},
            "catalog": [{"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}],
            "tokens": [{"token": TEAM_TOKEN, "name": "team", "workloads": ["team"]},
                       {"token": ADMIN_TOKEN, "name": "admin", "admin": True}]},
            env={"TRAINING_REDIS_URL": URL, "TRAINING_KEY_PREFIX": prefix,
                 "TRAINING_ARTIFACT_ROOT": tempfile.mkdtemp(prefix="bench-names-")})
        api_url, server, thread = serve(config)
        try:
            with requests.Session() as http:
                http.trust_env = False
                http.headers["Authorization"] = f"Bearer {TEAM_TOKEN}"
                gets = {name: (lambda n=path: http.get(f"{api_url}/v1/endpoints/{n}", timeout=30))
                        for name, path in (("known", "ours"), ("unknown", "no-such-name"),
                                           ("anotherWorkloads", "theirs"))}
                statuses = {name: get().status_code for name, get in gets.items()}
                assert statuses == {"known": 200, "unknown": 404, "anotherWorkloads": 404}, statuses
                interleaved(gets, 20)
                over_http = summary(interleaved(gets, args.http_repeat))
        finally:
            server.should_exit = True
            thread.join(timeout=30)
    finally:
        found = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for i in range(0, len(found), 1000):
            client.delete(*found[i:i + 1000])

    result = {
        "setup": {"endpoints": args.endpoints + 2, "workloads": WORKLOADS + 1, "endedShare": 0.5,
                  "repeat": args.repeat, "httpRepeat": args.http_repeat},
        "inProcess": {**in_process, "ratios": ratios(in_process),
                      "baselineOldUnknownScanMs": old_scan["oldUnknown"]["medianMs"]},
        "overHttp": {**over_http, "ratios": ratios(over_http)},
    }
    print(json.dumps(result, indent=2))
    print(f"in process: known {in_process['known']['medianMs']:.3f} ms, unknown {in_process['unknown']['medianMs']:.3f} "
          f"ms, another workload's {in_process['anotherWorkloads']['medianMs']:.3f} ms (medians); unknown/known "
          f"{result['inProcess']['ratios']['unknownOverKnown']:.2f}, another's/known "
          f"{result['inProcess']['ratios']['anotherWorkloadsOverKnown']:.2f}; the old scan of an unknown name "
          f"{old_scan['oldUnknown']['medianMs']:.2f} ms")
    print(f"over HTTP (GET /v1/endpoints/NAME): known {over_http['known']['medianMs']:.3f} ms, unknown "
          f"{over_http['unknown']['medianMs']:.3f} ms, another workload's {over_http['anotherWorkloads']['medianMs']:.3f}"
          f" ms; unknown/known {result['overHttp']['ratios']['unknownOverKnown']:.2f}, another's/known "
          f"{result['overHttp']['ratios']['anotherWorkloadsOverKnown']:.2f}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
