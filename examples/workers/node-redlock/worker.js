// A live worker for locksim: node-redlock v5 (on ioredis) around a read-modify-write of the
// resource.
//
// `locksim run --live pause.json` (the scenario beside this file) starts one of these per
// client, in this directory, with the environment below, and judges what the resource saw.
// Copy it and put your own lock code where the Redlock is. It needs `redlock` (5.0.0-beta.2)
// and `ioredis` where node finds them (NODE_PATH, or `npm install redlock@5.0.0-beta.2 ioredis`).
//
// LOCKSIM_CLIENT      this worker's name (client-1, ...)
// LOCKSIM_REDIS_URLS  one redis:// URL per node, comma-separated (Redlock's clients)
// LOCKSIM_LOCK_KEY    the key to lock
// LOCKSIM_TTL_MS      the lock's time to live
// LOCKSIM_RESOURCE    the resource's redis:// URL (GET, SET, and the reports LOCKSIM.ACQUIRING,
//                     LOCKSIM.REFUSED, LOCKSIM.FAILED, LOCKSIM.HELD, LOCKSIM.RELEASED)
// LOCKSIM_WORK_MS     min,max of a critical section, in ms
// LOCKSIM_THINK_MS    min,max of the pause between a release and the next acquire, in ms
// LOCKSIM_SEED        seeds this worker's random choices
// LOCKSIM_FENCING     master-incr: take a fencing token (INCR <key>:fence on the first node)
//                     and present it to the resource; none: no token

const Redis = require("ioredis");
const { default: Redlock, ExecutionError, ResourceLockedError } = require("redlock");

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

// Whether a failed acquire was refused: redlock throws ExecutionError once its retries run
// out, with each attempt's votes; a node that found the key held voted against with a
// ResourceLockedError, one that gave no answer (a timeout, a closed link) with another
// error. Refused when, in the last attempt, a quorum of nodes said the key is held.
async function refusedByAQuorum(error) {
  if (!(error instanceof ExecutionError) || error.attempts.length === 0) return false;
  const last = await error.attempts[error.attempts.length - 1];
  const held = [...last.votesAgainst.values()].filter((vote) => vote instanceof ResourceLockedError);
  return held.length >= last.quorumSize;
}

async function main() {
  const client = env.LOCKSIM_CLIENT;
  const key = env.LOCKSIM_LOCK_KEY;
  const ttl = Number(env.LOCKSIM_TTL_MS);
  const fencing = env.LOCKSIM_FENCING === "master-incr";
  const options = { maxRetriesPerRequest: 1, commandTimeout: 1000 };
  const nodes = env.LOCKSIM_REDIS_URLS.split(",").map((url) => new Redis(url, options));
  // The resource answers GET, SET and the reports, not INFO: no ready check.
  const resource = new Redis(env.LOCKSIM_RESOURCE, { enableReadyCheck: false });
  const redlock = new Redlock(nodes, { retryCount: 20, retryDelay: 50, retryJitter: 20 });
  redlock.on("error", () => {}); // a node's refusal while another holds: not news
  for (;;) {
    try {
      // Tell the resource we want the lock, and how each try ends: the deadlock, liveness
      // and starvation checkers judge the workers that wait.
      await resource.call("LOCKSIM.ACQUIRING", client);
      let lock;
      try {
        lock = await redlock.acquire([key], ttl);
      } catch (error) {
        const report = (await refusedByAQuorum(error)) ? "LOCKSIM.REFUSED" : "LOCKSIM.FAILED";
        await resource.call(report, client, error.message);
        throw error;
      }
      try {
        const fence = fencing ? [String(await nodes[0].incr(`${key}:fence`))] : [];
        const fenced = fence.length ? ["FENCE", ...fence] : [];
        // Tell the resource we hold the lock, then read, work, write back plus one.
        await resource.call("LOCKSIM.HELD", client, lock.value, ...fence);
        const value = Number(await resource.call("GET", "counter", ...fenced));
        await sleep(uniform(range("LOCKSIM_WORK_MS")));
        await resource.call("SET", "counter", String(value + 1), ...fenced);
      } finally {
        // Whatever happened, this worker no longer believes it holds the lock.
        await resource.call("LOCKSIM.RELEASED", client);
        await lock.release();
      }
    } catch (error) {
      // A fault, a stale token refused, or a lock that expired under us: say so (live
      // mode keeps this output), think, try again.
      console.error(`${client}: ${error.message}`);
    }
    await sleep(uniform(range("LOCKSIM_THINK_MS")));
  }
}

main();
