/**
 * The crawler's memory limit (lib/crawl/fetch/memory-limit.ts): the process's own cgroup (v2 or v1, from /proc/self/cgroup)
 * and those above it, the task's stated size and the machine's memory, whichever is least.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cgroupMemoryBytes, memoryLimit } from '../../lib/crawl/fetch/memory-limit.ts';

const GiB = 1024 ** 3;

/** A cgroup file system in a temporary folder: `files` maps paths under it to their text. */
function cgroupFs(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'cgroup-fs-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), `${text}\n`);
  }
  return root;
}

describe('memoryLimit', () => {
  it("takes a cgroup v2 scope's memory.max on a host with far more memory (a systemd scope)", () => {
    const root = cgroupFs({
      'memory.max': 'max',
      'system.slice/memory.max': 'max',
      'system.slice/run-crawler.scope/memory.max': String(GiB),
    });
    const limit = memoryLimit({ root, procCgroup: '0::/system.slice/run-crawler.scope\n', machineBytes: 24 * GiB });
    expect(limit).toEqual({ bytes: GiB, source: 'cgroup' });
  });

  it("takes a parent cgroup's limit when it is below the process's own", () => {
    const root = cgroupFs({ 'crawl/memory.max': String(2 * GiB), 'crawl/worker/memory.max': 'max' });
    expect(cgroupMemoryBytes('0::/crawl/worker', root)).toBe(2 * GiB);
  });

  it('reads cgroup v1 memory.limit_in_bytes of the memory hierarchy, ignoring its "no limit" number', () => {
    const root = cgroupFs({
      'memory/memory.limit_in_bytes': '9223372036854771712',
      'memory/jobs/a/memory.limit_in_bytes': String(512 * 1024 ** 2),
    });
    const procCgroup = '4:memory:/jobs/a\n3:cpuset:/\n0::/\n';
    expect(memoryLimit({ root, procCgroup, machineBytes: 24 * GiB })).toEqual({
      bytes: 512 * 1024 ** 2,
      source: 'cgroup',
    });
  });

  it("reads a hybrid host's unified hierarchy under unified/", () => {
    const root = cgroupFs({ 'unified/box/memory.max': String(3 * GiB) });
    expect(cgroupMemoryBytes('0::/box', root)).toBe(3 * GiB);
  });

  it("takes a container's own cgroup at the mount point when /proc/self/cgroup says /", () => {
    const root = cgroupFs({ 'memory.max': String(2 * GiB) });
    expect(memoryLimit({ root, procCgroup: '0::/', machineBytes: 8 * GiB })).toEqual({
      bytes: 2 * GiB,
      source: 'cgroup',
    });
  });

  it("takes the task's stated size when no cgroup limit is lower, and the machine's memory without either", () => {
    const root = cgroupFs({ 'memory.max': 'max' });
    expect(memoryLimit({ root, procCgroup: '0::/', taskBytes: 2 * GiB, machineBytes: 24 * GiB })).toEqual({
      bytes: 2 * GiB,
      source: 'task',
    });
    expect(memoryLimit({ root, procCgroup: '0::/', machineBytes: 24 * GiB })).toEqual({
      bytes: 24 * GiB,
      source: 'machine',
    });
  });
});
