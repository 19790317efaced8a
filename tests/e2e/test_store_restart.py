"""Redis killed with SIGKILL and started again under load (issue 14, "Faults"): the real API
(`python -m services.api.main`) and scheduler on a Redis of the test's own with AOF on
(tests/restartable_redis.py), while client threads create and read datasets and endpoints and send
requests through the proxy to a READY endpoint (its serving process a scripted HTTP peer,
tests/api/http_peer.py: what is under test is the store, not generation).

Twice: a blip (Redis back at once, shorter than the client's retries, shared/store/documents.py) that no
client may notice at all, and an outage of several seconds, longer than those retries, through
which every answer is a success or a 503 with Retry-After and the sentence of shared/reasons/,
never a 500. Afterwards every write a client was told succeeded is still there, the API answers
again within a second or two of Redis, and the scheduler (which rode out the same outage)
grants a new endpoint. The figures are printed (`-s`) and written in docs/faults.md."""

from __future__ import annotations

import collections
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
import requests
import yaml

from shared import reasons
from shared.process.ports import free_port
from shared.store.keys import Keys
from tests.api.http_peer import HttpPeer
from tests.e2e.stack import Stack
from tests.restartable_redis import RestartableRedis

OUTAGE_S = 6.0  # longer than the client's retries (2.2 to 4.4 s): some requests must give up
CLIENTS_PER_KIND = 2
REQUEST_TIMEOUT_S = 30
UNAVAILABLE = {"code": "unavailable", "message": reasons.STORE_UNREACHABLE, "details": {"retryAfterS": 2}}


@dataclass
class Tally:
    """What the clients saw: answers by status, the ids of acknowledged writes, each answer's time."""

    statuses: collections.Counter = field(default_factory=collections.Counter)
    wrong: list[str] = field(default_factory=list)  # any answer that is neither a success nor the 503
    datasets: dict[str, bytes] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)
    answers: list[tuple[float, str, int, float]] = field(default_factory=list)  # (end, kind, status, seconds)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, kind: str, resp: requests.Response) -> None:
        with self.lock:
            self.statuses[resp.status_code] += 1
            self.answers.append((time.monotonic(), kind, resp.status_code, resp.elapsed.total_seconds()))
            if resp.status_code == 503:
                if resp.json().get("error") != UNAVAILABLE or resp.headers.get("Retry-After") != "2":
                    self.wrong.append(f"{kind}: 503 {resp.headers.get('Retry-After')} {resp.text[:300]}")
            elif resp.status_code >= 300:
                self.wrong.append(f"{kind}: {resp.status_code} {resp.text[:300]}")


