"""GET /v1/runs/ID/process-log (issue 30): the run's process output as text, one sentence
before a worker wrote any (200: the run exists), and another workload's run answers as an unknown one. The file is put
where a worker's process log writes it (shared/store/artifacts.py process_log_key); the worker's side:
tests/trainer_worker/test_process_log.py."""

from __future__ import annotations

from shared.store.artifacts import process_log_key


def test_a_runs_process_log_is_served_as_text(app, client, admin, team, dataset):
    run = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": dataset}).json
    resp = client.get(f"/v1/runs/{run['id']}/process-log", headers=admin)
    assert resp.status_code == 200 and resp.data.decode() == (
        f"run {run['id']} has no process log yet: it is written once a worker starts training it\n")
    artifacts = app.extensions["trainer"].artifacts
    artifacts.put_file(process_log_key(run["id"], "20261205T000000.000000Z"),
                       b"00:00:00.000 WARNING transformers.trainer: a line\nTraceback (most recent call last):\n")
    resp = client.get(f"/v1/runs/{run['id']}/process-log", headers=admin)
    assert resp.status_code == 200 and resp.mimetype == "text/plain"
    assert resp.data == b"00:00:00.000 WARNING transformers.trainer: a line\nTraceback (most recent call last):\n"
    theirs = client.get(f"/v1/runs/{run['id']}/process-log", headers=team)
    none = client.get("/v1/runs/run-00000000000000000000/process-log", headers=team)
    assert theirs.status_code == none.status_code == 404
    assert theirs.json["error"]["message"] == f"run {run['id']} does not exist"
