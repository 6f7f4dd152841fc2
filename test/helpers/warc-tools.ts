/**
 * Python warcio and pywb (localstack/warc-tools-requirements.txt, every package pinned) in a virtualenv built once per
 * machine in the cache directory LocalStack's shares (localstack/services/venv-cache.ts: CRAWL_CACHE_DIR, else
 * ~/.cache/crawl-cluster), named by the sha256 of the requirements and the Python, and rebuilt when either changes.
 * The build prints a progress line to stderr; CI (`bash .ci/run`) builds it on its first e2e run.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { config } from '../../lib/config/index.ts';
import { cacheDir, lockVenvBuild } from '../../localstack/services/venv-cache.ts';
import { repoRoot } from './cli.ts';

const REQUIREMENTS = join(repoRoot, 'localstack', 'warc-tools-requirements.txt');
const MARKER = '.crawl-cluster-requirements';

/** The first of these that runs: the interpreter the virtualenv is built with. */
function python(): { command: string; version: string } {
  const configured = config().CRAWL_LOCALSTACK_PYTHON;
  for (const command of [configured, 'python3.11', 'python3'].filter((c) => c !== '')) {
    const probe = spawnSync(command, ['-c', 'import sys, venv; print(sys.version.split()[0])'], { encoding: 'utf8' });
    if (probe.status === 0) return { command, version: probe.stdout.trim() };
  }
  throw new Error('warc tools: no Python 3 with its venv module (Debian: apt-get install -y python3-venv)');
}

/** The virtualenv's bin directory, built first when missing or out of date. */
export function warcToolsBin(): string {
  const py = python();
  const hash = createHash('sha256').update(readFileSync(REQUIREMENTS)).update(`\n${py.version}\n`).digest('hex');
  const venv = join(cacheDir(config().CRAWL_CACHE_DIR), `warc-tools-venv-${hash.slice(0, 16)}`);
  const bin = join(venv, 'bin');
  const marker = join(venv, MARKER);
  if (existsSync(marker) && readFileSync(marker, 'utf8').trim() === hash) return bin;
  mkdirSync(join(venv, '..'), { recursive: true });
  const release = lockVenvBuild(venv);
  try {
    process.stderr.write(
      `warc tools: building a virtualenv in ${venv} with ${py.command} ${py.version} from ` +
        'localstack/warc-tools-requirements.txt (Python warcio and pywb; first run on this machine, about a minute)\n',
    );
    rmSync(venv, { recursive: true, force: true });
    const steps: [string, string[]][] = [
      [py.command, ['-m', 'venv', venv]],
      [
        join(bin, 'python'),
        ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '-q', '-r', REQUIREMENTS],
      ],
    ];
    for (const [command, args] of steps) {
      const run = spawnSync(command, args, { encoding: 'utf8', timeout: 600_000 });
      if (run.status !== 0) {
        throw new Error(
          `warc tools: ${command} ${args.join(' ')} failed: ${`${run.stderr}${run.stdout}`.slice(-2000)}`,
        );
      }
    }
    writeFileSync(marker, `${hash}\n`);
    process.stderr.write('warc tools: virtualenv ready\n');
  } finally {
    release();
  }
  return bin;
}
