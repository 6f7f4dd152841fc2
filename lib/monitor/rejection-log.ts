/**
 * One WARN line per rejected request, so whoever watches the monitor's log (the terminal of `crawl-cluster local`,
 * or CloudWatch Logs) sees a refusal without reading `<p>.rejected`. Rate-limited: a flood of bad requests costs a
 * few lines and one count, never a line each.
 */
import type { Log } from '../ports.ts';

/** At most this many rejections are logged one by one per {@link REJECTION_LOG_WINDOW_MS}. */
export const REJECTION_LOG_LINES = 10;
/**
 * The window of {@link REJECTION_LOG_LINES}; the ones past the limit are counted in one line, logged with the first
 * rejection after the window.
 */
export const REJECTION_LOG_WINDOW_MS = 60_000;

/** The fields of a rejection a log line shows (a subset of kafka-monitor.ts `Rejection`). */
export interface LoggedRejection {
  error: string;
  details: { path: string; message: string }[];
  appid?: string;
  crawlid?: string;
  uuid?: string;
  source: { topic: string; partition: number; offset: number };
}

export class RejectionLog {
  readonly #log: Log;
  #windowStart = Number.NEGATIVE_INFINITY;
  #logged = 0;
  #suppressed = 0;

  constructor(log: Log) {
    this.#log = log;
  }

  /** Logs `r` (a WARN line), or counts it when this window's lines are spent. */
  note(r: LoggedRejection, now: number): void {
    if (now - this.#windowStart >= REJECTION_LOG_WINDOW_MS) {
      if (this.#suppressed > 0) {
        this.#log.warn(
          `${this.#suppressed} more requests rejected in ${REJECTION_LOG_WINDOW_MS / 1000} s were not logged one by one; see them with: crawl-cluster dump rejected --from-beginning`,
        );
      }
      this.#windowStart = now;
      this.#logged = 0;
      this.#suppressed = 0;
    }
    if (this.#logged >= REJECTION_LOG_LINES) {
      this.#suppressed += 1;
      return;
    }
    this.#logged += 1;
    const first = r.details[0];
    const why = first === undefined ? '' : `: ${first.path ? `${first.path} ` : ''}${first.message}`;
    const ids = (['appid', 'crawlid', 'uuid'] as const)
      .filter((k) => r[k] !== undefined)
      .map((k) => `${k}=${r[k]}`)
      .join(' ');
    const { topic, partition, offset } = r.source;
    this.#log.warn(`rejected a request${ids ? ` (${ids})` : ''}: ${r.error}${why} [${topic}/${partition}@${offset}]`);
  }
}

const logs = new WeakMap<Log, RejectionLog>();

/** The rejection log writing to `log`: one per log, so its rate limit holds across batches. */
export function rejectionLogFor(log: Log): RejectionLog {
  let r = logs.get(log);
  if (r === undefined) {
    r = new RejectionLog(log);
    logs.set(log, r);
  }
  return r;
}
