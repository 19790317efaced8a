"""Proxy latency benchmark (not a test): `python bench/proxy_latency.py [N]`.

Starts a real stack (tests/e2e/stack.py: the API under uvicorn, the scheduler, a trainer worker
for the node heartbeat, the endpoint manager) on TRAINING_BENCH_REDIS_URL (default
redis://127.0.0.1:6379/11, under a key prefix of its own, deleted at the end), creates an endpoint
on the built-in tiny model and measures:

1. Cold start: create -> READY as the client sees it (polling GET /v1/endpoints/ID every 50 ms),
   and, from the endpoint's record and its server.log, the serving process's own start -> the
   "serving" log line (port bound, /health answers) and the manager's `readyAt`.
2. N pairs (default 300) of identical small requests (`POST /v1/completions`, prompt "x",
   max_tokens 1, temperature 0): one straight to the endpoint's address, one through the trainer's
   API (`model` = the endpoint id, bearer token), each over a persistent requests.Session,
   interleaved (the order inside a pair alternates). Reports p50/p90/p99 of each, of the per-pair
   difference (through - direct), the difference of the p50s and the ratio. Then the same with
   `model` = the endpoint's name.
   The same with a request the serving process refuses at once (`prompt: 5`, 400): the proxy's
   cost without the generation's spread.
0. The floor: GET /health on the serving process against GET /v1/health on the API (an
   unauthenticated route that touches neither Redis nor the endpoint), interleaved the same way:
   what one more HTTP hop to the API (uvicorn, then Flask in a thread) costs before the proxy does anything.
   Each series through the API also reports the API's CPU time per request (its processes' user +
   system time from /proc over the series, divided by N): less sensitive to the machine's noise
   than wall-clock differences.
3. The same with `stream: true` (max_tokens 4): time to the first body byte and to the last.

4. With TRAINING_BENCH_BASELINE_REPO=DIR (another checkout of the repo, e.g. `git archive HEAD`
   unpacked there): a second API started from DIR on the same Redis, config and endpoint, and N
   triplets (direct, through this API, through the baseline API; the order rotates), streaming and
   not: what this checkout's proxy adds against the baseline's, measured side by side, so the
   machine's load drifts over both alike.

Timings on a shared machine are noisy: compare the figures of one run with each other.
Results: docs/endpoints-benchmark.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests  # noqa: E402

from tests.e2e.stack import start_stack, stop_stack  # noqa: E402

URL = os.environ.get("TRAINING_BENCH_REDIS_URL", "redis://127.0.0.1:6379/11")
WARMUP = 20


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` and its children (a gunicorn master's workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while listing
        if int(stat.parent.name) == pid or int(fields[1]) == pid:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


class CpuPerRequest:
    """`with CpuPerRequest(pid, n) as cpu: ...` then `cpu.ms`: the CPU time `pid` spent per request."""

    def __init__(self, pid: int, n: int):
        self.pid, self.n = pid, n

    def __enter__(self):
        self.start = cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc):
        self.ms = (cpu_seconds(self.pid) - self.start) * 1000 / self.n


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f}"


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def one(session: requests.Session, url: str, body: dict, headers: dict | None = None, status: int = 200) -> float:
    start = time.perf_counter()
    resp = session.post(url, json=body, headers=headers, timeout=60)
    resp.content  # noqa: B018 - read the whole body
    elapsed = time.perf_counter() - start
    assert resp.status_code == status, (url, resp.status_code, resp.text[:300])
    return elapsed


# A request the serving process refuses before generating (400): what the proxy adds, without the
# generation time's spread (several ms) in every sample.
REFUSED = {"prompt": 5, "max_tokens": 1}


def one_stream(session: requests.Session, url: str, body: dict, headers: dict | None = None) -> tuple[float, float]:
    start = time.perf_counter()
    first = None
    with session.post(url, json=body, headers=headers, timeout=60, stream=True) as resp:
        assert resp.status_code == 200, (url, resp.status_code, resp.text[:300])
        data = b""
        for chunk in resp.iter_content(chunk_size=None):
            if chunk and first is None:
                first = time.perf_counter() - start
            data += chunk
    last = time.perf_counter() - start
    assert b"[DONE]" in data, data[-200:]
    return first, last


def report(title: str, direct: list[float], through: list[float], api_cpu: CpuPerRequest | None = None) -> dict:
    diffs = [t - d for d, t in zip(direct, through, strict=True)]
    row = {
        "direct": {q: pct(direct, q) for q in (50, 90, 99)},
        "through": {q: pct(through, q) for q in (50, 90, 99)},
        "added": {q: pct(diffs, q) for q in (50, 90, 99)},
    }
    row["p50_difference"] = row["through"][50] - row["direct"][50]
    row["ratio_p50"] = row["through"][50] / row["direct"][50]
    print(f"\n{title} (n={len(direct)}), milliseconds")
    print("                         p50      p90      p99")
    for name in ("direct", "through", "added"):
        label = {"added": "added (per pair)"}.get(name, name)
        print(f"  {label:<18} " + "  ".join(ms(row[name][q]) for q in (50, 90, 99)))
    print(f"  p50(through) - p50(direct) = {row['p50_difference'] * 1000:.2f} ms; "
          f"ratio of p50s = {row['ratio_p50']:.2f}")
    if api_cpu is not None:
        row["api_cpu_ms"] = api_cpu.ms
        print(f"  API CPU per request: {api_cpu.ms:.2f} ms")
    return row


def pairs(n: int, direct_fn, through_fn) -> tuple[list, list]:
    direct, through = [], []
    for i in range(n):
        if i % 2 == 0:
            direct.append(direct_fn())
            through.append(through_fn())
        else:
            through.append(through_fn())
            direct.append(direct_fn())
    return direct, through


def triplets(n: int, fns) -> list[list[float]]:
    """n rounds of each function once, the order rotating; one list of samples per function."""
    samples: list[list[float]] = [[] for _ in fns]
    for i in range(n):
        for k in range(len(fns)):
            j = (i + k) % len(fns)
            samples[j].append(fns[j]())
    return samples


def compare(title: str, direct: list[float], this: list[float], baseline: list[float],
            cpu: tuple[CpuPerRequest, CpuPerRequest] | None = None) -> None:
    added = [t - d for d, t in zip(direct, this, strict=True)]
    added_base = [b - d for d, b in zip(direct, baseline, strict=True)]
    versus = [t - b for t, b in zip(this, baseline, strict=True)]
    print(f"\n{title} (n={len(direct)} triplets), milliseconds")
    print("                                  p50      p90      p99")
    for label, xs in (("direct", direct), ("through this API", this), ("through the baseline", baseline),
                      ("added, this (per triplet)", added), ("added, baseline", added_base),
                      ("this - baseline", versus)):
        print(f"  {label:<28} " + "  ".join(ms(pct(xs, q)) for q in (50, 90, 99)))
    if cpu is not None:
        print(f"  API CPU per request: this {cpu[0].ms:.2f} ms, baseline {cpu[1].ms:.2f} ms")


def baseline_api(stack, repo: str) -> tuple[subprocess.Popen, str]:
    from shared.process.ports import free_port

    port = free_port()
    log = (stack.home / "api-baseline.log").open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "services.api.main", "--port", str(port)], cwd=repo,
                            env=stack.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def healthy():
        try:
            return requests.get(url + "/v1/health", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    stack.wait_until("the baseline API", healthy, timeout_s=60)
    return proc, url


def serving_key(stack, endpoint_id: str) -> dict[str, str]:
    """The serving process's own secret, as the trainer's proxy sends it (read from the store: the
    API never shows it), for the requests sent straight to its address."""
    from shared.store.documents import Store, connect
    from shared.store.keys import Keys

    doc = Store(connect(stack.redis_url), Keys(stack.prefix)).get(endpoint_id) or {}
    key = (doc.get("process") or {}).get("apiKey")
    return {"Authorization": f"Bearer {key}"} if key else {}


def run_baseline(stack, doc: dict, n: int, repo: str) -> None:
    proc, base_url = baseline_api(stack, repo)

    def measured(fns):
        with CpuPerRequest(stack.processes["api"].pid, n) as this, CpuPerRequest(proc.pid, n) as base:
            samples = triplets(n, fns)
        return samples, (this, base)

    try:
        auth = stack.headers()
        body = {"prompt": "x", "max_tokens": 1, "temperature": 0, "model": doc["id"]}
        direct_url = doc["address"] + "/v1/completions"
        sessions = [requests.Session() for _ in range(3)]
        urls = [direct_url, stack.api_url + "/v1/completions", base_url + "/v1/completions"]
        heads = [serving_key(stack, doc["id"]), auth, auth]
        for _ in range(WARMUP):
            for s, u, h in zip(sessions, urls, heads):
                one(s, u, body, h)
        fns = [lambda s=s, u=u, h=h: one(s, u, body, h) for s, u, h in zip(sessions, urls, heads)]
        samples, cpu = measured(fns)
        compare(f"against the baseline at {repo}: POST /v1/completions, max_tokens 1", *samples, cpu)
        refused = {**REFUSED, "model": doc["id"]}
        fns = [lambda s=s, u=u, h=h: one(s, u, refused, h, status=400) for s, u, h in zip(sessions, urls, heads)]
        samples, cpu = measured(fns)
        compare("against the baseline: a request the serving process refuses at once (400)", *samples, cpu)
        sbody = {**body, "max_tokens": 4, "stream": True}
        sfns = [lambda s=s, u=u, h=h: one_stream(s, u, sbody, h) for s, u, h in zip(sessions, urls, heads)]
        (d, t, b), cpu = measured(sfns)
        compare("against the baseline: stream, time to first byte", *([x[0] for x in xs] for xs in (d, t, b)), cpu)
        compare("against the baseline: stream, time to last byte", *([x[1] for x in xs] for xs in (d, t, b)))
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        stack = start_stack(Path(tmp), URL, endpoint_manager=True)
        try:
            run(stack, n)
        finally:
            stop_stack(stack)


def run(stack, n: int) -> None:
    api = requests.Session()
    api.headers.update(stack.headers())

    # 1. cold start
    created_at = time.time()
    t0 = time.perf_counter()
    ep = api.post(stack.api_url + "/v1/endpoints", json={"model": "builtin/tiny-qwen3", "idleTimeout": 0,
                                                         "name": "bench"}, timeout=30).json()
    while True:
        doc = api.get(f"{stack.api_url}/v1/endpoints/{ep['id']}", timeout=30).json()
        if doc["phase"] in ("READY", "FAILED", "TERMINATED"):
            break
        if time.perf_counter() - t0 > 300:
            raise SystemExit(f"not READY after 300 s: {doc}")
        time.sleep(0.05)
    ready_s = time.perf_counter() - t0
    assert doc["phase"] == "READY", doc
    print(f"endpoint {doc['id']} READY at {doc['address']}")
    print(f"\ncold start: create -> READY (client polling every 50 ms): {ready_s:.2f} s")
    process = doc.get("process") or {}
    proc_start = epoch(process["startedAt"]) if process.get("startedAt") else None
    serving_at = load_s = None
    log_path = stack.artifacts / process.get("log", "")
    if process.get("log") and log_path.exists():
        for line in log_path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") == "model loaded":
                load_s = entry.get("load_s")
            if entry.get("event") == "serving" and serving_at is None:
                serving_at = epoch(entry["timestamp"])
    if proc_start is not None:
        print(f"  create -> serving process started (scheduler grant + manager start): {proc_start - created_at:.2f} s")
        if serving_at is not None:
            print(f"  serving process start -> listening (/health answers): {serving_at - proc_start:.2f} s"
                  f" (of which model load {load_s} s)")
        if doc.get("readyAt"):
            print(f"  serving process start -> readyAt (manager's probe): {epoch(doc['readyAt']) - proc_start:.2f} s")

    direct_url = doc["address"] + "/v1/completions"
    through_url = stack.api_url + "/v1/completions"
    body = {"prompt": "x", "max_tokens": 1, "temperature": 0}
    direct_body, through_body = {**body, "model": doc["id"]}, {**body, "model": doc["id"]}
    direct_s, through_s = requests.Session(), requests.Session()
    direct_s.headers.update(serving_key(stack, doc["id"]))
    auth = stack.headers()
    api_pid = stack.processes["api"].pid

    # 0. the floor: one more HTTP hop through uvicorn + Flask with no proxy work at all
    # (GET /v1/health on the API, no auth, no Redis) against GET /health on the serving process.
    def get(session, url):
        start = time.perf_counter()
        resp = session.get(url, timeout=30)
        resp.content  # noqa: B018
        assert resp.status_code == 200, (url, resp.status_code)
        return time.perf_counter() - start

    for _ in range(WARMUP):
        get(direct_s, doc["address"] + "/health")
        get(through_s, stack.api_url + "/v1/health")
    with CpuPerRequest(api_pid, n) as cpu:
        d, t = pairs(n, lambda: get(direct_s, doc["address"] + "/health"),
                     lambda: get(through_s, stack.api_url + "/v1/health"))
    report("floor: GET /health direct vs GET /v1/health on the API (no proxying)", d, t, cpu)

    # 2. non-streaming
    for _ in range(WARMUP):
        one(direct_s, direct_url, direct_body)
        one(through_s, through_url, through_body, auth)
    with CpuPerRequest(api_pid, n) as cpu:
        d, t = pairs(n, lambda: one(direct_s, direct_url, direct_body),
                     lambda: one(through_s, through_url, through_body, auth))
    report("POST /v1/completions, max_tokens 1", d, t, cpu)
    refused = {**REFUSED, "model": doc["id"]}
    with CpuPerRequest(api_pid, n) as cpu:
        d, t = pairs(n, lambda: one(direct_s, direct_url, refused, status=400),
                     lambda: one(through_s, through_url, refused, auth, status=400))
    report("POST /v1/completions refused by the serving process at once (400): no generation", d, t, cpu)
    by_name = {**through_body, "model": "bench"}  # the endpoint's name instead of its id
    with CpuPerRequest(api_pid, n) as cpu:
        d, t = pairs(n, lambda: one(direct_s, direct_url, direct_body),
                     lambda: one(through_s, through_url, by_name, auth))
    report("POST /v1/completions, max_tokens 1, `model` = the endpoint's name", d, t, cpu)

    # 3. streaming
    sbody = {**body, "max_tokens": 4, "stream": True}
    sdirect, sthrough = {**sbody, "model": doc["id"]}, {**sbody, "model": doc["id"]}
    for _ in range(WARMUP):
        one_stream(direct_s, direct_url, sdirect)
        one_stream(through_s, through_url, sthrough, auth)
    with CpuPerRequest(api_pid, n) as cpu:
        d, t = pairs(n, lambda: one_stream(direct_s, direct_url, sdirect),
                     lambda: one_stream(through_s, through_url, sthrough, auth))
    report("stream: true, max_tokens 4 - time to first byte", [x[0] for x in d], [x[0] for x in t], cpu)
    report("stream: true, max_tokens 4 - time to last byte", [x[1] for x in d], [x[1] for x in t])

    baseline = os.environ.get("TRAINING_BENCH_BASELINE_REPO")
    if baseline:
        run_baseline(stack, doc, n, baseline)


if __name__ == "__main__":
    main()
