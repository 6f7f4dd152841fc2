/**
 * LocalStack without Docker: the last open-source LocalStack (`localstack-core[runtime]` 4.9.2 from PyPI) in a
 * Python virtualenv under the services directory, run on the host as `python -m localstack.runtime.main` on
 * loopback with only what the cluster uses: S3 (bodies over the Kafka message limit), CloudWatch (the stats
 * function's metrics), CloudWatch Logs and Secrets Manager (an optional Redis password).
 *
 * The virtualenv is built from localstack/localstack-requirements.txt (every package pinned) and rebuilt only when
 * that file or the Python changes (a sha256 of both is kept in the virtualenv). It is built once per machine in the
 * cache directory (venv-cache.ts) and linked from the services directory, so clones and CI share it. Ready means
 * `/_localstack/health` reports each of those services running: they are loaded at start, not on their first call.
 * LocalStack keeps its state in memory (the open-source edition has no persistence), so a restart empties the
 * buckets, metrics and secrets.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ServiceStartError } from '../../lib/errors.ts';
import { REPO_ROOT } from '../repo-root.ts';
import type { Progress, ServiceStatus, ServicesLayout } from './layout.ts';
import {
  bringUp,
  describeLogs,
  ownedPid,
  type ServiceSpec,
  serviceStatus,
  startService,
  stopProcess,
} from './processes.ts';
import { cacheDir, lockVenvBuild, sharedVenvDir } from './venv-cache.ts';

const LOCALSTACK_REQUIREMENTS = join(REPO_ROOT, 'localstack', 'localstack-requirements.txt');

/** The LocalStack services `services up` runs and waits for. */
const LOCALSTACK_SERVICES = ['s3', 'cloudwatch', 'logs', 'secretsmanager'] as const;

/** Python versions the pinned requirements install on (tested on 3.11). */
const PYTHON_MIN = [3, 10] as const;
const PYTHON_MAX = [3, 13] as const;

/** The file in a virtualenv that holds the hash of what it was built from. */
const MARKER = '.crawl-cluster-requirements';

function paths(layout: ServicesLayout) {
  const dir = join(layout.dir, 'localstack');
  const venv = join(dir, 'venv');
  return {
    dir,
    venv,
    /** The virtualenv's interpreter: its path in the command line tells our LocalStack from another. */
    python: join(venv, 'bin', 'python'),
    marker: join(venv, MARKER),
    pipLog: join(dir, 'pip.log'),
    /** LocalStack's FILESYSTEM_ROOT: its cache, temporary files and object bodies. */
    filesystem: join(dir, 'filesystem'),
    out: join(dir, 'localstack.log'),
    pid: join(dir, 'localstack.pid'),
  };
}

interface Python {
  command: string;
  /** `3.11.7` */
  version: string;
  /** sys.executable: the real interpreter behind a shim or symlink. */
  executable: string;
}

const PROBE_SCRIPT = [
  'import sys',
  'try:',
  '    import ensurepip, venv',
  '    ok = "venv"',
  'except ImportError:',
  '    ok = "no-venv"',
  'print(sys.version.split()[0], ok, sys.executable)',
].join('\n');

type Probe = { python: Python; venv: boolean } | undefined;

function probePython(command: string): Probe {
  const run = spawnSync(command, ['-c', PROBE_SCRIPT], { encoding: 'utf8', timeout: 30_000 });
  if (run.status !== 0 || typeof run.stdout !== 'string') return undefined;
  const [version, ok, ...executable] = run.stdout.trim().split(' ');
  if (!version || !ok) return undefined;
  return { python: { command, version, executable: executable.join(' ') }, venv: ok === 'venv' };
}

function supported(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const at = major * 100 + minor;
  return at >= PYTHON_MIN[0] * 100 + PYTHON_MIN[1] && at <= PYTHON_MAX[0] * 100 + PYTHON_MAX[1];
}

/**
 * The Python that builds the virtualenv: CRAWL_LOCALSTACK_PYTHON, else python3.11, else python3. Debian's Python
 * lacks `venv`/`ensurepip` until its package python3-venv is installed: as root it is installed with apt-get
 * (as `redis-server` is), otherwise the error says how.
 */
function findPython(layout: ServicesLayout, progress: Progress, installed = false): Python {
  const candidates = layout.localstackPython ? [layout.localstackPython] : ['python3.11', 'python3'];
  const why: string[] = [];
  let debianWithoutVenv = false;
  for (const command of candidates) {
    const found = probePython(command);
    if (found === undefined) {
      why.push(`${command}: not found`);
      continue;
    }
    const { python, venv } = found;
    if (!supported(python.version)) {
      why.push(
        `${command} is Python ${python.version} (LocalStack needs ${PYTHON_MIN.join('.')} to ${PYTHON_MAX.join('.')})`,
      );
    } else if (!venv) {
      why.push(`${command} (${python.executable}) has no venv/ensurepip module`);
      if (python.executable.startsWith('/usr/bin/')) debianWithoutVenv = true;
    } else {
      return python;
    }
  }
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).stdout.trim();
  if (debianWithoutVenv && !installed && process.getuid?.() === 0 && apt) {
    progress('localstack: Python has no venv module: installing Debian package python3-venv (apt-get)');
    const run = spawnSync(
      'sh',
      ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv'],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    if (run.status === 0) return findPython(layout, progress, true);
  }
  throw new ServiceStartError(
    `localstack: no usable Python (${why.join('; ')}). Install Python 3.11 with its venv module ` +
      '(Debian: `sudo apt-get install -y python3-venv`), or name one with CRAWL_LOCALSTACK_PYTHON, ' +
      'or set CRAWL_LOCALSTACK=false to run without LocalStack',
  );
}

