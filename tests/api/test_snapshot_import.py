"""`POST /v1/snapshots/import` and `GET /v1/snapshots/ID/adapter` through the API, on snapshot
directories written by hand: every manifest field of the wrong type is a 400 naming it (and nothing
is stored), and a snapshot with no weights answers a 404 saying so. Importing directories that real
training wrote is tests/trainer_worker/engines/test_layout1.py and tests/e2e."""

from __future__ import annotations

import io
import json
import shutil
import tarfile

import pytest

from shared import reasons
from shared.store.ids import Kind, new_id

MANIFEST = {"layout": 2, "run": "run-elsewhere", "step": 8, "method": "sft", "engine": "sft-single",
            "precision": "fp32", "model": "builtin/tiny-qwen3", "gpus": 1, "release": "0.6.0",
            "weights": {"format": "peft-safetensors", "path": "adapter"},
            "trainingState": {"format": "hf-trainer", "path": "training_state"}}


def snapshot_dir(tmp_path, **fields):
    """A layout-2 snapshot directory whose manifest is MANIFEST with `fields` changed (`...` drops
    one); the adapter and training-state files hold placeholder bytes, which neither import nor
    download reads."""
    manifest = {k: v for k, v in {**MANIFEST, **fields}.items() if v is not ...}
    directory = tmp_path / "snap"
    (directory / "adapter").mkdir(parents=True)
    (directory / "adapter" / "adapter_config.json").write_text("{}")
    (directory / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    (directory / "training_state").mkdir()
    (directory / "training_state" / "optimizer.pt").write_bytes(b"optimizer")
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
    ({"weights": {"path": "adapter"}}, "weights.format", "weights.format must be a non-empty string of printable text (at most 256 characters), not null"),
    ({"trainingState": {"format": ["hf-trainer"]}}, "trainingState.format",
     "trainingState.format must be a non-empty string of printable text (at most 256 characters), not a list"),
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
    ({"model": None}, "model", "model must be a non-empty string of printable text (at most 256 characters), not null"),
    ({"method": ["sft"]}, "method", "method must be a non-empty string of printable text (at most 256 characters), not a list"),
    ({"precision": ""}, "precision", 'precision must be a non-empty string of printable text (at most 256 characters), not the string ""'),
    ({"engine": 1}, "engine", "engine must be a non-empty string of printable text (at most 256 characters) or null, not 1"),
    ({"run": {"id": "run-1"}}, "run", "run must be a non-empty string of printable text (at most 256 characters) or null, not a JSON object"),
    ({"model": "tiny\x1b[2J"}, "model", 'model must be a non-empty string of printable text (at most 256 characters), not the string "tiny\\u001b[2J"'),
    ({"model": "m" * 257}, "model", 'model must be a non-empty string of printable text (at most 256 characters), not the string "' + "m" * 57 + '..."'),
    ({"trainingState": {"format": "hf\ntrainer"}}, "trainingState.format",
     'trainingState.format must be a non-empty string of printable text (at most 256 characters), not the string "hf\\ntrainer"'),
])
def test_a_manifest_field_of_the_wrong_type_is_a_400_naming_it(client, admin, tmp_path, fields, field, sentence):
    directory = snapshot_dir(tmp_path, **fields)
    resp = import_(client, admin, directory)
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "invalid"
    assert resp.json["error"]["message"] == f"snapshot.json: {sentence}"  # never the server's path
    assert resp.json["error"]["details"] == {"file": "snapshot.json", "manifestField": field}
    assert client.get("/v1/snapshots", headers=admin).json["items"] == []  # nothing stored


def test_other_bad_paths_and_manifests(client, admin, tmp_path):
    resp = client.post("/v1/snapshots/import", headers=admin, json={"path": "~nosuchuser-xyz/snap"})
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == "path ~nosuchuser-xyz/snap must be absolute: the API reads it on its own machine"
    directory = snapshot_dir(tmp_path, gpus=...)
    resp = import_(client, admin, directory)
    assert resp.status_code == 400 and resp.json["error"]["message"] == "snapshot.json lacks gpus"
    (directory / "snapshot.json").write_text('["layout", 2]')
    resp = import_(client, admin, directory)
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == "snapshot.json is not a JSON object"
    assert client.get("/v1/snapshots", headers=admin).json["items"] == []


