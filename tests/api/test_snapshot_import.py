"""`POST /v1/snapshots/import` and `GET /v1/snapshots/ID/adapter` through the API, on snapshot
directories written by hand: every manifest field of the wrong type is a 400 naming it (and nothing
is stored), and a snapshot with no weights answers a 404 saying so. Importing directories that real
training wrote is tests/trainer_worker/test_layout1.py and tests/e2e."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from shared.ids import Kind, new_id

MANIFEST = {"layout": 2, "run": "run-elsewhere", "step": 8, "method": "sft", "engine": "sft-single",
            "precision": "fp32", "model": "builtin/tiny-qwen3", "gpus": 1, "release": "0.6.0",
            "weights": {"format": "peft-safetensors", "path": "adapter"},
            "trainingState": {"format": "hf-trainer", "path": "training_state"}}


def snapshot_dir(tmp_path, **fields):
    """A layout-2 snapshot directory whose manifest is MANIFEST with `fields` changed (`...` drops
    one); the adapter files hold placeholder bytes, which neither import nor download reads."""
    manifest = {k: v for k, v in {**MANIFEST, **fields}.items() if v is not ...}
    directory = tmp_path / "snap"
    (directory / "adapter").mkdir(parents=True)
    (directory / "adapter" / "adapter_config.json").write_text("{}")
    (directory / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    (directory / "snapshot.json").write_text(json.dumps(manifest))
    return directory


def import_(client, headers, path):
    return client.post("/v1/snapshots/import", headers=headers, json={"path": str(path)})


def test_import_then_download_the_adapter(client, admin, tmp_path):
    resp = import_(client, admin, snapshot_dir(tmp_path))
    assert resp.status_code == 201, resp.json
    snap = resp.json
    assert snap["imported"] and snap["sourceRun"] == "run-elsewhere" and snap["step"] == 8
    assert snap["readable"] == {"weights": True, "trainingState": True}
    download = client.get(f"/v1/snapshots/{snap['id']}/adapter", headers=admin)
    assert download.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(download.data), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["adapter_config.json", "adapter_model.safetensors"]


@pytest.mark.parametrize("fields, field, sentence", [
    ({"weights": "adapter"}, "weights", 'weights must be a JSON object or null, not the string "adapter"'),
    ({"weights": ["adapter"]}, "weights", "weights must be a JSON object or null, not a list"),
    ({"trainingState": 3}, "trainingState", "trainingState must be a JSON object or null, not 3"),
    ({"weights": {"path": "adapter"}}, "weights.format", "weights.format must be a non-empty string, not null"),
    ({"trainingState": {"format": ["hf-trainer"]}}, "trainingState.format",
     "trainingState.format must be a non-empty string, not a list"),
    ({"weights": {"format": "peft-safetensors", "path": "/etc"}}, "weights.path",
     'weights.path must be a relative path inside the snapshot directory, not the string "/etc"'),
    ({"weights": {"format": "peft-safetensors", "path": "../../x"}}, "weights.path",
     'weights.path must be a relative path inside the snapshot directory, not the string "../../x"'),
    ({"weights": {"format": "peft-safetensors", "path": None}}, "weights.path",
     "weights.path must be a relative path inside the snapshot directory, not null"),
    ({"layout": "2"}, "layout", 'layout must be a whole number of at least 1, not the string "2"'),
    ({"layout": True}, "layout", "layout must be a whole number of at least 1, not true"),
    ({"step": "8"}, "step", 'step must be a whole number of 0 or more, not the string "8"'),
    ({"step": -1}, "step", "step must be a whole number of 0 or more, not -1"),
    ({"step": 8.5}, "step", "step must be a whole number of 0 or more, not 8.5"),
    ({"gpus": 0}, "gpus", "gpus must be a whole number of at least 1, not 0"),
    ({"gpus": None}, "gpus", "gpus must be a whole number of at least 1, not null"),
    ({"gpus": {"count": 2}}, "gpus", "gpus must be a whole number of at least 1, not a JSON object"),
    ({"model": None}, "model", "model must be a non-empty string, not null"),
    ({"method": ["sft"]}, "method", "method must be a non-empty string, not a list"),
    ({"precision": ""}, "precision", 'precision must be a non-empty string, not the string ""'),
    ({"engine": 1}, "engine", "engine must be a string or null, not 1"),
    ({"run": {"id": "run-1"}}, "run", "run must be a string or null, not a JSON object"),
])
def test_a_manifest_field_of_the_wrong_type_is_a_400_naming_it(client, admin, tmp_path, fields, field, sentence):
    directory = snapshot_dir(tmp_path, **fields)
    resp = import_(client, admin, directory)
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "invalid"
    assert resp.json["error"]["message"] == f"{directory / 'snapshot.json'}: {sentence}"
    assert resp.json["error"]["details"]["manifestField"] == field
    assert client.get("/v1/snapshots", headers=admin).json["items"] == []  # nothing stored


def test_other_bad_paths_and_manifests(client, admin, tmp_path):
    resp = client.post("/v1/snapshots/import", headers=admin, json={"path": "~nosuchuser-xyz/snap"})
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == "path ~nosuchuser-xyz/snap must be absolute: the API reads it on its own machine"
    directory = snapshot_dir(tmp_path, gpus=...)
    resp = import_(client, admin, directory)
    assert resp.status_code == 400 and resp.json["error"]["message"] == f"{directory / 'snapshot.json'} lacks gpus"
    (directory / "snapshot.json").write_text('["layout", 2]')
    resp = import_(client, admin, directory)
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == f"{directory / 'snapshot.json'} is not a JSON object"
    assert client.get("/v1/snapshots", headers=admin).json["items"] == []


def test_a_snapshot_without_weights_imports_but_has_no_adapter_to_download(client, admin, tmp_path):
    resp = import_(client, admin, snapshot_dir(tmp_path, weights=None, trainingState=None))
    assert resp.status_code == 201, resp.json
    snap = resp.json
    assert snap["contents"] == {"weights": None, "trainingState": None}
    assert snap["readable"] == {"weights": False, "trainingState": False}
    download = client.get(f"/v1/snapshots/{snap['id']}/adapter", headers=admin)
    assert download.status_code == 404
    assert download.json["error"] == {
        "code": "not_found", "details": {"id": snap["id"]},
        "message": f"snapshot {snap['id']} holds no weights (its manifest lists none), so it has no adapter to download"}


def test_snapshots_stored_before_manifests_were_checked_still_read(client, admin, app):
    """A snapshot imported by an older API may hold parts that are not objects, or a weights path
    outside its directory: listing it works, its parts read as unreadable, and its adapter is a 404."""
    store = app.extensions["trainer"].store
    base = {"kind": "snapshot", "run": None, "workload": "runs", "step": 1, "layout": 2, "gpus": 1, "method": "sft",
            "engine": None, "precision": "fp32", "model": "builtin/tiny-qwen3", "final": False, "imported": True,
            "path": "imported/x", "detail": None}
    text = store.create({**base, "id": new_id(Kind.SNAPSHOT), "contents": {"weights": "adapter", "trainingState": []}})
    outside = store.create({**base, "id": new_id(Kind.SNAPSHOT),
                            "contents": {"weights": {"format": "peft-safetensors", "path": "../../.."},
                                         "trainingState": None}})
    listed = {s["id"]: s["readable"] for s in client.get("/v1/snapshots", headers=admin).json["items"]}
    assert listed[text["id"]] == {"weights": False, "trainingState": False}
    resp = client.get(f"/v1/snapshots/{text['id']}/adapter", headers=admin)
    assert resp.status_code == 404 and resp.json["error"]["message"] == (
        f"snapshot {text['id']} holds no weights (its manifest lists none), so it has no adapter to download")
    resp = client.get(f"/v1/snapshots/{outside['id']}/adapter", headers=admin)
    assert resp.status_code == 404
    assert resp.json["error"]["message"] == f"snapshot {outside['id']} has no adapter files on disk"


def tar_of(directory, *, gz=False, top=True) -> bytes:
    """The snapshot directory as an archive, as `training snapshots import` sends it (top: inside
    one top-level directory; else its files at the archive's root)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gz else "w") as tar:
        if top:
            tar.add(directory, arcname=directory.name)
        else:
            for child in directory.iterdir():
                tar.add(child, arcname=child.name)
    return buffer.getvalue()


def post_archive(client, headers, data: bytes, content_type="application/x-tar", **query):
    return client.post("/v1/snapshots/import", headers={**headers, "Content-Type": content_type},
                       query_string={"name": "snap.tar", **query}, data=data)


def imported_dirs(config):
    root = config.artifact_root / "imported"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


@pytest.mark.parametrize("gz, top, content_type", [
    (False, True, "application/x-tar"), (True, False, "application/gzip"), (True, True, "application/octet-stream")])
def test_an_uploaded_archive_is_unpacked_into_the_artifact_root(client, admin, tmp_path, config, gz, top, content_type):
    before = imported_dirs(config)
    resp = post_archive(client, admin, tar_of(snapshot_dir(tmp_path), gz=gz, top=top), content_type, workload="runs")
    assert resp.status_code == 201, resp.json
    snap = resp.json
    assert snap["source"] == "upload:snap.tar" and snap["readable"] == {"weights": True, "trainingState": True}
    assert imported_dirs(config) == sorted([*before, snap["id"]])  # nothing else left behind
    download = client.get(f"/v1/snapshots/{snap['id']}/adapter", headers=admin)
    with tarfile.open(fileobj=io.BytesIO(download.data), mode="r:gz") as tar:
        assert {m.name: tar.extractfile(m).read() for m in tar.getmembers()}["adapter_model.safetensors"] == b"weights"


def test_the_same_archive_as_a_multipart_file(client, admin, tmp_path):
    data = tar_of(snapshot_dir(tmp_path), gz=True)
    resp = client.post("/v1/snapshots/import", headers=admin, content_type="multipart/form-data",
                       data={"file": (io.BytesIO(data), "snap.tar.gz")})
    assert resp.status_code == 201 and resp.json["source"] == "upload:snap.tar.gz"


def test_archives_that_are_refused_leave_nothing_behind(client, admin, tmp_path, config):
    before, listed = imported_dirs(config), client.get("/v1/snapshots", headers=admin).json["items"]
    resp = post_archive(client, admin, b"not a tar at all" * 100)
    assert resp.status_code == 400 and resp.json["error"]["message"].startswith(
        "snap.tar is not a readable .tar or .tar.gz of a snapshot directory (")
    escape = io.BytesIO()
    with tarfile.open(fileobj=escape, mode="w") as tar:
        member = tarfile.TarInfo("../../escaped.txt")
        member.size = 2
        tar.addfile(member, io.BytesIO(b"hi"))
    resp = post_archive(client, admin, escape.getvalue())
    assert resp.status_code == 400 and resp.json["error"]["message"].startswith(
        "snap.tar holds a member the trainer will not unpack (")
    assert not (config.artifact_root / "escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()
    (tmp_path / "empty").mkdir()
    resp = post_archive(client, admin, tar_of(tmp_path / "empty"))
    assert resp.json["error"] == {"code": "invalid", "details": {"field": "file"}, "message": (
        "snap.tar holds no snapshot.json at its top or in its one top-level directory; "
        "a snapshot directory starts with its manifest")}
    bad = snapshot_dir(tmp_path, weights="adapter")
    resp = post_archive(client, admin, tar_of(bad))
    assert resp.status_code == 400 and resp.json["error"]["details"]["manifestField"] == "weights"
    resp = client.post("/v1/snapshots/import", headers=admin, json={"nothing": 1})
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        "a snapshot import is a multipart upload of `file` (a .tar or .tar.gz of the snapshot directory), "
        "or a JSON object with `path`, a directory on the API's own machine")
    assert imported_dirs(config) == before
    assert client.get("/v1/snapshots", headers=admin).json["items"] == listed


def test_an_archive_over_the_snapshot_limit_is_413(client, admin, tmp_path, config):
    from dataclasses import replace

    from services.api.app import create_app

    small = create_app(replace(config, max_snapshot_upload_bytes=1000)).test_client()
    data = tar_of(snapshot_dir(tmp_path))
    assert len(data) > 1000
    resp = post_archive(small, admin, data)
    assert resp.status_code == 413 and resp.json["error"] == {
        "code": "too_large", "details": {"maxBytes": 1000},
        "message": "the upload is larger than this deployment accepts (1000 bytes)"}
    # the snapshot limit, not the request-body limit (200,000 bytes in the tests), governs archives
    big = snapshot_dir(tmp_path / "big")
    (big / "adapter" / "adapter_model.safetensors").write_bytes(b"w" * 300_000)
    assert post_archive(client, admin, tar_of(big)).status_code == 201
