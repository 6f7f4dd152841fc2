/**
 * docs/contract.md says what a failed fetch's page carries and what a user sees of failures; these checks keep it
 * saying what the code does: every fetch error kind in its table with the retry the code decides, the text a
 * `bad_response` ends with, every `crawl --json` status, and every field of the dashboard's throughput answer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NOT_RETRIED } from '../../lib/crawl/fetch/errors.ts';
import { FetchError, type FetchErrorKind } from '../../lib/crawl/types.ts';

const ROOT = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const contract = read('docs/contract.md');

/** The string literals of a union type declared in `source` as `type <name> = | 'a' | 'b'`. */
function unionMembers(source: string, name: string): string[] {
  const m = new RegExp(`type ${name} =([^;]*);`).exec(source);
  if (!m) throw new Error(`no type ${name}`);
  return [...(m[1] as string).matchAll(/'([^']+)'/g)].map((x) => x[1] as string);
}

/** The property names of an interface declared in `source`. */
function interfaceFields(source: string, name: string): string[] {
  const m = new RegExp(`interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(source);
  if (!m) throw new Error(`no interface ${name}`);
  return [...(m[1] as string).matchAll(/^ {2}(\w+)\??:/gm)].map((x) => x[1] as string);
}

describe('docs/contract.md on failures', () => {
  it('lists every fetch error kind with whether it is retried, as FetchError decides', () => {
    const kinds = unionMembers(read('lib/crawl/types.ts'), 'FetchErrorKind') as FetchErrorKind[];
    expect(kinds).toContain('bad_response');
    const rows = new Map(
      [...contract.matchAll(/^ {2}\| `(\w+)` +\| (yes|no) +\|/gm)].map((m) => [m[1] as string, m[2] === 'yes']),
    );
    expect([...rows.keys()].sort()).toEqual([...kinds].sort());
    for (const kind of kinds) expect(rows.get(kind), kind).toBe(new FetchError(kind, 'x').retryable);
  });

  it("quotes the end of a bad_response's exception as the crawler writes it", () => {
    expect(contract).toContain(`\`${NOT_RETRIED}\``);
  });

  it('names every status of the `crawl --json` summary', () => {
    const tally = read('cli/crawl-tally.ts');
    const statuses = /status: ('[^;]+');/.exec(tally)?.[1]?.match(/'([^']+)'/g) ?? [];
    expect(statuses.length).toBeGreaterThan(3);
    const section = contract.slice(contract.indexOf('With `--json` the summary'));
    for (const s of statuses) expect(section.slice(0, 900), s).toContain(`\`${s.slice(1, -1)}\``);
  });

  it("names every field of the dashboard's throughput and of a failed page it lists", () => {
    const api = read('lib/rest/dashboard-api.ts');
    const section = contract.slice(contract.indexOf("**The dashboard's JSON**"));
    for (const field of [
      ...interfaceFields(api, 'DashboardThroughput'),
      ...interfaceFields(api, 'DashboardFailure'),
      'failures',
    ]) {
      expect(section, field).toContain(field);
    }
  });
});
