"""A live worker for locksim: pottery's Redlock around a read-modify-write of the resource.

`locksim run --live pause.json` (the scenario beside this file) starts one of these per
client, in this directory, with the environment below, and judges what the resource saw.
Copy it and put your own lock code where the Redlock is.

LOCKSIM_CLIENT      this worker's name (client-1, ...)
LOCKSIM_REDIS_URLS  one redis:// URL per node, comma-separated (pottery's masters)
LOCKSIM_LOCK_KEY    the key to lock (pottery stores it as redlock:<key>)
LOCKSIM_TTL_MS      the lock's time to live
LOCKSIM_RESOURCE    the resource's redis:// URL (GET, SET, and the reports LOCKSIM.ACQUIRING,
                    LOCKSIM.REFUSED, LOCKSIM.FAILED, LOCKSIM.HELD, LOCKSIM.RELEASED)
LOCKSIM_WORK_MS     min,max of a critical section, in ms
LOCKSIM_THINK_MS    min,max of the pause between a release and the next acquire, in ms
LOCKSIM_SEED        seeds this worker's random choices
LOCKSIM_FENCING     master-incr: take a fencing token (INCR <key>:fence on the first node)
                    and present it to the resource; none: no token
"""

import os
import random
import sys
import time

import redis
from pottery import Redlock
from pottery.exceptions import PotteryError, PrimitiveError, QuorumIsImpossible
from redis.exceptions import RedisError


def ms_range(name):
    low, high = (int(part) for part in os.environ[name].split(","))
    return low, high


def main():
    client = os.environ["LOCKSIM_CLIENT"]
    urls = os.environ["LOCKSIM_REDIS_URLS"].split(",")
    masters = [redis.Redis.from_url(url, socket_timeout=1.0) for url in urls]
    resource = redis.Redis.from_url(os.environ["LOCKSIM_RESOURCE"], socket_timeout=5.0)
    key = os.environ["LOCKSIM_LOCK_KEY"]
    ttl_s = int(os.environ["LOCKSIM_TTL_MS"]) / 1000
    fencing = os.environ["LOCKSIM_FENCING"] == "master-incr"
    work_ms, think_ms = ms_range("LOCKSIM_WORK_MS"), ms_range("LOCKSIM_THINK_MS")
    rng = random.Random(int(os.environ["LOCKSIM_SEED"]))
    lock = Redlock(key=key, masters=set(masters), auto_release_time=ttl_s)
    while True:
        try:
            # Tell the resource we want the lock, and how each try ends: the deadlock,
            # liveness and starvation checkers judge the workers that wait.
            resource.execute_command("LOCKSIM.ACQUIRING", client)
            try:
                # raise_on_redis_errors: pottery swallows a master's RedisError unless asked;
                # asked, it raises QuorumIsImpossible once more than half the masters failed.
                acquired = lock.acquire(blocking=True, timeout=ttl_s * 2, raise_on_redis_errors=True)
            except QuorumIsImpossible as error:
                resource.execute_command("LOCKSIM.FAILED", client, repr(error))
                raise
            if not acquired:
                # The timeout ran out with most masters answering: they kept saying another
                # client holds the key (or a quorum came too late to leave any validity).
                resource.execute_command("LOCKSIM.REFUSED", client)
            else:
                try:
                    fence = [str(masters[0].incr(key + ":fence"))] if fencing else []
                    fenced = ["FENCE", *fence] if fence else []
                    # Tell the resource we hold the lock, then read, work, write back plus one.
                    resource.execute_command("LOCKSIM.HELD", client, lock._uuid, *fence)
                    value = int(resource.execute_command("GET", "counter", *fenced))
                    time.sleep(rng.uniform(*work_ms) / 1000)
                    resource.execute_command("SET", "counter", value + 1, *fenced)
                finally:
                    # Whatever happened, this worker no longer believes it holds the lock.
                    resource.execute_command("LOCKSIM.RELEASED", client)
                    lock.release()
        except (RedisError, PotteryError, PrimitiveError) as error:
            # A fault, a stale token refused, or a lock that expired under us: say so (live
            # mode keeps this output), think, try again.
            print(f"{client}: {error!r}", file=sys.stderr, flush=True)
        time.sleep(rng.uniform(*think_ms) / 1000)


if __name__ == "__main__":
    main()
