/**
 * How the local runtime reports what it does. A plain function, so the CLI can print lines and tests can
 * collect them into an array.
 */

/** Severity of a runtime log line. */
export type RuntimeLogLevel = 'info' | 'warn' | 'error';

/** One structured log line: a short message and the fields that identify what it is about. */
export type RuntimeLog = (level: RuntimeLogLevel, message: string, fields?: Record<string, unknown>) => void;

/** The fields that describe a caught error in a log line (name and message; never a stack per line). */
export function errorFields(error: unknown): { error: string; errorName: string } {
  if (error instanceof Error) return { error: error.message, errorName: error.name };
  return { error: String(error), errorName: typeof error };
}
