"""The artifact store's contract (shared/store/artifacts.py), on the local-disk implementation: what any
store (an S3-like one too) must do, so the services can rely on it."""

from __future__ import annotations

import io
import os
import threading

import pytest

from shared.store.artifacts import (
    ArtifactRoot,
    UnsafeKey,
    dataset_key,
    evaluation_rows_key,
    imported_snapshot_key,
    join,
    model_key,
    snapshot_key,
)


@pytest.fixture
def store(tmp_path):
    return ArtifactRoot(tmp_path / "root")


def a_directory(path, **files):
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return path


def test_put_dir_publishes_a_whole_directory_and_replaces_the_old_one(store, tmp_path):
    key = snapshot_key("run-1", 10)
    assert key == "runs/run-1/snapshots/step-000010"
    store.put_dir(a_directory(tmp_path / "a", **{"snapshot.json": "1", "adapter/w": "old"}), key)
    assert (tmp_path / "a").exists()  # copied: the source stays
    store.put_dir(a_directory(tmp_path / "b", **{"snapshot.json": "2"}), key, move=True)
    assert not (tmp_path / "b").exists()  # moved
    assert store.list(key) == [join(key, "snapshot.json")]  # nothing of the old one is left
    assert (store.get_dir(key) / "snapshot.json").read_text() == "2"
    assert oct(store.get_dir(key).stat().st_mode & 0o777) == "0o700"


def test_what_the_store_writes_is_readable_by_its_own_user_only(store, tmp_path):
    """Issue 26: a dataset (put_file) and a snapshot (put_dir, here from a folder whose files are
    0644 under 0755 folders, as a copy from elsewhere may be) come out 0600 files in 0700 folders,
    whatever the umask."""
    old = os.umask(0o022)
    try:
        source = a_directory(tmp_path / "open", **{"snapshot.json": "{}", "adapter/weights": "w"})
        for path in (source, source / "adapter", source / "snapshot.json", source / "adapter" / "weights"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        store.put_dir(source, snapshot_key("run-1", 1))
        store.put_file("datasets/ab/cd.jsonl", b"{}\n")
        store.scratch("runs/run-1/work")
    finally:
        os.umask(old)
    written = [store.root / p for p in ("runs", "runs/run-1", "runs/run-1/snapshots", snapshot_key("run-1", 1),
                                       join(snapshot_key("run-1", 1), "adapter"), "datasets", "datasets/ab",
                                       "runs/run-1/work")]
    assert {p.relative_to(store.root).as_posix(): oct(p.stat().st_mode & 0o777) for p in written} == {
        p.relative_to(store.root).as_posix(): "0o700" for p in written}
    files = [store.root / "datasets/ab/cd.jsonl", store.root / snapshot_key("run-1", 1) / "snapshot.json",
             store.root / snapshot_key("run-1", 1) / "adapter" / "weights"]
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {"0o600"}


def test_a_reader_finds_a_whole_directory_or_none_never_a_part(store, tmp_path):
    key = model_key("m")
    store.put_dir(a_directory(tmp_path / "v0", **{f"f{i}": "0" for i in range(20)}), key)
    seen, stop = [], threading.Event()

    def read():
        # A reader that opened the old directory may see it emptied once it is replaced: what must
        # hold is that the directory at the key, while it is at the key, is whole. An open directory
        # keeps its inode, so the same inode at the key after the listing means it was there throughout.
        while not stop.is_set():
            try:
                fd = os.open(store.get_dir(key), os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:  # between the old directory's rename and the new one's
                continue
            try:
                names = os.listdir(fd)
                try:
                    live = os.fstat(fd).st_ino == os.stat(store.get_dir(key)).st_ino
                except FileNotFoundError:
                    live = False
            finally:
                os.close(fd)
            if live:
                seen.append(len(names))

    reader = threading.Thread(target=read)
    reader.start()
    for version in range(1, 8):
        store.put_dir(a_directory(tmp_path / f"v{version}", **{f"f{i}": str(version) for i in range(20)}), key,
                      move=True)
    stop.set()
    reader.join()
    assert seen and set(seen) == {20}


def test_files_are_written_whole_from_bytes_or_a_stream_and_read_back(store):
    store.put_file(dataset_key("abc"), b"one\n")
    store.put_file(evaluation_rows_key("eval-1"), io.BytesIO(b"row\n" * 1000))
    with store.open("datasets/abc.jsonl") as f:
        assert f.read() == b"one\n"
    assert store.get_file(evaluation_rows_key("eval-1")).stat().st_size == 4000
    assert store.exists("evaluations/eval-1") and not store.exists("evaluations/eval-2")
    assert store.list("") == ["datasets/abc.jsonl", "evaluations/eval-1/rows.jsonl"]
    assert [name for name in os.listdir(store.get_dir("datasets"))] == ["abc.jsonl"]  # no temporary files left
    with pytest.raises(FileNotFoundError):
        store.open("datasets/none.jsonl")


def test_delete_takes_a_file_or_a_tree_and_minds_nothing_missing(store, tmp_path):
    store.put_dir(a_directory(tmp_path / "s", **{"a": "1", "b/c": "2"}), imported_snapshot_key("snap-1"))
    store.put_file("datasets/x.jsonl", b"x")
    store.delete("imported/snap-1")
    store.delete("datasets/x.jsonl")
    store.delete("datasets/never.jsonl")
    assert store.list("") == []


@pytest.mark.parametrize("key", ["/etc/passwd", "../outside", "runs/../../outside", "runs/..\\..\\x"])
def test_keys_that_climb_out_of_the_store_are_refused(store, key):
    with pytest.raises(UnsafeKey):
        store.path(key)
    with pytest.raises(UnsafeKey):
        store.open(key)


def test_a_symlink_inside_the_store_does_not_lead_out_of_it(store, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    store.scratch("imported")
    (store.root / "imported" / "link").symlink_to(secret)
    with pytest.raises(UnsafeKey):
        store.open("imported/link")
    assert store.list("imported") == []  # links are not listed as files of the store


def test_scratch_is_a_local_working_directory_at_the_key(store):
    directory = store.scratch("endpoints/ep-1")
    (directory / "server.log").write_text("started\n")
    with store.open("endpoints/ep-1/server.log") as f:  # on a local disk, readable at its key as it grows
        assert f.read() == b"started\n"
