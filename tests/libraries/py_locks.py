"""Real Python lock libraries' own code against one Redis server (redis://host:port): prints one JSON line of outcomes.

The Rust test (tests/real/real_libraries.rs) runs this against redis-server 7.0 and against
`locksim serve` and requires the same outcomes from both, and the outcomes a correct server
gives. Every step's result is timing-free: who holds, who is refused, what is left behind.
"""

import json
import sys
import threading
import time

import redis
import redis_lock
from pottery import Redlock


def redis_py_lock(url, out):
    a = redis.Redis.from_url(url)
    b = redis.Redis.from_url(url)
    la = a.lock("rp:lock", timeout=5)
    lb = b.lock("rp:lock", timeout=5)
    out["a acquires"] = la.acquire(blocking=False)
    out["b is refused"] = not lb.acquire(blocking=False)
    out["a extends"] = la.extend(2)
    out["a still owns"] = la.owned()
    la.release()
    out["key gone after release"] = a.exists("rp:lock") == 0
    out["b acquires"] = lb.acquire(blocking=True, blocking_timeout=1)
    lb.release()
    try:
        lb.release()
        out["double release refused"] = False
    except redis.exceptions.LockError:
        out["double release refused"] = True


def python_redis_lock(url, out):
    a = redis.Redis.from_url(url)
    b = redis.Redis.from_url(url)
    la = redis_lock.Lock(a, "prl", expire=5, id=b"holder-a")
    lb = redis_lock.Lock(b, "prl", expire=5, id=b"holder-b")
    out["a acquires"] = la.acquire(blocking=False)
    out["b is refused"] = not lb.acquire(blocking=False)
    out["a extends"] = la.extend(expire=5) is None
    # A waiter blocks on the signal list (BLPOP); a release wakes it long before its
    # 4 s timeout (the library caps the timeout at the lock's expiry).
    woken = {}

    def wait():
        started = time.monotonic()
        woken["got it"] = lb.acquire(blocking=True, timeout=4)
        woken["within 3 s"] = time.monotonic() - started < 3

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)
    la.release()
    waiter.join()
    out["waiter woken by release"] = woken["got it"] and woken["within 3 s"]
    lb.release()
    out["lock key gone"] = a.exists("lock:prl") == 0
    out["signal list expires"] = 0 < a.pttl("lock-signal:prl") <= 1000 or a.exists("lock-signal:prl") == 0


def pottery_redlock(url, out):
    masters = {redis.Redis.from_url(url)}
    a = Redlock(key="pl", masters=masters, auto_release_time=5)
    b = Redlock(key="pl", masters=masters, auto_release_time=5)
    out["a acquires"] = a.acquire(blocking=False)
    out["b is refused"] = not b.acquire(blocking=False)
    out["a locked"] = a.locked() > 0
    a.release()
    out["b acquires"] = b.acquire(blocking=False)
    b.release()
    out["key gone"] = redis.Redis.from_url(url).exists("redlock:pl") == 0


def main():
    url = sys.argv[1] + "/0"
    results = {}
    for name, run in [
        ("redis-py Lock", redis_py_lock),
        ("python-redis-lock", python_redis_lock),
        ("pottery Redlock", pottery_redlock),
    ]:
        out = {}
        try:
            run(url, out)
        except Exception as error:  # the outcome is what the library did, error included
            out["error"] = f"{type(error).__name__}: {error}"
        results[name] = out
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