def test_a_snapshot_without_weights_imports_but_has_no_adapter_to_download(client, admin, tmp_path):
    directory = snapshot_dir(tmp_path, weights=None, trainingState=None)
    for part in ("adapter", "training_state"):  # a manifest that declares no parts holds no files
        shutil.rmtree(directory / part)
    resp = import_(client, admin, directory)
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


# --- Hostile imports (issue 14): a path is for admins, under an import root, and holds plain files only

def test_a_workload_token_may_not_import_by_path(client, team, tmp_path):
    resp = client.post("/v1/snapshots/import", headers=team, json={"path": str(snapshot_dir(tmp_path))})
    assert resp.status_code == 403 and resp.json["error"] == {
        "code": "forbidden", "details": {"field": "path"}, "message": reasons.SNAPSHOT_PATH_IMPORT_ADMIN_ONLY}
    assert reasons.SNAPSHOT_PATH_IMPORT_ADMIN_ONLY == (
        "importing a snapshot by a path on the API's machine needs an admin token; upload the directory "
        "instead (`training snapshots import DIR`)")


def test_a_path_outside_every_import_root_is_refused(config, admin, tmp_path):
    from dataclasses import replace

    from services.api.app import create_app

    confined = create_app(replace(config, snapshot_import_roots=(tmp_path / "allowed",))).test_client()
    (tmp_path / "allowed").mkdir()
    resp = import_(confined, admin, snapshot_dir(tmp_path))
    assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.snapshot_path_outside_roots(
        str(tmp_path / "snap"), [str(tmp_path / "allowed")])
    climbing = tmp_path / "allowed" / ".." / "snap"
    assert import_(confined, admin, climbing).status_code == 400  # `..` is resolved before the check
    closed = create_app(replace(config, snapshot_import_roots=())).test_client()
    resp = import_(closed, admin, tmp_path / "snap")
    assert resp.status_code == 403 and resp.json["error"]["message"] == reasons.SNAPSHOT_PATH_IMPORT_OFF
    assert reasons.snapshot_path_outside_roots("/x/snap", ["/a", "/b"]) == (
        "path /x/snap is not inside a snapshot import root of this deployment (/a, /b); its deployment "
        "config lists them under snapshotImportRoots")


def test_a_directory_holding_a_link_is_refused_and_nothing_is_stored(client, admin, tmp_path, config):
    secret = tmp_path / "secret.txt"
    secret.write_text("the API user's secret")
    before, listed = imported_dirs(config), client.get("/v1/snapshots", headers=admin).json["items"]
    linked = snapshot_dir(tmp_path)
    (linked / "adapter" / "adapter_model.safetensors").unlink()
    (linked / "adapter" / "adapter_model.safetensors").symlink_to(secret)
    resp = import_(client, admin, linked)
    assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.snapshot_path_not_plain(
        str(linked), "adapter/adapter_model.safetensors")
    assert reasons.snapshot_path_not_plain("/p", "adapter/x") == (
        "adapter/x in /p is a symbolic link or not a plain file; a snapshot directory holds plain files and "
        "directories only")
    via_link = tmp_path / "via-link"
    via_link.symlink_to(snapshot_dir(tmp_path / "real"))
    assert import_(client, admin, via_link).status_code == 400
    manifest_link = snapshot_dir(tmp_path / "m")
    (tmp_path / "elsewhere.json").write_text((manifest_link / "snapshot.json").read_text())
    (manifest_link / "snapshot.json").unlink()
    (manifest_link / "snapshot.json").symlink_to(tmp_path / "elsewhere.json")
    assert import_(client, admin, manifest_link).json["error"]["message"] == reasons.snapshot_path_not_plain(
        str(manifest_link), "snapshot.json")
    assert imported_dirs(config) == before
    assert client.get("/v1/snapshots", headers=admin).json["items"] == listed


