"""A live worker for locksim: python-redis-lock around a read-modify-write of the resource.

`locksim run --live pause.json` (the scenario beside this file) starts one of these per
client, in this directory, with the environment below, and judges what the resource saw.
Copy it and put your own lock code where the Lock is.

LOCKSIM_CLIENT      this worker's name (client-1, ...)
LOCKSIM_REDIS_URLS  one redis:// URL per node, comma-separated (this lock uses the first)
LOCKSIM_LOCK_KEY    the key to lock (python-redis-lock stores it as lock:<key>)
LOCKSIM_TTL_MS      the lock's time to live (python-redis-lock counts whole seconds)
LOCKSIM_RESOURCE    the resource's redis:// URL (GET, SET, and the reports LOCKSIM.ACQUIRING,
                    LOCKSIM.REFUSED, LOCKSIM.FAILED, LOCKSIM.HELD, LOCKSIM.RELEASED)
LOCKSIM_WORK_MS     min,max of a critical section, in ms
LOCKSIM_THINK_MS    min,max of the pause between a release and the next acquire, in ms
LOCKSIM_SEED        seeds this worker's random choices
LOCKSIM_FENCING     master-incr: take a fencing token (INCR <key>:fence on the node) and
                    present it to the resource; none: no token
"""

import os
import random
import sys
import time

import redis
import redis_lock
from redis.exceptions import RedisError


def ms_range(name):
    low, high = (int(part) for part in os.environ[name].split(","))
    return low, high


def main():
    client = os.environ["LOCKSIM_CLIENT"]
    node = redis.Redis.from_url(os.environ["LOCKSIM_REDIS_URLS"].split(",")[0], socket_timeout=5.0)
    resource = redis.Redis.from_url(os.environ["LOCKSIM_RESOURCE"], socket_timeout=5.0)
    key = os.environ["LOCKSIM_LOCK_KEY"]
    expire_s = max(1, round(int(os.environ["LOCKSIM_TTL_MS"]) / 1000))
    fencing = os.environ["LOCKSIM_FENCING"] == "master-incr"
    work_ms, think_ms = ms_range("LOCKSIM_WORK_MS"), ms_range("LOCKSIM_THINK_MS")
    rng = random.Random(int(os.environ["LOCKSIM_SEED"]))
    while True:
        lock = redis_lock.Lock(node, key, expire=expire_s)
        try:
            # Tell the resource we want the lock, and how each try ends: the deadlock,
            # liveness and starvation checkers judge the workers that wait.
            resource.execute_command("LOCKSIM.ACQUIRING", client)
            try:
                # SET NX, then waits on the lock's signal list (BLPOP) for at most one TTL.
                acquired = lock.acquire(blocking=True, timeout=expire_s)
            except RedisError as error:
                # The SET or the BLPOP got no answer (a timeout, a dropped connection).
                resource.execute_command("LOCKSIM.FAILED", client, repr(error))
                raise
            if not acquired:
                # False: the timeout ran out and the last SET NX found the key still there.
                resource.execute_command("LOCKSIM.REFUSED", client)
            else:
                try:
                    fence = [str(node.incr(key + ":fence"))] if fencing else []
                    fenced = ["FENCE", *fence] if fence else []
                    # Tell the resource we hold the lock, then read, work, write back plus one.
                    resource.execute_command("LOCKSIM.HELD", client, lock.id, *fence)
                    value = int(resource.execute_command("GET", "counter", *fenced))
                    time.sleep(rng.uniform(*work_ms) / 1000)
                    resource.execute_command("SET", "counter", value + 1, *fenced)
                finally:
                    # Whatever happened, this worker no longer believes it holds the lock.
                    resource.execute_command("LOCKSIM.RELEASED", client)
                    lock.release()
        except (RedisError, redis_lock.NotAcquired) as error:
            # A fault, a stale token refused, or a lock that expired under us: say so (live
            # mode keeps this output), think, try again.
            print(f"{client}: {error!r}", file=sys.stderr, flush=True)
        time.sleep(rng.uniform(*think_ms) / 1000)


if __name__ == "__main__":
    main()
