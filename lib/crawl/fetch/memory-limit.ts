/**
 * The memory this process may really use: the smallest of its cgroup's limit (cgroup v2 `memory.max`, or v1
 * `memory.limit_in_bytes`, of the cgroup /proc/self/cgroup names and of every cgroup above it, since a parent's limit
 * binds its children too), the task size the stack states (`CRAWLER_TASK_MEMORY_MIB` on Fargate), and the machine's
 * memory. A process on a host with 24 GB under a 1 GB systemd scope or Docker limit gets 1 GB, not 24.
 */
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { posix } from 'node:path';

/** Where the memory limit came from, for the start log. */
type MemoryLimitSource = 'cgroup' | 'task' | 'machine';

export interface MemoryLimit {
  bytes: number;
  source: MemoryLimitSource;
}

export interface MemoryLimitOptions {
  /** The cgroup file system's mount point (tests pass a folder of their own). @default '/sys/fs/cgroup' */
  root?: string;
  /** The text of /proc/self/cgroup (tests pass their own). @default read from /proc/self/cgroup */
  procCgroup?: string;
  /** The task's memory as its orchestrator states it (Fargate's task size), when known. */
  taskBytes?: number;
  /** The machine's memory. @default os.totalmem() */
  machineBytes?: number;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** `path` and every folder above it up to `/`, deepest first. */
function selfAndAncestors(path: string): string[] {
  const out: string[] = [];
  let at = posix.normalize(`/${path}`);
  for (;;) {
    out.push(at);
    if (at === '/') return out;
    at = posix.dirname(at);
  }
}

/**
 * The folders holding this process's memory limit files, each with the file's name: cgroup v2 (`0::<path>`, its
 * controllers at the mount point or, on a hybrid host, under `unified/`) and cgroup v1 (the `memory` hierarchy).
 * Inside a container with its own cgroup namespace the path is `/` and the mount point is the container's cgroup.
 */
function limitFiles(procCgroup: string, root: string): string[] {
  const files: string[] = [];
  for (const line of procCgroup.split('\n')) {
    const [id, controllers, ...rest] = line.split(':');
    const path = rest.join(':');
    if (id === undefined || controllers === undefined || !path) continue;
    if (id === '0' && controllers === '') {
      for (const at of selfAndAncestors(path)) {
        files.push(posix.join(root, at, 'memory.max'), posix.join(root, 'unified', at, 'memory.max'));
      }
    } else if (controllers.split(',').includes('memory')) {
      for (const at of selfAndAncestors(path)) files.push(posix.join(root, 'memory', at, 'memory.limit_in_bytes'));
    }
  }
  // The mount point's own files: a container's cgroup (namespaced, or without /proc/self/cgroup).
  files.push(posix.join(root, 'memory.max'), posix.join(root, 'memory', 'memory.limit_in_bytes'));
  return files;
}

/** The smallest memory limit set on this process's cgroups, or undefined when none is. */
export function cgroupMemoryBytes(procCgroup: string, root = '/sys/fs/cgroup'): number | undefined {
  let least: number | undefined;
  for (const file of limitFiles(procCgroup, root)) {
    const text = readText(file);
    if (text === undefined || text === 'max') continue;
    const bytes = Number(text);
    // cgroup v1 says "no limit" with a number near 2^63: the machine's memory bounds it below anyway.
    if (Number.isFinite(bytes) && bytes > 0 && (least === undefined || bytes < least)) least = bytes;
  }
  return least;
}

/** This process's memory limit: the least of its cgroups' limits, the task's size and the machine's memory. */
export function memoryLimit(options: MemoryLimitOptions = {}): MemoryLimit {
  const machine = options.machineBytes ?? totalmem();
  let limit: MemoryLimit = { bytes: machine, source: 'machine' };
  const task = options.taskBytes;
  if (task !== undefined && task > 0 && task < limit.bytes) limit = { bytes: task, source: 'task' };
  const procCgroup = options.procCgroup ?? readText('/proc/self/cgroup') ?? '';
  const cgroup = cgroupMemoryBytes(procCgroup, options.root);
  if (cgroup !== undefined && cgroup < limit.bytes) limit = { bytes: cgroup, source: 'cgroup' };
  return limit;
}
