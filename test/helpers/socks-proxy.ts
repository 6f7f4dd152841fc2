/**
 * A real SOCKS5 proxy for the proxy tests: microsocks (Debian's `microsocks` package, not written here; .ci/run
 * installs it) on 127.0.0.1, with or without user/password authentication, reporting the addresses it connected to
 * from its log.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer, connect as tcpConnect } from 'node:net';
import { waitUntil } from './services.ts';

export interface SocksProxy {
  /** `socks5://[user:password@]127.0.0.1:port`, with `credentials` (its own, unless others are given). */
  url(credentials?: { username: string; password: string }): string;
  /** `127.0.0.1:port`, the name the crawler gives it. */
  readonly name: string;
  /** `host:port` of every connection it opened for a client, in order (from its log). */
  readonly targets: string[];
  /** Stops it (a proxy that dies). */
  kill(): Promise<void>;
}

const MICROSOCKS = '/usr/bin/microsocks';

export async function startSocksProxy(
  options: { credentials?: { username: string; password: string } } = {},
): Promise<SocksProxy> {
  try {
    execFileSync('test', ['-x', MICROSOCKS]);
  } catch {
    throw new Error(`${MICROSOCKS} is missing: apt-get install microsocks (.ci/run installs it)`);
  }
  const port = await freePort();
  const c = options.credentials;
  const args = ['-i', '127.0.0.1', '-p', String(port), ...(c ? ['-u', c.username, '-P', c.password] : [])];
  const child: ChildProcess = spawn(MICROSOCKS, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const targets: string[] = [];
  let log = '';
  const read = (chunk: Buffer) => {
    log += chunk.toString('utf8');
    const lines = log.split('\n');
    log = lines.pop() ?? '';
    for (const line of lines) {
      const target = /connected to (\S+)$/.exec(line.trim())?.[1];
      if (target) targets.push(target);
    }
  };
  child.stdout?.on('data', read);
  child.stderr?.on('data', read);
  await waitUntil('microsocks to listen', () => listening(port), 5000);
  const name = `127.0.0.1:${port}`;
  return {
    url: (credentials = c) =>
      credentials
        ? `socks5://${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@${name}`
        : `socks5://${name}`,
    name,
    targets,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
