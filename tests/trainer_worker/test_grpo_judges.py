"""The worker's judge lookup for grpo runs (shared/rewards/judges.py `JudgeAddresses`), against real Redis."""

from __future__ import annotations

import pickle

from shared.rewards.judges import JudgeAddresses
from shared.store.documents import Store, connect
from shared.store.keys import Keys


def test_a_judge_has_an_address_only_while_ready_by_id_or_name(redis_url, key_prefix):
    store = Store(connect(redis_url), Keys(key_prefix))
    store.create({"id": "ep-judge1", "kind": "endpoint", "name": "grader", "phase": "READY",
                  "address": "http://127.0.0.1:9", "process": {"apiKey": "its-secret"}})
    store.create({"id": "ep-judge2", "kind": "endpoint", "name": "other", "phase": "STARTING", "address": None})
    addresses = JudgeAddresses(redis_url, key_prefix)
    assert addresses("ep-judge1") == addresses("grader") == ("http://127.0.0.1:9", "ep-judge1", "its-secret")
    assert addresses("ep-judge2") is None and addresses("other") is None and addresses("ep-none") is None

    def restarted(doc):
        doc["phase"], doc["address"] = "STARTING", None
        return doc

    store.update("ep-judge1", restarted)  # read fresh every time: a restarting judge has no address
    assert addresses("ep-judge1") is None
    # The ranks of a multi-device run unpickle their job, this included (without its connection).
    copy = pickle.loads(pickle.dumps(addresses))
    assert copy._store is None and copy("ep-judge2") is None
