/**
 * CPU time of processes from /proc (Linux): where the cores went during a measurement, e.g. crawler worker
 * vs Redis vs Kafka vs the fixture site. Elsewhere (no /proc) every reading is 0 and the numbers say so.
 */
import { readFileSync } from 'node:fs';

const TICKS_PER_S = 100;

/** utime + stime of a process in seconds (0 when it is gone or /proc is missing). */
export function cpuSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  } catch {
    return 0;
  }
}

/** CPU seconds of named processes between {@link CpuMeter.start} and {@link CpuMeter.stop}. */
export class CpuMeter {
  readonly #pids: () => Record<string, number[]>;
  #before = new Map<string, number>();
  #selfBefore = process.cpuUsage();

  /** `pids` is called at start and stop (worker pids can change); this process is always counted as `bench`. */
  constructor(pids: () => Record<string, number[]>) {
    this.#pids = pids;
  }

  #read(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, list] of Object.entries(this.#pids())) {
      for (const pid of list) out.set(`${name}\0${pid}`, cpuSeconds(pid));
    }
    return out;
  }

  start(): void {
    this.#before = this.#read();
    this.#selfBefore = process.cpuUsage();
  }

  /** CPU seconds per name (summed over its pids), plus `bench` for this process. */
  stop(): Record<string, number> {
    const after = this.#read();
    const out: Record<string, number> = {};
    for (const [key, v] of after) {
      const name = key.split('\0')[0] as string;
      out[name] = (out[name] ?? 0) + v - (this.#before.get(key) ?? 0);
    }
    const self = process.cpuUsage(this.#selfBefore);
    out.bench = (self.user + self.system) / 1e6;
    for (const k of Object.keys(out)) out[k] = Math.round((out[k] as number) * 100) / 100;
    return out;
  }
}
