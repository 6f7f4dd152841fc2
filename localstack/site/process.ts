/**
 * The fixture site (site.ts) served from a child process, for the throughput benchmarks: the client under
 * test then has its event loop (and, on a multi-core machine, a core) to itself, as a crawler fetching a
 * remote site would. Same options and the same {@link FixtureSite} shape; `hits` is a snapshot fetched
 * with {@link ChildSite.readHits} (the live map stays in the child), and `onRequest` is not available.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { FixtureSite, SiteOptions } from './site.ts';
import { siteGeometry } from './site.ts';

export interface ChildSite extends FixtureSite {
  /** Pid of the serving process (CPU accounting). */
  pid: number;
  /** Requests served per path so far. */
  readHits(): Promise<Map<string, number>>;
}

export async function startSiteProcess(options: Omit<SiteOptions, 'onRequest'> = {}): Promise<ChildSite> {
  const child = fork(join(import.meta.dirname, 'child.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`fixture site process exited with ${code} before listening`)));
    child.on('message', (m: { type?: string; port?: number }) => {
      if (m.type === 'ready') resolve(m.port as number);
    });
    child.send({ options });
  });
  child.removeAllListeners('exit');
  const g = siteGeometry(options, port);
  const hits = new Map<string, number>();
  return {
    port,
    pid: child.pid as number,
    hosts: g.hosts,
    pages: g.pages,
    url: g.url,
    linksOf: g.linksOf,
    reachable: g.reachable,
    hostMap: g.hostMap,
    hits,
    readHits: () =>
      new Promise((resolve) => {
        const onMessage = (m: { type?: string; hits?: [string, number][] }) => {
          if (m.type !== 'hits') return;
          child.off('message', onMessage);
          hits.clear();
          for (const [k, v] of m.hits ?? []) hits.set(k, v);
          resolve(hits);
        };
        child.on('message', onMessage);
        child.send({ type: 'hits' });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.send({ type: 'close' });
      }),
  };
}
