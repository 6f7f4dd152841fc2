/**
 * Which Node runs crawler workers on this machine (localstack/runtime/crawler-node.ts): the crawler image's, named by
 * CRAWLER_NODE, which localstack/toolchain.sh installs at the image's major version.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CRAWLER_NODE_FLAGS } from '../../functions/crawler/node-flags.ts';
import { ConfigError } from '../../lib/errors.ts';
import { crawlerNode } from '../../localstack/runtime/crawler-node.ts';

const REPO_ROOT = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'crawler-node-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('crawlerNode', () => {
  it("is this process's Node when CRAWLER_NODE is unset or blank", () => {
    expect(crawlerNode('')).toBe(process.execPath);
    expect(crawlerNode('  ')).toBe(process.execPath);
  });

  it('is CRAWLER_NODE when it names an executable file', () => {
    const bin = join(dir, 'node');
    writeFileSync(bin, '#!/bin/sh\n');
    chmodSync(bin, 0o755);
    expect(crawlerNode(bin)).toBe(bin);
  });

  it('refuses a relative path, a missing file, a directory and a file that is not executable, naming the value', () => {
    expect(() => crawlerNode('node')).toThrow(ConfigError);
    expect(() => crawlerNode('node')).toThrow(/^CRAWLER_NODE: must be an absolute path.*"node"/);
    const missing = join(dir, 'missing');
    expect(() => crawlerNode(missing)).toThrow(`CRAWLER_NODE: "${missing}" is not an executable file`);
    expect(() => crawlerNode(dir)).toThrow(`CRAWLER_NODE: "${dir}" is not an executable file`);
    const plain = join(dir, 'plain');
    writeFileSync(plain, '');
    chmodSync(plain, 0o644);
    expect(() => crawlerNode(plain)).toThrow(`CRAWLER_NODE: "${plain}" is not an executable file`);
  });
});

describe("the crawler image's Node", () => {
  const dockerfile = readFileSync(join(REPO_ROOT, 'functions/crawler/Dockerfile'), 'utf8');
  const toolchain = readFileSync(join(REPO_ROOT, 'localstack/toolchain.sh'), 'utf8');

  it("is the major the toolchain installs for CRAWLER_NODE, in both of the image's stages", () => {
    const froms = [...dockerfile.matchAll(/^FROM node:(\d+)-slim\b/gm)].map((m) => m[1]);
    expect(froms).toHaveLength(2);
    const major = /CRAWL_CRAWLER_NODE_MAJOR:-(\d+)/.exec(toolchain)?.[1];
    expect(froms).toEqual([major, major]);
  });

  it('takes the worker flags, when CRAWLER_NODE names it (as in CI)', () => {
    const node = crawlerNode();
    const out = execFileSync(node, [...CRAWLER_NODE_FLAGS, '-p', 'process.version'], { encoding: 'utf8' });
    expect(out.trim()).toMatch(/^v\d+\./);
    if (process.env.CRAWLER_NODE) {
      const major = /CRAWL_CRAWLER_NODE_MAJOR:-(\d+)/.exec(toolchain)?.[1];
      expect(out.trim().startsWith(`v${major}.`), `CRAWLER_NODE runs ${out.trim()}`).toBe(true);
    }
  });
});
