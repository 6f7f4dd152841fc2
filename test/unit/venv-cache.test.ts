import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceStartError } from '../../lib/errors.ts';
import { cacheDir, lockVenvBuild, sharedVenvDir } from '../../localstack/services/venv-cache.ts';

describe("LocalStack's shared virtualenv (localstack/services/venv-cache.ts)", () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'venv-cache-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('lives in ~/.cache/crawl-cluster unless CRAWL_CACHE_DIR names another directory', () => {
    expect(cacheDir('')).toBe(join(homedir(), '.cache', 'crawl-cluster'));
    expect(cacheDir('/srv/cache')).toBe('/srv/cache');
  });

  it('is one directory per build hash, whatever the services directory: two clones share it, a new build does not', () => {
    const hash = 'a'.repeat(48);
    expect(sharedVenvDir('/c', hash)).toBe(`/c/localstack-venv-${'a'.repeat(16)}`);
    expect(sharedVenvDir('/c', `b${hash}`)).not.toBe(sharedVenvDir('/c', hash));
  });

  it('lets one build at a time hold the lock and frees it on release', () => {
    const venv = join(tempDir(), 'localstack-venv-x');
    const release = lockVenvBuild(venv);
    expect(readFileSync(`${venv}.lock`, 'utf8').trim()).toBe(String(process.pid));
    expect(() => lockVenvBuild(venv)).toThrow(ServiceStartError);
    expect(() => lockVenvBuild(venv)).toThrow(`another \`services up\` (pid ${process.pid}) is building`);
    release();
    expect(existsSync(`${venv}.lock`)).toBe(false);
    lockVenvBuild(venv)();
  });

  it('takes over a lock whose process is gone', async () => {
    const venv = join(tempDir(), 'localstack-venv-y');
    const gone = spawn('true');
    await new Promise((resolve) => gone.once('exit', resolve));
    writeFileSync(`${venv}.lock`, `${gone.pid}\n`);

    const release = lockVenvBuild(venv);

    expect(readFileSync(`${venv}.lock`, 'utf8').trim()).toBe(String(process.pid));
    release();
  });
});
