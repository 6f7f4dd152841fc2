/**
 * The crawler worker runs with the same Node flags wherever it runs (functions/crawler/node-flags.ts): the image's
 * CMD says what the local runtime passes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CRAWLER_NODE_FLAGS } from '../../functions/crawler/node-flags.ts';

const REPO_ROOT = join(import.meta.dirname, '../..');

describe('crawler node flags', () => {
  it("are the crawler image's CMD flags, in order, before the entry point", () => {
    const dockerfile = readFileSync(join(REPO_ROOT, 'functions/crawler/Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd).toBeDefined();
    expect(JSON.parse(cmd as string)).toEqual(['node', ...CRAWLER_NODE_FLAGS, 'functions/crawler/main.ts']);
  });

  it('size the young generation (a V8 flag node accepts)', () => {
    expect(CRAWLER_NODE_FLAGS).toContain('--max-semi-space-size=16');
    expect(process.allowedNodeEnvironmentFlags.has('--max-semi-space-size')).toBe(true);
  });
});
