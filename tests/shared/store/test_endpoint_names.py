"""The endpoint name index (shared/store/endpoint_names.py) against a real Redis: it stays in step with
the endpoints through creation, ending, re-creation of a name and another workload's same name; two
creations of one name never both succeed; a store written before the index is indexed from its
documents; and a lookup costs the same Redis work whether the name is known, unknown or another
workload's (issue 26: an unknown name cost a scan of every endpoint). No timing is measured here:
bench/endpoint_names.py measures it."""

from __future__ import annotations

import threading

import pytest

from shared.errors import Conflict
from shared.store import endpoint_names
from shared.store.documents import Store, connect
from shared.store.endpoint_names import create_endpoint_doc, ensure_name_index, find_endpoint, live_named
from shared.store.ids import Kind, new_id


@pytest.fixture
def store(redis_url, keys):
    client = connect(redis_url)
    yield Store(client, keys)
    client.close()


def endpoint(store, name, workload="team-a", *, phase="QUEUED", indexed=True) -> dict:
    doc = {"id": new_id(Kind.ENDPOINT), "kind": "endpoint", "name": name, "workload": workload, "phase": phase}
    return create_endpoint_doc(store, doc) if indexed else store.create(doc)


def end(store, doc) -> None:
    store.update(doc["id"], lambda d: {**d, "phase": "TERMINATED"})


def found(store, name, workloads=None):
    doc = find_endpoint(store, name, workloads=workloads)
    return doc["id"] if doc else None


def test_create_end_and_create_again_keep_the_index_in_step(store, keys):
    first = endpoint(store, "chat")
    assert store.redis.hget(keys.endpoint_name_index("team-a"), "chat") == first["id"]
    assert found(store, "chat", ["team-a"]) == first["id"] and found(store, "chat") == first["id"]
    assert found(store, "chat", ["team-b"]) is None  # another workload's view: no such name
    with pytest.raises(Conflict) as taken:
        endpoint(store, "chat")
    assert taken.value.details == {"field": "name", "endpoint": first["id"]}

    end(store, first)  # stopped: the name is free, and names nothing
    assert found(store, "chat", ["team-a"]) is None and live_named(store, "chat") == []
    second = endpoint(store, "chat")
    assert store.redis.hget(keys.endpoint_name_index("team-a"), "chat") == second["id"]
    assert found(store, "chat", ["team-a"]) == second["id"]
    assert found(store, first["id"]) == first["id"]  # an ended one is still found by its id


def test_another_workloads_same_name_is_its_own(store):
    mine, theirs = endpoint(store, "judge", "team-a"), endpoint(store, "judge", "team-b")
    assert found(store, "judge", ["team-a"]) == mine["id"] and found(store, "judge", ["team-b"]) == theirs["id"]
    with pytest.raises(Conflict) as ambiguous:
        found(store, "judge")  # an admin sees both: the id is needed
    assert ambiguous.value.details == {"name": "judge", "workloads": ["team-a", "team-b"]}
    with pytest.raises(Conflict):
        found(store, "judge", ["team-a", "team-b"])  # a token of both workloads too
    end(store, theirs)
    assert found(store, "judge") == mine["id"]
    assert found(store, "judge", []) is None  # a token of no workload sees no name


def test_two_creations_of_one_name_never_both_succeed(store):
    made, refused = [], []

    def create():
        try:
            made.append(endpoint(store, "race"))
        except Conflict:
            refused.append(1)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(refused) == 7
    assert found(store, "race", ["team-a"]) == made[0]["id"]


def test_a_store_written_before_the_index_is_indexed_from_its_documents(store, keys):
    endpoint_names._ensured.clear()
    store.redis.delete(keys.endpoint_name_index_version())
    old = endpoint(store, "old", indexed=False)
    ended = endpoint(store, "gone", indexed=False, phase="TERMINATED")
    theirs = endpoint(store, "old", "team-b", indexed=False)
    store.redis.sadd(keys.legacy_endpoint_names("old"), old["id"], theirs["id"])  # the hint sets of before
    assert ensure_name_index(store) is True
    assert store.redis.hgetall(keys.endpoint_name_index("team-a")) == {"old": old["id"]}  # not the ended one
    assert store.redis.hgetall(keys.endpoint_name_index("team-b")) == {"old": theirs["id"]}
    assert not store.redis.exists(keys.legacy_endpoint_names("old"))
    assert found(store, "old", ["team-a"]) == old["id"] and found(store, "gone", ["team-a"]) is None
    assert ensure_name_index(store) is False  # once
    assert ended["phase"] == "TERMINATED"


def test_a_rebuild_never_replaces_an_endpoint_created_meanwhile(store, keys):
    ensure_name_index(store)
    seen = endpoint(store, "chat", indexed=False)  # what a rebuild read from the documents ...
    fresh = endpoint(store, "chat")  # ... while this one was created through the index
    endpoint_names._index_if_free(store, "team-a", "chat", seen["id"])  # the rebuild's write comes late
    assert store.redis.hget(keys.endpoint_name_index("team-a"), "chat") == fresh["id"]
    end(store, fresh)
    endpoint_names._index_if_free(store, "team-a", "chat", seen["id"])  # an ended entry is replaced
    assert store.redis.hget(keys.endpoint_name_index("team-a"), "chat") == seen["id"]


def test_known_unknown_and_another_workloads_names_cost_the_same_commands(store, monkeypatch):
    endpoint(store, "mine", "team-a")
    endpoint(store, "theirs", "team-b")
    find_endpoint(store, "warm-up", workloads=["team-a"])  # the one-time check that the index is built
    sent: list[str] = []
    execute = store.redis.execute_command

    def counted(*args, **kwargs):
        sent.append(str(args[0]))
        return execute(*args, **kwargs)

    monkeypatch.setattr(store.redis, "execute_command", counted)
    costs = {}
    for name in ("mine", "no-such-name", "theirs"):
        sent.clear()
        find_endpoint(store, name, workloads=["team-a"])
        costs[name] = list(sent)
    assert costs["mine"] == costs["no-such-name"] == costs["theirs"] == ["EVAL"], costs  # one script, no scan
