/**
 * The fixture site (site.ts) served from a child process, for the throughput benchmarks: the client under
 * test then has its event loop (and, on a multi-core machine, a core) to itself, as a crawler fetching a
 * remote site would. Same options and the same {@link FixtureSite} shape; `hits` is a snapshot fetched
 * with {@link ChildSite.readHits} (the live map stays in the child), and `onRequest` is not available.
 * {@link forkFixture} is the child-process part both this and the simulated internet (internet-server.ts) use.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { InternetOptions } from './internet.ts';
import type { FixtureSite, SiteOptions } from './site.ts';
import { siteGeometry } from './site.ts';

export interface ChildSite extends FixtureSite {
  /** Pid of the serving process (CPU accounting). */
  pid: number;
  /** Requests served per path so far. */
  readHits(): Promise<Map<string, number>>;
}

/** What localstack/site/child.ts serves: the fixture site or the simulated internet. */
export type FixtureMessage = { options: Omit<SiteOptions, 'onRequest'> } | { internet: InternetOptions };

export interface ForkedFixture {
  port: number;
  pid: number;
  /** Requests served so far, fetched from the child (this map is reused and refilled on each call). */
  readHits(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/** Starts localstack/site/child.ts serving `message`, once it listens. */
export async function forkFixture(message: FixtureMessage): Promise<ForkedFixture> {
  const child = fork(join(import.meta.dirname, 'child.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`fixture site process exited with ${code} before listening`)));
    child.on('message', (m: { type?: string; port?: number }) => {
      if (m.type === 'ready') resolve(m.port as number);
    });
    child.send(message);
  });
  child.removeAllListeners('exit');
  const hits = new Map<string, number>();
  return {
    port,
    pid: child.pid as number,
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

export async function startSiteProcess(options: Omit<SiteOptions, 'onRequest'> = {}): Promise<ChildSite> {
  const forked = await forkFixture({ options });
  const g = siteGeometry(options, forked.port);
  const hits = new Map<string, number>();
  return {
    port: forked.port,
    pid: forked.pid,
    hosts: g.hosts,
    pages: g.pages,
    url: g.url,
    linksOf: g.linksOf,
    reachable: g.reachable,
    hostMap: g.hostMap,
    hits,
    readHits: async () => {
      const fresh = await forked.readHits();
      hits.clear();
      for (const [k, v] of fresh) hits.set(k, v);
      return hits;
    },
    close: forked.close,
  };
}
