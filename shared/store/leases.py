"""Keys that one process holds at a time, in Redis: the one set of scripts behind every lease of
the stack (a run's or evaluation's lease, services/trainer_worker/lease.py; a node's heartbeat,
services/trainer_worker/heartbeat.py; an endpoint manager's lease on its node,
services/endpoint_manager/manager.py).

A holder writes its own token into the key with a time to live, and renews it well before that runs
out; what it does with the key (take, hold, let go) it does only while the key holds its token, in
one script each, so that a holder that lost the key (paused, cut off, replaced) never disturbs the
one that holds it now.
"""

from __future__ import annotations

import redis

# Set the key to the token when no one holds it, or renew it when the token holds it.
_HOLD = """
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if held == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
# Renew the token's key; when it lapsed, take it again only while the fence key (KEYS[2]) still
# holds the holder's number, that is, while nobody else took (or re-queued) what it guards.
_RENEW_FENCED = """
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if held == false and redis.call('GET', KEYS[2]) == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 2
end
return 0
"""
# Replace the holder that was seen (a process known to be dead), and only it.
_REPLACE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def take(client: redis.Redis, key: str, token: str, ttl_ms: int) -> bool:
    """Hold the key if no one does. True also when it holds `token` already: a SET that Redis
    applied but whose answer a blip lost (and the client retried) finds its own token."""
    if client.set(key, token, nx=True, px=ttl_ms):
        return True
    return client.get(key) == token


def hold(client: redis.Redis, key: str, token: str, ttl_ms: int) -> bool:
    """Take the key if it is free, renew it if it is ours; False when another token holds it."""
    return bool(client.eval(_HOLD, 1, key, token, ttl_ms))


def renew_fenced(client: redis.Redis, key: str, token: str, ttl_ms: int, *, fence_key: str, fence: int) -> bool:
    """Renew the key, or take it back after it lapsed while `fence_key` still holds `fence`."""
    return bool(client.eval(_RENEW_FENCED, 2, key, fence_key, token, ttl_ms, fence))


def replace(client: redis.Redis, key: str, seen: str, token: str, ttl_ms: int) -> bool:
    """Take the key from the holder `seen` (one known to be gone), only if it still holds it."""
    return bool(client.eval(_REPLACE, 1, key, seen, token, ttl_ms))


def release(client: redis.Redis, key: str, token: str) -> bool:
    """Let the key go, only if it still holds `token`."""
    return bool(client.eval(_RELEASE, 1, key, token))