/** What the virtualenv was built from: the requirements and the interpreter. */
function buildHash(python: Python): string {
  return createHash('sha256')
    .update(readFileSync(LOCALSTACK_REQUIREMENTS))
    .update(`\n${python.version} ${python.executable}\n`)
    .digest('hex');
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The number of requirements (non-comment lines) of the requirements file, for the progress lines. */
function requirementCount(): number {
  return readFileSync(LOCALSTACK_REQUIREMENTS, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#')).length;
}

/** `pip install -r` into the virtualenv, its output in pip.log, a progress line every 10 s. */
async function pipInstall(p: { python: string; pipLog: string }, progress: Progress): Promise<void> {
  const total = requirementCount();
  const started = Date.now();
  let collected = 0;
  let installing = false;
  const log = createWriteStream(p.pipLog, { flags: 'w' });
  const child = spawn(
    p.python,
    [
      '-m',
      'pip',
      'install',
      '--no-input',
      '--disable-pip-version-check',
      '--progress-bar',
      'off',
      '-r',
      LOCALSTACK_REQUIREMENTS,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const seconds = () => Math.round((Date.now() - started) / 1000);
  const timer = setInterval(() => {
    progress(
      installing
        ? `localstack: pip: installing ${total} packages (${seconds()} s)`
        : `localstack: pip: ${collected} of ${total} packages collected (${seconds()} s)`,
    );
  }, 10_000);
  const lines = (stream: NodeJS.ReadableStream) =>
    createInterface({ input: stream }).on('line', (line) => {
      log.write(`${line}\n`);
      if (line.startsWith('Collecting ')) collected += 1;
      else if (line.startsWith('Installing collected packages') && !installing) {
        installing = true;
        progress(`localstack: pip: all ${total} packages collected; installing them (${seconds()} s)`);
      }
    });
  if (child.stdout) lines(child.stdout);
  if (child.stderr) lines(child.stderr);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (c) => resolve(c));
  }).finally(() => clearInterval(timer));
  await new Promise<void>((resolve) => log.end(resolve));
  if (code !== 0) {
    throw new ServiceStartError(
      `localstack: pip install -r ${LOCALSTACK_REQUIREMENTS} failed with code ${code}; ${describeLogs([{ file: p.pipLog, offset: 0 }], 15)}`,
    );
  }
  progress(`localstack: pip: ${total} packages installed in ${seconds()} s`);
}

/**
 * Links the services directory's virtualenv to the shared one built from the same requirements and Python, building
 * that first unless it is there. A virtualenv of the services directory's own that is current is kept.
 */
async function ensureVenv(layout: ServicesLayout, p: ReturnType<typeof paths>, progress: Progress): Promise<void> {
  const python = findPython(layout, progress);
  const want = buildHash(python);
  if (existsSync(p.python) && readText(p.marker) === want) return;
  const shared = sharedVenvDir(cacheDir(layout.cacheDir), want);
  const sharedPython = join(shared, 'bin', 'python');
  if (!(existsSync(sharedPython) && readText(join(shared, MARKER)) === want)) {
    mkdirSync(join(shared, '..'), { recursive: true });
    const release = lockVenvBuild(shared);
    try {
      progress(
        `localstack: building its virtualenv in ${shared} with ${python.command} ${python.version} from ` +
          'localstack/localstack-requirements.txt (first run on this machine, or the requirements changed; takes a minute or two)',
      );
      rmSync(shared, { recursive: true, force: true });
      const venv = spawnSync(python.command, ['-m', 'venv', shared], { encoding: 'utf8' });
      if (venv.status !== 0) {
        const said = `${venv.stderr ?? ''}${venv.stdout ?? ''}`.trim().split('\n').slice(-3).join(' ');
        throw new ServiceStartError(
          `localstack: \`${python.command} -m venv\` failed (${said || `code ${venv.status}`}); on Debian: sudo apt-get install -y python3-venv`,
        );
      }
      mkdirSync(p.dir, { recursive: true });
      await pipInstall({ python: sharedPython, pipLog: p.pipLog }, progress);
      // Last: an interrupted build has no marker and is redone by the next `up`.
      await writeFile(join(shared, MARKER), `${want}\n`);
    } finally {
      release();
    }
  } else {
    progress(`localstack: using the virtualenv ${shared} (built before from the same requirements)`);
  }
  mkdirSync(p.dir, { recursive: true });
  rmSync(p.venv, { recursive: true, force: true });
  symlinkSync(shared, p.venv);
}

/**
 * LocalStack's environment: only what it needs (not the caller's AWS_* or LocalStack settings), so the same
 * `up` gives the same LocalStack whatever the shell has.
 */
function localstackEnv(layout: ServicesLayout, p: ReturnType<typeof paths>): NodeJS.ProcessEnv {
  const address = `127.0.0.1:${layout.localstackPort}`;
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LANG: process.env.LANG ?? 'C.UTF-8',
    PYTHONUNBUFFERED: '1',
    SERVICES: LOCALSTACK_SERVICES.join(','),
    // Loaded at start: "ready" then means the services answer, and the first body stored waits for nothing.
    EAGER_SERVICE_LOADING: '1',
    GATEWAY_LISTEN: address,
    // The host in URLs LocalStack hands out (its default, localhost.localstack.cloud, needs public DNS).
    LOCALSTACK_HOST: address,
    // Host mode even inside a container (CI): every file under FILESYSTEM_ROOT, none in /var/lib/localstack.
    OVERRIDE_IN_DOCKER: '0',
    FILESYSTEM_ROOT: p.filesystem,
    // No DNS server (it would want port 53), no certificate download, no analytics: nothing leaves the machine.
    DNS_ADDRESS: '0',
    SKIP_SSL_CERT_DOWNLOAD: '1',
    DISABLE_EVENTS: '1',
  };
}

