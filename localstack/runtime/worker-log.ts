/**
 * A worker process's output as the local runtime's own log lines. A crawler worker logs as on ECS: Powertools JSON,
 * INFO on stdout and WARN/ERROR on stderr, plus plain text on stderr for an error that stops it at start. `local`
 * logs text (or JSON with --json-logs) to stderr only; each worker line goes through its log, so a run has one
 * format on one stream.
 */

import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { RuntimeLog, RuntimeLogLevel } from './log.ts';

/** Where the worker processes' stdout and stderr go: the parent's own streams as they are, or its log. */
export type WorkerOutput = 'inherit' | 'log';

/** Keys of a Powertools log line that are the line itself, not its fields; the runtime log sets its own. */
const ENVELOPE = new Set(['level', 'message', 'timestamp', 'service', 'sampling_rate', 'xray_trace_id']);

export interface WorkerLine {
  level: RuntimeLogLevel;
  message: string;
  fields?: Record<string, unknown>;
}

function levelOf(level: unknown): RuntimeLogLevel {
  const name = String(level).toUpperCase();
  if (name === 'WARN') return 'warn';
  if (name === 'ERROR' || name === 'CRITICAL') return 'error';
  return 'info';
}

/**
 * One line of a worker's output as a log line named after the worker (`crawler worker 0: ...`). A Powertools JSON
 * line keeps its level, message and fields; any other line is its message, an error when it came on stderr.
 */
export function workerLine(name: string, line: string, stream: 'stdout' | 'stderr'): WorkerLine {
  if (line.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed === 'object' && parsed !== null && 'message' in parsed && 'level' in parsed) {
        const record = parsed as Record<string, unknown>;
        const fields = Object.fromEntries(Object.entries(record).filter(([key]) => !ENVELOPE.has(key)));
        return {
          level: levelOf(record.level),
          message: `${name}: ${String(record.message)}`,
          ...(Object.keys(fields).length > 0 ? { fields } : {}),
        };
      }
    } catch {
      // Not JSON after all: a line of text.
    }
  }
  return { level: stream === 'stderr' ? 'error' : 'info', message: `${name}: ${line}` };
}

/**
 * Sends each line of a worker's stdout and stderr to `log`; resolves when both streams have ended, so a caller that
 * waits for it has logged everything the worker wrote (its last error before an exit, say).
 */
export function logWorkerOutput(
  name: string,
  streams: { stdout: Readable | null; stderr: Readable | null },
  log: RuntimeLog,
): Promise<void> {
  const ended = (['stdout', 'stderr'] as const).map((which) => {
    const input = streams[which];
    if (input === null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
      lines.on('line', (text) => {
        if (text.trim() === '') return;
        const { level, message, fields } = workerLine(name, text, which);
        log(level, message, fields);
      });
      lines.once('close', () => resolve());
    });
  });
  return Promise.all(ended).then(() => undefined);
}
