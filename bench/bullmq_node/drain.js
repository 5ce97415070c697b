// BullMQ on Node.js draining N no-op jobs, for bench/bench_peers.py: one JSON line on stdout.
//
//   ECHOMQ_BENCH_URL=redis://:pw@127.0.0.1:port node drain.js <queue> <n> <concurrency>
//
// The node's address comes in the environment (it holds the password), never on the command line.
// A warm-up drain of WARMUP jobs on a queue of its own comes first, untimed, so that V8 has compiled
// the Worker's path and the node holds BullMQ's scripts, as the kit's bench process is warm by its
// second run. The N jobs are added with addBulk (500 a call, outside the clock); the clock runs from
// building the Worker (concurrency handlers at once, removeOnComplete so a finished job's keys go,
// as the kit's rows do) to the N-th "completed" event, as the bench's clock does for the kit's
// consumers. The queue is obliterated afterwards; the counts left must be zero.
'use strict';

const { Queue, Worker } = require('bullmq');

const ADD_BATCH = 500;
const WARMUP = 300;
const TIMEOUT_MS = 300000;

function connection(url) {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port),
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
  };
}

async function addJobs(queue, n) {
  for (let start = 0; start < n; start += ADD_BATCH) {
    const batch = [];
    for (let i = start; i < Math.min(n, start + ADD_BATCH); i++) batch.push({ name: 'j', data: { i } });
    await queue.addBulk(batch);
  }
}

// n jobs drained by a Worker at this concurrency; answers the seconds from building the Worker to the n-th completion
async function drain(name, n, concurrency, conn) {
  let done = 0;
  let finish;
  const finished = new Promise((resolve, reject) => {
    finish = resolve;
    setTimeout(() => reject(new Error(`${name}: ${done} of ${n} completed in ${TIMEOUT_MS} ms`)), TIMEOUT_MS).unref();
  });
  const t0 = process.hrtime.bigint();
  const worker = new Worker(name, async () => 'ok', {
    connection: conn,
    concurrency,
    removeOnComplete: { count: 0 },
  });
  worker.on('completed', () => {
    done += 1;
    if (done === n) finish();
  });
  worker.on('failed', (job, err) => {
    throw new Error(`${name}: job ${job && job.id} failed: ${err}`);
  });
  await finished;
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await worker.close();
  return seconds;
}

async function main() {
  const [name, nText, concText] = process.argv.slice(2);
  const n = Number(nText);
  const concurrency = Number(concText);
  const url = process.env.ECHOMQ_BENCH_URL;
  if (!name || !(n > 0) || !(concurrency > 0) || !url) {
    throw new Error('usage: ECHOMQ_BENCH_URL=redis://... node drain.js <queue> <n> <concurrency>');
  }
  const conn = connection(url);
  const warm = new Queue(`${name}-warmup`, { connection: conn });
  await addJobs(warm, WARMUP);
  await drain(`${name}-warmup`, WARMUP, concurrency, conn);
  await warm.obliterate({ force: true });
  await warm.close();

  const queue = new Queue(name, { connection: conn });
  await addJobs(queue, n);
  const seconds = await drain(name, n, concurrency, conn);
  const left = await queue.getJobCounts('wait', 'active', 'delayed', 'failed', 'completed');
  await queue.obliterate({ force: true });
  await queue.close();
  process.stdout.write(JSON.stringify({ jobs: n, concurrency, seconds, jobs_per_s: n / seconds, left }) + '\n');
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`drain.js: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