/** LocalStack's `/_localstack/health`: the state of each service. */
interface Health {
  services: Record<string, string>;
  version?: string;
}

/** How long a listener on the LocalStack port has to answer its health check. */
const PROBE_MS = 3000;

/** GET /_localstack/health on 127.0.0.1:`port` (plain node:http: no proxy, whatever the environment says). */
export function localstackHealth(port: number, timeoutMs = PROBE_MS): Promise<Health> {
  return new Promise((resolve, reject) => {
    const request = get({ host: '127.0.0.1', port, path: '/_localstack/health', timeout: timeoutMs }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => {
        try {
          const parsed = JSON.parse(body) as Partial<Health>;
          if (response.statusCode === 200 && typeof parsed.services === 'object' && parsed.services !== null) {
            resolve(parsed as Health);
            return;
          }
        } catch {
          // not JSON: not LocalStack
        }
        reject(new Error(`GET /_localstack/health answered HTTP ${response.statusCode} without LocalStack's health`));
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no HTTP answer within ${timeoutMs / 1000} s`)));
    request.on('error', reject);
  });
}

/** The services of {@link LOCALSTACK_SERVICES} that are neither running nor available, with their state. */
function notReady(health: Health): string[] {
  return LOCALSTACK_SERVICES.filter((s) => !['running', 'available'].includes(health.services[s] ?? '')).map(
    (s) => `${s} ${health.services[s] ?? 'absent'}`,
  );
}

/** Starts LocalStack (idempotent) and waits until its health reports our services running. */
/** What bringUp / serviceStatus need of LocalStack (processes.ts). */
function spec(layout: ServicesLayout, progress: Progress): ServiceSpec {
  const p = paths(layout);
  const port = layout.localstackPort;
  return {
    name: 'localstack',
    what: 'LocalStack',
    port,
    pidFile: p.pid,
    marker: p.python,
    out: p.out,
    portVariable: 'CRAWL_LOCALSTACK_PORT',
    timeoutMs: layout.timeoutSec * 1000,
    foreign: () =>
      localstackHealth(port).then(
        () => undefined,
        (error: Error) => error.message,
      ),
    start: async () => {
      await ensureVenv(layout, p, progress);
      mkdirSync(p.filesystem, { recursive: true });
      progress(`localstack: starting on 127.0.0.1:${port} (${LOCALSTACK_SERVICES.join(', ')}; log ${p.out})`);
      return startService('localstack', p.python, ['-m', 'localstack.runtime.main'], {
        out: p.out,
        pidFile: p.pid,
        env: localstackEnv(layout, p),
      });
    },
    ready: async () => {
      const missing = notReady(await localstackHealth(port));
      if (missing.length > 0) throw new Error(`not ready: ${missing.join(', ')}`);
      return true;
    },
    readyNote: LOCALSTACK_SERVICES.join(', '),
  };
}

export function localstackUp(layout: ServicesLayout, progress: Progress): Promise<ServiceStatus> {
  return bringUp(spec(layout, progress), progress);
}

export async function localstackDown(layout: ServicesLayout, progress: Progress): Promise<void> {
  const p = paths(layout);
  const pid = ownedPid(p.pid, p.python);
  if (pid === undefined) return;
  progress(`localstack: stopping pid ${pid}`);
  await stopProcess(pid, p.pid, 20_000);
}

export function localstackStatus(layout: ServicesLayout): Promise<ServiceStatus> {
  return serviceStatus(spec(layout, () => {}));
}
