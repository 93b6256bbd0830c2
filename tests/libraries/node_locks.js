// Real Node lock libraries' own code against one Redis URL: prints one JSON line of outcomes.
//
// The Rust test (tests/real/real_libraries.rs) runs this against redis-server 7.0 and against
// `locksim serve` and requires the same outcomes from both, and the outcomes a correct server
// gives. Every step's result is timing-free: who holds, who is refused, what is left behind.

const Redis = require("ioredis");
const Redlock = require("redlock").default;
const SesameRedlock = require("@sesamecare-oss/redlock").Redlock;
const { Mutex, Semaphore, RedlockMutex } = require("redis-semaphore");

// The server's address, redis://host:port; a client of database N appends /N.
const server = process.argv[2];
const clients = [];
function client(db = 0) {
  const c = new Redis(`${server}/${db}`, { maxRetriesPerRequest: 1, enableOfflineQueue: true });
  clients.push(c);
  return c;
}

async function refused(promise) {
  try {
    await promise;
    return false;
  } catch (_) {
    return true;
  }
}

async function redlockLike(Kind, out) {
  const redis = client();
  const settings = { retryCount: 0 };
  const a = new Kind([redis], settings);
  const b = new Kind([redis], settings);
  a.on("error", () => {});
  b.on("error", () => {});
  const lock = await a.acquire(["rl:a", "rl:b"], 5000);
  out["a acquires two keys"] = (await redis.exists("rl:a", "rl:b")) === 2;
  out["b is refused"] = await refused(b.acquire(["rl:b"], 5000));
  const extended = await lock.extend(5000);
  out["a extends"] = (await redis.pttl("rl:a")) > 4000;
  await extended.release();
  out["keys gone after release"] = (await redis.exists("rl:a", "rl:b")) === 0;
  const again = await b.acquire(["rl:b"], 5000);
  out["b acquires"] = (await redis.exists("rl:b")) === 1;
  await again.release();
  // A script cache flushed under the library: EVALSHA gets NOSCRIPT and it falls back to EVAL.
  await redis.script("FLUSH");
  const afterFlush = await a.acquire(["rl:c"], 5000);
  out["acquires after SCRIPT FLUSH"] = (await redis.exists("rl:c")) === 1;
  await afterFlush.release();
}

async function mutex(out) {
  const redis = client();
  const options = { lockTimeout: 5000, acquireTimeout: 300, retryInterval: 10, refreshInterval: 0 };
  const a = new Mutex(redis, "m", options);
  const b = new Mutex(redis, "m", options);
  out["a acquires"] = await a.tryAcquire();
  out["b is refused"] = !(await b.tryAcquire());
  await a.release();
  out["key gone after release"] = (await redis.exists("mutex:m")) === 0;
  out["b acquires"] = await b.tryAcquire();
  await b.release();
}

async function semaphore(out) {
  const redis = client();
  const options = { lockTimeout: 5000, acquireTimeout: 300, retryInterval: 10, refreshInterval: 0 };
  const holders = [1, 2, 3].map(() => new Semaphore(redis, "s", 2, options));
  out["first acquires"] = await holders[0].tryAcquire();
  out["second acquires"] = await holders[1].tryAcquire();
  out["third is refused at the limit"] = !(await holders[2].tryAcquire());
  out["two members"] = (await redis.zcard("semaphore:s")) === 2;
  await holders[0].release();
  out["third acquires after a release"] = await holders[2].tryAcquire();
  await holders[1].release();
  await holders[2].release();
  out["set gone or empty"] = (await redis.zcard("semaphore:s")) === 0;
}

async function redlockMutex(out) {
  // Three "nodes": three databases of the one server (SELECT 0, 1, 2).
  const redis = [client(0), client(1), client(2)];
  const options = { lockTimeout: 5000, acquireTimeout: 300, retryInterval: 10, refreshInterval: 0 };
  const a = new RedlockMutex(redis, "rm", options);
  const b = new RedlockMutex(redis, "rm", options);
  out["a acquires"] = await a.tryAcquire();
  out["b is refused"] = !(await b.tryAcquire());
  await a.release();
  out["b acquires"] = await b.tryAcquire();
  await b.release();
}

async function main() {
  const results = {};
  for (const [name, run] of [
    ["node-redlock v5", (out) => redlockLike(Redlock, out)],
    ["@sesamecare-oss/redlock", (out) => redlockLike(SesameRedlock, out)],
    ["redis-semaphore Mutex", mutex],
    ["redis-semaphore Semaphore", semaphore],
    ["redis-semaphore RedlockMutex", redlockMutex],
  ]) {
    const out = {};
    try {
      await run(out);
    } catch (error) {
      // The outcome is what the library did, error included.
      out["error"] = `${error.name}: ${error.message}`;
    }
    results[name] = Object.fromEntries(Object.entries(out).sort());
  }
  console.log(JSON.stringify(Object.fromEntries(Object.entries(results).sort())));
  for (const c of clients) c.disconnect();
}

main();
