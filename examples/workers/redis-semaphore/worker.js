// A live worker for locksim: redis-semaphore's Mutex (on ioredis) around a read-modify-write
// of the resource.
//
// `locksim run --live pause.json` (the scenario beside this file) starts one of these per
// client, in this directory, with the environment below, and judges what the resource saw.
// Copy it and put your own lock code where the Mutex is. It needs `redis-semaphore` (5.7.0)
// and `ioredis` where node finds them (NODE_PATH, or `npm install redis-semaphore ioredis`).
//
// LOCKSIM_CLIENT      this worker's name (client-1, ...)
// LOCKSIM_REDIS_URLS  one redis:// URL per node, comma-separated (a Mutex uses the first)
// LOCKSIM_LOCK_KEY    the key to lock (redis-semaphore stores it as mutex:<key>)
// LOCKSIM_TTL_MS      the lock's time to live
// LOCKSIM_RESOURCE    the resource's redis:// URL (GET, SET, and the reports LOCKSIM.ACQUIRING,
//                     LOCKSIM.REFUSED, LOCKSIM.FAILED, LOCKSIM.HELD, LOCKSIM.RELEASED)
// LOCKSIM_WORK_MS     min,max of a critical section, in ms
// LOCKSIM_THINK_MS    min,max of the pause between a release and the next acquire, in ms
// LOCKSIM_SEED        seeds this worker's random choices
// LOCKSIM_FENCING     master-incr: take a fencing token (INCR <key>:fence on the node) and
//                     present it to the resource; none: no token

const Redis = require("ioredis");
const { Mutex } = require("redis-semaphore");

const env = process.env;
const range = (name) => env[name].split(",").map(Number);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// A small seeded generator (mulberry32): the worker's choices come from LOCKSIM_SEED.
let state = Number(BigInt(env.LOCKSIM_SEED) % 4294967296n);
function uniform([low, high]) {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
  return low + (((t ^ (t >>> 14)) >>> 0) / 4294967296) * (high - low);
}

async function main() {
  const client = env.LOCKSIM_CLIENT;
  const key = env.LOCKSIM_LOCK_KEY;
  const ttl = Number(env.LOCKSIM_TTL_MS);
  const fencing = env.LOCKSIM_FENCING === "master-incr";
  const node = new Redis(env.LOCKSIM_REDIS_URLS.split(",")[0], { maxRetriesPerRequest: 1, commandTimeout: 1000 });
  // The resource answers GET, SET and the reports, not INFO: no ready check.
  const resource = new Redis(env.LOCKSIM_RESOURCE, { enableReadyCheck: false });
  for (;;) {
    // The library's defaults, but for onLockLost: its default throws in a timer, which
    // ends the process when a pause outlives the lock. The refresh runs every 0.8 TTL.
    const mutex = new Mutex(node, key, {
      lockTimeout: ttl,
      acquireTimeout: 2 * ttl,
      retryInterval: 10,
      onLockLost: (error) => console.error(`${client}: ${error.message}`),
    });
    try {
      // Tell the resource we want the lock, and how each try ends: the deadlock, liveness
      // and starvation checkers judge the workers that wait.
      await resource.call("LOCKSIM.ACQUIRING", client);
      let acquired;
      try {
        // tryAcquire retries SET NX PX every retryInterval until acquireTimeout, and
        // answers false when every SET found the key held (acquire() would throw a
        // TimeoutError then); a SET without an answer rejects with ioredis's error.
        acquired = await mutex.tryAcquire();
      } catch (error) {
        await resource.call("LOCKSIM.FAILED", client, error.message);
        throw error;
      }
      if (!acquired) {
        await resource.call("LOCKSIM.REFUSED", client);
      } else {
        try {
          const fence = fencing ? [String(await node.incr(`${key}:fence`))] : [];
          const fenced = fence.length ? ["FENCE", ...fence] : [];
          // Tell the resource we hold the lock, then read, work, write back plus one.
          await resource.call("LOCKSIM.HELD", client, mutex.identifier, ...fence);
          const value = Number(await resource.call("GET", "counter", ...fenced));
          await sleep(uniform(range("LOCKSIM_WORK_MS")));
          await resource.call("SET", "counter", String(value + 1), ...fenced);
        } finally {
          // Whatever happened, this worker no longer believes it holds the lock.
          await resource.call("LOCKSIM.RELEASED", client);
          await mutex.release();
        }
      }
    } catch (error) {
      // A fault, a stale token refused, or a timeout: say so (live mode keeps this output).
      console.error(`${client}: ${error.message}`);
    }
    await sleep(uniform(range("LOCKSIM_THINK_MS")));
  }
}

main();