@pytest.fixture
def world(tmp_path):
    store = RestartableRedis(tmp_path / "redis")
    store.start()
    peer = HttpPeer()
    prefix, token = f"e2e-{secrets.token_hex(4)}:", secrets.token_hex(16)
    home, artifacts = tmp_path / "home", tmp_path / "artifacts"
    home.mkdir()
    config_path = home / "deployment.yaml"
    config_path.write_text(yaml.safe_dump({
        "redisUrl": store.url, "keyPrefix": prefix, "artifactRoot": str(artifacts), "defaultPool": "default",
        "pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 1}}]},
                  # endpoints created under load queue here: no worker runs on its node, so none is granted
                  "spare": {"nodes": [{"name": "spare-1", "devices": {"kind": "cpu", "count": 1}}]}},
        "catalog": [{"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}],
        "tokens": [{"token": token, "name": "admin", "admin": True}],
        # every endpoint created under load stays queued: no cap on queued claims may refuse one here
        "scheduling": {"maxQueuedPerWorkload": 1_000_000},
    }))
    port = free_port()
    env = {**os.environ, "TRAINING_CONFIG": str(config_path), "TRAINING_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    for var in ("TRAINING_REDIS_URL", "TRAINING_KEY_PREFIX", "TRAINING_ARTIFACT_ROOT", "TRAINING_ADMIN_TOKEN"):
        env.pop(var, None)
    stack = Stack(f"http://127.0.0.1:{port}", token, env, home, artifacts, store.url, prefix)
    client = redis.Redis.from_url(store.url, decode_responses=True)
    # as the node's worker and endpoint manager would (no TTL: neither runs here); endpoints are
    # granted only on a node whose endpoint manager holds its lease
    client.set(Keys(prefix).node_alive("local"), "test")
    client.set(Keys(prefix).endpoint_manager("local"), "test")
    stack.start("api", ["services.api.main", "--port", str(port)])
    stack.start("scheduler", ["services.scheduler.main"])
    stack.wait_until("the API", lambda: _answers(stack.api_url + "/v1/health"), timeout_s=60)
    yield stack, store, peer, client
    for name in list(stack.processes):
        stack.stop(name)
    peer.close()
    store.stop()


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def ready_endpoint(stack: Stack, client: redis.Redis, peer: HttpPeer) -> str:
    """An endpoint READY at the peer's address, written as its endpoint manager would have left it."""
    ep = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "pool": "spare", "idleTimeout": 0})
    assert ep.status_code == 201, ep.text
    key = Keys(stack.prefix).resource(ep.json()["id"])
    doc = json.loads(client.get(key))
    doc.update(phase="READY", address=peer.url, readyAt=doc["createdAt"], startingSince=doc["createdAt"])
    client.set(key, json.dumps(doc))
    return doc["id"]


def clients(stack: Stack, endpoint_id: str, tally: Tally, stop: threading.Event) -> list[threading.Thread]:
    headers = stack.headers()

    def datasets() -> None:
        with requests.Session() as http:
            while not stop.is_set():
                rows = json.dumps({"prompt": f"p {secrets.token_hex(8)}", "completion": "c"}).encode() + b"\n"
                resp = http.post(f"{stack.api_url}/v1/datasets", headers=headers, timeout=REQUEST_TIMEOUT_S,
                                 files={"file": ("d.jsonl", rows)})
                tally.note("create dataset", resp)
                if resp.status_code == 201:
                    with tally.lock:
                        tally.datasets[resp.json()["id"]] = rows
                    tally.note("read dataset", http.get(f"{stack.api_url}/v1/datasets/{resp.json()['id']}",
                                                        headers=headers, timeout=REQUEST_TIMEOUT_S))

    def endpoints() -> None:
        with requests.Session() as http:
            while not stop.is_set():
                resp = http.post(f"{stack.api_url}/v1/endpoints", headers=headers, timeout=REQUEST_TIMEOUT_S,
                                 json={"model": "builtin/tiny-qwen3", "pool": "spare"})
                tally.note("create endpoint", resp)
                if resp.status_code == 201:
                    with tally.lock:
                        tally.endpoints[resp.json()["id"]] = resp.json()["scheduling"]["claim"]
                tally.note("list endpoints", http.get(f"{stack.api_url}/v1/endpoints?limit=5", headers=headers,
                                                      timeout=REQUEST_TIMEOUT_S))

    def proxied() -> None:
        with requests.Session() as http:
            while not stop.is_set():
                tally.note("proxied", http.post(f"{stack.api_url}/v1/completions", headers=headers,
                                                timeout=REQUEST_TIMEOUT_S, json={"model": endpoint_id, "prompt": "x"}))

    threads = [threading.Thread(target=work, daemon=True) for work in (datasets, endpoints, proxied)
               for _ in range(CLIENTS_PER_KIND)]
    for thread in threads:
        thread.start()
    return threads


