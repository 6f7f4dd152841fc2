/**
 * bin/crawl-cluster, the launcher that makes the README's commands work in a new shell: with only the machine's
 * own directories on PATH (whose node, if any, may be too old to run TypeScript), it finds the toolchain's Node
 * (localstack/toolchain.sh) and runs the CLI.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

describe('bin/crawl-cluster', () => {
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