def test_an_archive_that_unpacks_too_big_or_into_too_many_files_is_413(config, admin, tmp_path):
    from dataclasses import replace

    from services.api.app import create_app

    bomb = snapshot_dir(tmp_path)
    (bomb / "adapter" / "adapter_model.safetensors").write_bytes(b"\0" * 2_000_000)  # gzips to a few KB
    data = tar_of(bomb, gz=True)
    assert len(data) < 20_000
    small = create_app(replace(config, max_snapshot_unpacked_bytes=1_000_000)).test_client()
    before = imported_dirs(config)
    resp = post_archive(small, admin, data, "application/gzip")
    assert resp.status_code == 413 and resp.json["error"] == {
        "code": "too_large", "details": {"field": "file", "maxUnpackedBytes": 1_000_000},
        "message": "snap.tar unpacks to more than this deployment accepts (1000000 bytes unpacked)"}
    few = create_app(replace(config, max_snapshot_files=3)).test_client()
    resp = post_archive(few, admin, tar_of(snapshot_dir(tmp_path / "many")))
    assert resp.status_code == 413 and resp.json["error"]["message"] == reasons.snapshot_archive_too_many_files(
        "snap.tar", 3) == "snap.tar holds more files than a snapshot directory may (3)"
    assert imported_dirs(config) == before


def test_an_archive_holding_a_link_is_refused(client, admin, tmp_path, config):
    linked = snapshot_dir(tmp_path)
    (linked / "adapter" / "adapter_model.safetensors").unlink()
    (linked / "adapter" / "adapter_model.safetensors").symlink_to("../snapshot.json")  # inside, yet a link
    before = imported_dirs(config)
    resp = post_archive(client, admin, tar_of(linked))
    assert resp.status_code == 400 and resp.json["error"]["message"].startswith(
        "snap.tar holds a member the trainer will not unpack (snap/adapter/adapter_model.safetensors is not a "
        "plain file or directory)")
    assert imported_dirs(config) == before


# --- Damaged imports (issue 14): a manifest that lists its files is held to them