def restart_under_load(stack, store: RestartableRedis, endpoint_id: str, *, down_s: float) -> tuple[Tally, dict]:
    tally, stop = Tally(), threading.Event()
    threads = clients(stack, endpoint_id, tally, stop)
    time.sleep(2)
    killed = time.monotonic()
    store.kill()
    time.sleep(down_s)
    store.start()
    back = time.monotonic()
    time.sleep(5)
    stop.set()
    for thread in threads:
        thread.join(REQUEST_TIMEOUT_S + 5)
    first_after = {}
    for at, kind, status, _ in sorted(tally.answers):
        if at > back and status < 300:
            first_after.setdefault(kind, at - back)
    answered_in_outage = [status for at, _, status, _ in tally.answers if killed < at < back]
    return tally, {"statuses": dict(tally.statuses), "down_s": round(back - killed, 2),
                   "answers_while_down": dict(collections.Counter(answered_in_outage)),
                   "slowest_answer_s": round(max(s for *_, s in tally.answers), 2),
                   "recovered_s": {kind: round(s, 2) for kind, s in sorted(first_after.items())}}


def unclaimed_endpoints(client: redis.Redis, prefix: str) -> int:
    """Endpoints stored without a claim: a create that Redis left half done, answered 503."""
    keys = Keys(prefix)
    ids = client.zrange(keys.index("ep"), 0, -1)
    docs = [json.loads(raw) for raw in client.mget([keys.resource(i) for i in ids]) if raw]
    return sum(1 for doc in docs if not (doc.get("scheduling") or {}).get("claim"))


def check_every_acknowledged_write(stack: Stack, client: redis.Redis, tally: Tally) -> None:
    for dataset_id, rows in tally.datasets.items():
        resp = stack.get(f"/v1/datasets/{dataset_id}")
        assert resp.status_code == 200, (dataset_id, resp.text)
        assert resp.json()["bytes"] == len(rows)
    claims = Keys(stack.prefix)
    for endpoint_id, claim_id in tally.endpoints.items():
        resp = stack.get(f"/v1/endpoints/{endpoint_id}")
        assert resp.status_code == 200, (endpoint_id, resp.text)
        assert resp.json()["phase"] == "QUEUED" and resp.json()["scheduling"]["claim"] == claim_id
        assert client.exists(claims.claim(claim_id)), claim_id


def test_redis_killed_and_restarted_under_load_loses_nothing_and_answers_only_200_or_503(world):
    stack, store, peer, client = world
    endpoint_id = ready_endpoint(stack, client, peer)

    blip, blip_figures = restart_under_load(stack, store, endpoint_id, down_s=0)
    print(f"\nRedis SIGKILLed and started again at once: {blip_figures}")
    assert blip.wrong == [] and set(blip.statuses) <= {200, 201}, blip_figures  # the retries covered it all
    check_every_acknowledged_write(stack, client, blip)

    outage, figures = restart_under_load(stack, store, endpoint_id, down_s=OUTAGE_S)
    figures["unclaimedEndpoints"] = unclaimed_endpoints(client, stack.prefix)
    print(f"Redis SIGKILLed, down {OUTAGE_S:g}s, started again: {figures}")
    assert outage.wrong == [], outage.wrong[:5]
    assert outage.statuses[503] > 0 and set(outage.statuses) <= {200, 201, 503}, figures
    assert set(figures["recovered_s"]) == {"create dataset", "read dataset", "create endpoint", "list endpoints",
                                           "proxied"}, figures
    assert max(figures["recovered_s"].values()) < 3.0, figures  # the next retry after Redis answers
    check_every_acknowledged_write(stack, client, outage)
    assert peer.requests  # the proxied requests reached the serving process before and after

    # The scheduler rode the same outage out: a new endpoint of its pool is granted (QUEUED -> STARTING).
    granted = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3"}).json()
    stack.wait_until("the scheduler to grant", lambda: stack.get(f"/v1/endpoints/{granted['id']}").json()[
        "phase"] == "STARTING", timeout_s=15)
    assert stack.processes["api"].poll() is None and stack.processes["scheduler"].poll() is None
    assert "redis unreachable" in Path(stack.logs["scheduler"]).read_text()
