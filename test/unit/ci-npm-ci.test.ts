import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../localstack/repo-root.ts';

const SCRIPT = join(REPO_ROOT, '.ci', 'npm-ci');

/**
 * A stand-in `npm`: each call is appended to npm-calls; `npm ci` empties node_modules as npm does, then writes
 * npm's record of what it installed (node_modules/.package-lock.json) and a module; FAKE_NPM_FAIL makes it fail
 * after the emptying.
 */
const FAKE_NPM = `#!/bin/sh
echo "$*" >> npm-calls
if [ "$1" = "ci" ]; then
  rm -rf node_modules
  mkdir -p node_modules/left-pad
  [ -n "$FAKE_NPM_FAIL" ] && exit 1
  cp package-lock.json node_modules/.package-lock.json
  echo 'module.exports = 1' > node_modules/left-pad/index.js
fi
`;

describe('.ci/npm-ci: npm ci unless node_modules is already what it would install', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A clone with a package-lock.json and the stand-in npm first on PATH. */
  function clone(): string {
    const dir = mkdtempSync(join(tmpdir(), 'npm-ci-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'bin'));
    writeFileSync(join(dir, 'bin', 'npm'), FAKE_NPM);
    chmodSync(join(dir, 'bin', 'npm'), 0o755);
    writeFileSync(join(dir, 'package-lock.json'), '{"lockfileVersion":3,"packages":{"node_modules/left-pad":{}}}\n');
    return dir;
  }
  function run(dir: string, env: Record<string, string> = {}) {
    const done = spawnSync('bash', [SCRIPT], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, ...env, PATH: `${join(dir, 'bin')}:${dirname(process.execPath)}:${process.env.PATH}` },
    });
    const calls = existsSync(join(dir, 'npm-calls')) ? readFileSync(join(dir, 'npm-calls'), 'utf8') : '';
    rmSync(join(dir, 'npm-calls'), { force: true });
    return { code: done.status, out: `${done.stdout}${done.stderr}`, calls };
  }

  it('installs in a fresh clone, then leaves the same node_modules alone and says so', () => {
    const dir = clone();

    expect(run(dir)).toMatchObject({ code: 0, calls: 'ci --no-audit --no-fund\n' });
    const again = run(dir);

    expect(again).toMatchObject({ code: 0, calls: '' });
    expect(again.out).toContain('npm ci skipped: node_modules is as npm ci installed it from this package-lock.json');
    expect(existsSync(join(dir, 'node_modules', 'left-pad', 'index.js'))).toBe(true);
  });

  it('installs again when the lock changed', () => {
    const dir = clone();
    run(dir);
    writeFileSync(join(dir, 'package-lock.json'), '{"lockfileVersion":3,"packages":{"node_modules/right-pad":{}}}\n');

    expect(run(dir)).toMatchObject({ code: 0, calls: 'ci --no-audit --no-fund\n' });
  });

  it('installs again when another npm command changed node_modules since (npm’s record of it differs)', () => {
    const dir = clone();
    run(dir);
    writeFileSync(join(dir, 'node_modules', '.package-lock.json'), '{"packages":{"node_modules/other":{}}}\n');

    expect(run(dir)).toMatchObject({ code: 0, calls: 'ci --no-audit --no-fund\n' });
  });

  it('a failed install fails, and the next run installs again', () => {
    const dir = clone();

    expect(run(dir, { FAKE_NPM_FAIL: '1' }).code).not.toBe(0);
    expect(run(dir)).toMatchObject({ code: 0, calls: 'ci --no-audit --no-fund\n' });
  });

  it('installs when node_modules exists without the stamp (installed by hand)', () => {
    const dir = clone();
    mkdirSync(join(dir, 'node_modules', 'left-pad'), { recursive: true });
    writeFileSync(join(dir, 'node_modules', '.package-lock.json'), readFileSync(join(dir, 'package-lock.json')));

    expect(run(dir)).toMatchObject({ code: 0, calls: 'ci --no-audit --no-fund\n' });
  });
});