def test_an_import_whose_listed_files_differ_is_refused_naming_the_file(client, admin, tmp_path, config):
    from shared.snapshots.files import record

    directory = snapshot_dir(tmp_path)
    listed = record(directory)
    (directory / "snapshot.json").write_text(json.dumps({**MANIFEST, "files": listed}))
    before = imported_dirs(config)
    (directory / "adapter" / "adapter_model.safetensors").write_bytes(b"weig")
    resp = import_(client, admin, directory)
    assert resp.status_code == 400 and resp.json["error"] == {
        "code": "invalid", "details": {"field": "path", "file": "adapter/adapter_model.safetensors"},
        "message": reasons.snapshot_import_damaged(str(directory), "adapter/adapter_model.safetensors",
                                                   "has 4 bytes; the snapshot recorded 7 bytes")}
    assert resp.json["error"]["message"] == (
        f"the snapshot directory {directory} is damaged: its file adapter/adapter_model.safetensors has 4 bytes; "
        "the snapshot recorded 7 bytes")
    assert imported_dirs(config) == before and client.get("/v1/snapshots", headers=admin).json["items"] == []

    (directory / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")  # intact again
    resp = import_(client, admin, directory)
    assert resp.status_code == 201 and resp.json["files"] == listed


# --- Imports held to their manifest (issue 26): what it declares and no more; read as hostile JSON

def listed_dir(tmp_path, **fields):
    """A snapshot directory whose manifest lists its files, as this release writes them."""
    from shared.snapshots.files import record

    directory = snapshot_dir(tmp_path, **fields)
    (directory / "snapshot.json").write_text(json.dumps({**MANIFEST, **fields, "files": record(directory)}))
    return directory


def leftovers(config) -> list[str]:
    return sorted(p.name for p in (config.artifact_root / "imported").rglob(".incoming-*"))


def test_a_file_outside_every_part_is_refused_whether_or_not_the_manifest_lists_files(client, admin, tmp_path,
                                                                                      config):
    before = imported_dirs(config)
    for directory in (snapshot_dir(tmp_path / "plain"), listed_dir(tmp_path / "listed")):
        (directory / "zeros.bin").write_bytes(b"\0" * 1000)
        resp = post_archive(client, admin, tar_of(directory))
        assert resp.status_code == 400 and resp.json["error"] == {
            "code": "invalid", "details": {"field": "file", "file": "zeros.bin"},
            "message": reasons.snapshot_archive_outside_parts("snap.tar", "zeros.bin", ["adapter/", "training_state/"])}
        resp = import_(client, admin, directory)  # by path too
        assert resp.status_code == 400 and resp.json["error"]["details"] == {"field": "path", "file": "zeros.bin"}
    assert reasons.snapshot_archive_outside_parts("s.tar", "x", ["adapter/"]) == (
        "s.tar holds x, which is in no part of the snapshot (its parts lie in adapter/); a snapshot directory "
        "holds its manifest and its parts' files only")
    assert imported_dirs(config) == before and leftovers(config) == []


def test_an_unlisted_file_inside_a_part_is_refused_when_the_manifest_lists_files(client, admin, tmp_path, config):
    before = imported_dirs(config)
    directory = listed_dir(tmp_path)
    (directory / "adapter" / "extra.bin").write_bytes(b"\0" * 1000)
    resp = post_archive(client, admin, tar_of(directory))  # the manifest comes after adapter/ here: checked then
    assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.snapshot_archive_unlisted(
        "snap.tar", "adapter/extra.bin")
    resp = import_(client, admin, directory)
    assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.snapshot_archive_unlisted(
        str(directory), "adapter/extra.bin")
    assert imported_dirs(config) == before and leftovers(config) == []
    (directory / "adapter" / "extra.bin").unlink()
    resp = post_archive(client, admin, tar_of(directory))
    assert resp.status_code == 201 and resp.json["files"] == json.loads((directory / "snapshot.json").read_text())["files"]


def test_a_listed_file_of_another_size_stops_the_archive_at_that_member(client, admin, tmp_path, config):
    directory = listed_dir(tmp_path)
    (directory / "adapter" / "adapter_model.safetensors").write_bytes(b"weights and more")
    resp = post_archive(client, admin, tar_of(directory))
    assert resp.status_code == 400 and resp.json["error"] == {
        "code": "invalid", "details": {"field": "file", "file": "adapter/adapter_model.safetensors"},
        "message": "the snapshot directory snap.tar is damaged: its file adapter/adapter_model.safetensors has "
                   "16 bytes; the snapshot recorded 7 bytes"}
    assert leftovers(config) == []


def test_a_manifest_declaring_more_than_the_deployment_takes_is_413_before_any_file(config, admin, tmp_path):
    small = create_app_with(config, max_snapshot_unpacked_bytes=1000)
    directory = listed_dir(tmp_path)
    manifest = json.loads((directory / "snapshot.json").read_text())
    manifest["files"]["adapter/adapter_model.safetensors"]["bytes"] = 5000
    (directory / "snapshot.json").write_text(json.dumps(manifest))
    resp = post_archive(small, admin, tar_of(directory))
    declared = sum(f["bytes"] for f in manifest["files"].values())
    assert resp.status_code == 413 and resp.json["error"] == {
        "code": "too_large", "details": {"field": "file", "maxUnpackedBytes": 1000, "declaredBytes": declared},
        "message": f"snap.tar's manifest lists {declared} bytes of files, more than this deployment accepts "
                   "(1000 bytes unpacked)"}


def test_members_outside_the_snapshot_directory_or_twice_are_refused(client, admin, tmp_path, config):
    directory = listed_dir(tmp_path)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(directory, arcname="snap")
        tar.add(directory / "adapter" / "adapter_config.json", arcname="other/adapter_config.json")
    resp = post_archive(client, admin, buffer.getvalue())
    assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.snapshot_archive_outside_root(
        "snap.tar", "other/adapter_config.json", "snap")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(directory, arcname="snap")
        tar.add(directory / "adapter" / "adapter_config.json", arcname="snap/adapter/adapter_config.json")
    resp = post_archive(client, admin, buffer.getvalue())
    assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.snapshot_archive_twice(
        "snap.tar", "adapter/adapter_config.json")
    assert leftovers(config) == []


def create_app_with(config, **limits):
    from dataclasses import replace

    from services.api.app import create_app

    return create_app(replace(config, **limits)).test_client()


@pytest.mark.parametrize("text, message, field", [
    ('{"layout": ' + "[" * 200_000 + "]" * 200_000 + "}", "snapshot.json nests lists and objects more than 64 "
     "levels deep", None),
    (json.dumps({**MANIFEST, "model": "x"}).replace('"x"', '"tiny\\ud800"'), "snapshot.json: model holds a lone "
     "surrogate (\\ud800), which is not text; a surrogate escape must be half of a pair", "model"),
    (json.dumps({**MANIFEST, "step": 1}).replace('"step": 1', '"step": NaN'), "snapshot.json: step is NaN, which is "
     "not a finite number; every number must be finite", "step"),
    (json.dumps({**MANIFEST, "gpus": 1}).replace('"gpus": 1', '"gpus": ' + "9" * 5000), "snapshot.json: gpus is a "
     "whole number of 5000 digits; a number may have at most 4300", "gpus"),
])
def test_a_hostile_manifest_is_a_400_naming_its_field_by_path_and_by_archive(client, admin, tmp_path, config,
                                                                            text, message, field):
    directory = snapshot_dir(tmp_path)
    (directory / "snapshot.json").write_text(text)
    for resp in (import_(client, admin, directory), post_archive(client, admin, tar_of(directory))):
        assert resp.status_code == 400 and resp.json["error"]["message"] == message
        assert resp.json["error"]["details"]["manifestField"] == field
    listed = client.get("/v1/snapshots", headers=admin)
    assert listed.status_code == 200 and listed.json["items"] == []


def test_refusals_never_show_where_the_api_unpacks(client, admin, tmp_path, config):
    escape = io.BytesIO()
    with tarfile.open(fileobj=escape, mode="w") as tar:
        member = tarfile.TarInfo("../../escaped.txt")
        member.size = 2
        tar.addfile(member, io.BytesIO(b"hi"))
    resp = post_archive(client, admin, escape.getvalue())
    assert resp.json["error"]["message"] == reasons.snapshot_archive_unsafe(
        "snap.tar", "../../escaped.txt would land outside the snapshot directory")
    bad = snapshot_dir(tmp_path, layout="2")
    for resp in (resp, post_archive(client, admin, tar_of(bad)), import_(client, admin, bad),
                 post_archive(client, admin, tar_of(snapshot_dir(tmp_path / "m", model=...)))):
        assert resp.status_code == 400
        assert str(config.artifact_root) not in json.dumps(resp.json) and str(tmp_path) not in json.dumps(resp.json)


@pytest.mark.parametrize("text, problem", [
    ("[" * 200_000 + "]" * 200_000, "nests lists and objects more than 64 levels deep"),
    ('{"r": NaN}', "has r, which is NaN, which is not a finite number; every number must be finite"),
    ('["r", 8]', "is not a JSON object"),
])
def test_an_adapter_config_no_reader_could_take_is_refused_at_import(client, admin, tmp_path, config, text, problem):
    directory = snapshot_dir(tmp_path)
    (directory / "adapter" / "adapter_config.json").write_text(text)
    before = imported_dirs(config)
    for resp in (import_(client, admin, directory), post_archive(client, admin, tar_of(directory))):
        assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.adapter_config_refused(
            "adapter/adapter_config.json", problem)
        assert resp.json["error"]["details"]["file"] == "adapter/adapter_config.json"
    assert reasons.adapter_config_refused("a/adapter_config.json", "is not a JSON object") == (
        "a/adapter_config.json is not a JSON object; an adapter config is a JSON object of PEFT's settings")
    assert imported_dirs(config) == before


def test_a_manifest_past_4_mib_is_refused_unread(client, admin, tmp_path):
    from shared.snapshots.manifest import MAX_MANIFEST_BYTES

    directory = snapshot_dir(tmp_path)
    (directory / "snapshot.json").write_text(json.dumps(MANIFEST) + " " * MAX_MANIFEST_BYTES)
    for resp in (import_(client, admin, directory), post_archive(client, admin, tar_of(directory))):
        assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.manifest_too_large(
            MAX_MANIFEST_BYTES)
