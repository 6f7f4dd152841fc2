/**
 * The last resort of a crawler process (docs/design.md §10: a supervisor notices a stuck worker and replaces it): a
 * worker thread that watches the process's event loop. The loop writes a heartbeat into shared memory every
 * {@link BEAT_EVERY_MS}; when the thread sees none for `stallMs` (our own code looping on a page, a plugin's code that
 * escaped the sandbox), it writes one line to stderr and kills the process with SIGKILL: a blocked event loop cannot
 * run a SIGTERM handler, and the supervisor (ECS, `local`'s worker pool) starts a new process. The requests the
 * process held come back through lease reclaim, each counted as a try, so a page that stalls every process it meets
 * is given up after its retries (lib/crawl/crawler/crawler.ts RECLAIMED_TOO_OFTEN).
 */
import { Worker } from 'node:worker_threads';

/** How often the event loop writes its heartbeat (ms). */
const BEAT_EVERY_MS = 250;

/** The watchdog thread: plain JavaScript, evaluated (no module to load, nothing to fail at start). */
const WATCHDOG_SOURCE = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const beat = new Int32Array(workerData.sab);
const every = Math.max(50, Math.min(1000, Math.floor(workerData.stallMs / 4)));
setInterval(() => {
  const silentMs = (Date.now() - workerData.base) - Atomics.load(beat, 0);
  if (silentMs < workerData.stallMs) return;
  try {
    writeSync(2, JSON.stringify({
      level: 'ERROR',
      message: 'crawler event loop blocked; killing the process so its supervisor starts a new one',
      blocked_ms: silentMs,
      stall_exit_ms: workerData.stallMs,
      pid: process.pid,
    }) + '\\n');
  } finally {
    process.kill(process.pid, 'SIGKILL');
  }
}, every);
`;

/** A running watchdog; `stop()` ends it (at shutdown, before the process exits on its own). */
export interface StallWatchdog {
  stop(): Promise<void>;
}

/** Starts the watchdog of this process (see the module doc); `stallMs` 0 starts none. */
export function startStallWatchdog(stallMs: number): StallWatchdog {
  if (stallMs <= 0) return { stop: async () => undefined };
  const sab = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
  const beat = new Int32Array(sab);
  const base = Date.now();
  const write = () => Atomics.store(beat, 0, Date.now() - base);
  write();
  const timer = setInterval(write, BEAT_EVERY_MS);
  timer.unref();
  const worker = new Worker(WATCHDOG_SOURCE, { eval: true, workerData: { sab, base, stallMs } });
  worker.unref();
  return {
    async stop() {
      clearInterval(timer);
      await worker.terminate();
    },
  };
}
