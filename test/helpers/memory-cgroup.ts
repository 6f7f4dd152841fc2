/**
 * A memory-limited cgroup of its own for a test's or a bench's process (issue 48 item 8: bodies under a real memory
 * limit). cgroup v2 where the memory controller is there (a child of the hierarchy's root, `memory.max`, OOM kills in
 * `memory.events`), else cgroup v1's memory hierarchy (a child of this process's own memory cgroup,
 * `memory.limit_in_bytes`, OOM kills in `memory.oom_control`), as on hosts that mount v1 controllers with an empty
 * unified hierarchy. Needs root (CI runs as root); it throws, saying why, when neither can be created.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  /** The cgroup's folder. */
  path: string;
  version: 1 | 2;
  limitBytes: number;
  /** Processes the kernel killed in it for lack of memory so far. */
  oomKills(): number;
  /** The most memory it held (v1 `memory.max_usage_in_bytes`, v2 `memory.peak` where the kernel has it). */
  peakBytes(): number | undefined;
  /**
   * The command that runs `argv` inside the cgroup: a shell moves itself in, then becomes the program (same pid).
   */
  wrap(argv: string[]): string[];
  /** Removes the cgroup (its processes must have exited). */
  remove(): void;
}

const ROOT = '/sys/fs/cgroup';

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The cgroup v2 mount point whose root offers the memory controller, if any. */
function unifiedWithMemory(): string | undefined {
  for (const at of [ROOT, join(ROOT, 'unified')]) {
    if (read(join(at, 'cgroup.controllers'))?.split(/\s+/).includes('memory')) return at;
  }
  return undefined;
}

function counter(text: string | undefined, name: string): number {
  const line = text?.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** Creates cgroup `name` with a memory limit of `limitBytes` (no swap beyond it). */
export function createMemoryCgroup(name: string, limitBytes: number): MemoryCgroup {
  const unified = unifiedWithMemory();
  if (unified) {
    const path = join(unified, name);
    const control = join(unified, 'cgroup.subtree_control');
    if (!read(control)?.split(/\s+/).includes('memory')) writeFileSync(control, '+memory');
    mkdirSync(path);
    writeFileSync(join(path, 'memory.max'), String(limitBytes));
    if (existsSync(join(path, 'memory.swap.max'))) writeFileSync(join(path, 'memory.swap.max'), '0');
    return {
      path,
      version: 2,
      limitBytes,
      oomKills: () => counter(read(join(path, 'memory.events')), 'oom_kill'),
      peakBytes: () => {
        const peak = read(join(path, 'memory.peak'));
        return peak === undefined ? undefined : Number(peak);
      },
      wrap: (argv) => wrap(path, argv),
      remove: () => removeCgroup(path),
    };
  }
  const own = read('/proc/self/cgroup')
    ?.split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes('memory'));
  const memoryRoot = join(ROOT, 'memory');
  if (own === undefined || !existsSync(memoryRoot)) {
    throw new Error(
      `no cgroup memory controller to limit a process with: neither cgroup v2 with "memory" in ${ROOT}/cgroup.controllers nor a cgroup v1 memory hierarchy at ${memoryRoot}`,
    );
  }
  const path = join(memoryRoot, own.split(':').slice(2).join(':'), name);
  mkdirSync(path);
  writeFileSync(join(path, 'memory.limit_in_bytes'), String(limitBytes));
  return {
    path,
    version: 1,
    limitBytes,
    oomKills: () => counter(read(join(path, 'memory.oom_control')), 'oom_kill'),
    peakBytes: () => Number(read(join(path, 'memory.max_usage_in_bytes'))),
    wrap: (argv) => wrap(path, argv),
    remove: () => removeCgroup(path),
  };
}

function wrap(path: string, argv: string[]): string[] {
  return ['/bin/sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', path, ...argv];
}

/** Removes an empty cgroup; the kernel may take a moment after its last process exits. */
function removeCgroup(path: string): void {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      rmdirSync(path);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EBUSY' || Date.now() > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    }
  }
}
