/**
 * Where LocalStack's virtualenv is built: once per machine and build, in a cache directory shared by every services
 * directory (a clone's `.services/`, `.ci/run`'s `.services-ci/`, the tests' own), named by the sha256 of the
 * requirements and the Python it is built from. A services directory links `localstack/venv` to it, so a second
 * clone or CI reuses the virtualenv instead of building another (a minute or two of pip). A build holds a lock file
 * naming its pid: a second `services up` that needs the same build while it runs stops with an error saying so,
 * instead of installing into the same directory at once; a lock whose process is gone is taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ServiceStartError } from '../../lib/errors.ts';

/** The cache directory: CRAWL_CACHE_DIR, or ~/.cache/crawl-cluster when it is empty. */
export function cacheDir(configured: string): string {
  return configured || join(homedir(), '.cache', 'crawl-cluster');
}

/** The shared virtualenv for one build hash (the sha256 hex of the requirements and the Python). */
export function sharedVenvDir(cache: string, buildHash: string): string {
  return join(cache, `localstack-venv-${buildHash.slice(0, 16)}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the build lock of `venv` (a file beside it) for this process and returns its release; throws a
 * {@link ServiceStartError} naming the pid when a live process holds it.
 */
export function lockVenvBuild(venv: string, pid = process.pid): () => void {
  const lock = `${venv}.lock`;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(lock, 'wx');
      writeSync(fd, `${pid}\n`);
      closeSync(fd);
      return () => rmSync(lock, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let holder = Number.NaN;
      try {
        holder = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      } catch {
        // Removed between the two calls: try again.
      }
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) {
        throw new ServiceStartError(
          `localstack: another \`services up\` (pid ${holder}) is building the shared virtualenv ${venv}; run \`services up\` again when it is done`,
        );
      }
      rmSync(lock, { force: true });
    }
  }
  throw new ServiceStartError(`localstack: cannot take the build lock ${lock}`);
}
