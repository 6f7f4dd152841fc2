/**
 * How the CLI speaks: human-readable by default, one JSON document on stdout with `--json`.
 * Progress and diagnostics go to stderr so stdout stays parseable.
 */
export interface Output {
  json: boolean;
  /** A step of long work, for a person watching (stderr). */
  progress(message: string): void;
  /** A result line for a person (stdout, suppressed in JSON mode). */
  info(message: string): void;
  /** The machine-readable result (stdout, JSON mode). */
  data(value: unknown): void;
  error(message: string): void;
}

export function createOutput(
  json: boolean,
  stdout: NodeJS.WritableStream = process.stdout,
  stderr = process.stderr,
): Output {
  return {
    json,
    progress: (m) => stderr.write(`${m}\n`),
    info: (m) => {
      if (!json) stdout.write(`${m}\n`);
    },
    data: (v) => stdout.write(`${JSON.stringify(v, null, json ? 0 : 2)}\n`),
    error: (m) => stderr.write(`error: ${m}\n`),
  };
}

/** A plain aligned table. */
export function printTable(out: Output, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  out.info(line(header));
  for (const r of rows) out.info(line(r));
}
