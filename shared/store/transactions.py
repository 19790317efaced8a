"""The one optimistic transaction of every read-modify-write in Redis: WATCH, read, MULTI, write,
and start over when a watched key changed in between (redis WatchError).

    def change(pipe):
        current = pipe.get(key)          # reads answer at once while watching
        if current == wanted:
            return current               # no MULTI: nothing is written
        pipe.multi()                     # from here commands queue, and go in together
        pipe.set(key, wanted)
        return wanted

    value = transact(client, change, key)

`change` may WATCH more keys it finds while reading (`pipe.watch(other)`, before `multi()`); it may
raise to refuse, and then nothing is written. It can run more than once: everything it decides
must come from what it read in that call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import redis

T = TypeVar("T")


def transact(client: redis.Redis, change: Callable[[Any], T], *watched: str) -> T:
    """Run `change(pipe)` under WATCH of `watched` until its writes go in unraced; its return value."""
    with client.pipeline() as pipe:
        while True:
            try:
                if watched:
                    pipe.watch(*watched)
                result = change(pipe)
                if pipe.explicit_transaction:
                    pipe.execute()
                elif pipe.watching:
                    pipe.unwatch()
                return result
            except redis.WatchError:
                pipe.reset()
                continue
