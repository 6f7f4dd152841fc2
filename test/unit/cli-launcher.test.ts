/**
 * bin/crawl-cluster, the launcher that makes the README's commands work in a new shell: with only the machine's
 * own directories on PATH (whose node, if any, may be too old to run TypeScript), it finds the toolchain's Node
 * (localstack/toolchain.sh) and runs the CLI.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The first `node` on the system directories that is older than Node 22 (the machine's own), or undefined. */
function systemOldNode(): string | undefined {
  const found = spawnSync('sh', ['-c', 'which -a node'], {
    env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    encoding: 'utf8',
  }).stdout;
  for (const path of found.split('\n').filter(Boolean)) {
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
    if (Number(version.slice(1).split('.')[0]) < 22) return path;
  }
  return undefined;
}

/** Runs bin/crawl-cluster with only `pathDirs` on PATH, from `/`. */
function launch(args: string[], pathDirs: string) {
  return spawnSync('sh', [`${repoRoot}bin/crawl-cluster`, ...args], {
    cwd: '/',
    env: { HOME: process.env.HOME ?? '/tmp', PATH: pathDirs, CRAWLER_NODE: process.execPath },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('bin/crawl-cluster', () => {
  it("prints package.json's version for --version and exits 0", () => {
    const manifest = JSON.parse(readFileSync(`${repoRoot}package.json`, 'utf8')) as { version: string };
    const run = launch(['--version'], '/usr/local/bin:/usr/bin:/bin');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(manifest.version);
  }, 60_000);

  it("runs when the node first on PATH is the machine's Node 20", () => {
    // Without an old node on the machine, a stand-in says v20 and fails on a .ts file as Node 20 does.
    const fake = mkdtempSync(join(tmpdir(), 'old-node-'));
    writeFileSync(
      join(fake, 'node'),
      '#!/bin/sh\n[ "$1" = --version ] && { echo v20.0.0; exit 0; }\necho ERR_UNKNOWN_FILE_EXTENSION >&2; exit 1\n',
    );
    chmodSync(join(fake, 'node'), 0o755);
    try {
      const oldNodeDir = dirname(systemOldNode() ?? join(fake, 'node'));
      const run = launch(['--version'], `${oldNodeDir}:/usr/local/bin:/usr/bin:/bin`);
      expect(run.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
      expect(run.status).toBe(0);
      expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    } finally {
      rmSync(fake, { recursive: true, force: true });
    }
  }, 60_000);

  it('runs the CLI from a shell whose PATH has only the system directories', () => {
    const run = spawnSync('sh', [`${repoRoot}bin/crawl-cluster`, 'topics', '--help'], {
      cwd: '/',
      env: {
        HOME: process.env.HOME ?? '/tmp',
        PATH: '/usr/local/bin:/usr/bin:/bin',
        // The crawler's Node is not what this checks; naming one keeps the toolchain from installing it.
        CRAWLER_NODE: process.execPath,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: crawl-cluster topics');
  }, 60_000);
});
