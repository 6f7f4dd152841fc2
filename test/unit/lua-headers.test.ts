/**
 * Every Lua script's header names the KEYS and ARGV indexes its body reads, and only those (docs/style.md §2). The
 * protocol between TypeScript and Lua is positional, so a header that drifts from its body misleads every caller.
 *
 * A script is checked as the loader runs it (lib/redis/scripts.ts): its own file and each include its
 * `--- @include "name"` lines splice in (lib/redis/scripts/includes/name.lua). Its headers are the first `--[[ ]]`
 * block of the script and of each of those includes; its body is the code of all of them, comments and strings left
 * out.
 *
 * In a header, every `KEYS[...]` / `ARGV[...]` counts, in an entry line or in prose, except one that follows
 * `<file>.lua's ` (an index of another script, e.g. "enqueue.lua's ARGV[7..]"):
 * - `ARGV[6]` names index 6; `KEYS[1..18]` names 1 to 18;
 * - `ARGV[7..]` declares a group read at computed offsets from 7 on;
 * - anything else (`KEYS[18+i]`, `ARGV[7+2L]`, `ARGV[a0 + 1]`, `KEYS[6i+1..6i+6]`) declares a group read at
 *   computed offsets.
 * In a body, `ARGV[6]` reads index 6; `ARGV[i + 1]` (any index that is not a number), or KEYS/ARGV used whole (not
 * `#ARGV`), reads at a computed offset.
 *
 * The rules, per script, for KEYS and ARGV alike:
 * 1. every index the body reads literally is named in a header;
 * 2. a body that reads at computed offsets has a header that declares a group;
 * 3. every index a header names is read literally, unless the body reads at computed offsets and a header declares
 *    a group `X[m..]` with m <= the index (e.g. enqueue.lua's ARGV[6..8], read by includes/enqueue.lua as
 *    ARGV[a0 + k]);
 * 4. every group a header declares is read at computed offsets somewhere in the body.
 * Failures list script, index and what is wrong.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { allScripts } from '../../lib/redis/scripts.ts';

const DIR = join(import.meta.dirname, '../../lib/redis/scripts');
/** The loader's include line (lib/redis/scripts.ts INCLUDE). */
const INCLUDE = /^--- @include "([a-z0-9-]+)"$/gm;

type LuaArray = 'KEYS' | 'ARGV';

/** One file of a script as loaded: the script itself or one of its includes. */
interface LuaFile {
  file: string;
  source: string;
}

type HeaderRef = { array: LuaArray; file: string; text: string } & (
  | { kind: 'index'; from: number; to: number }
  | { kind: 'group'; start: number | null }
);

interface BodyRef {
  array: LuaArray;
  file: string;
  line: number;
  text: string;
  /** The index, or null when it is computed. */
  index: number | null;
}

/**
 * The source with comments and string literals blanked (newlines kept, so lines still count): what the body really
 * reads, not what a comment or a string mentions.
 */
function code(source: string): string {
  let out = '';
  let i = 0;
  const blank = (text: string) => text.replace(/[^\n]/g, ' ');
  while (i < source.length) {
    const rest = source.slice(i);
    const long = /^(--)?\[(=*)\[/.exec(rest);
    if (long) {
      const close = `]${long[2]}]`;
      const end = source.indexOf(close, i + long[0].length);
      const stop = end < 0 ? source.length : end + close.length;
      out += blank(source.slice(i, stop));
      i = stop;
    } else if (rest.startsWith('--')) {
      const end = source.indexOf('\n', i);
      const stop = end < 0 ? source.length : end;
      out += blank(source.slice(i, stop));
      i = stop;
    } else if (rest[0] === "'" || rest[0] === '"') {
      let j = i + 1;
      while (j < source.length && source[j] !== rest[0] && source[j] !== '\n') j += source[j] === '\\' ? 2 : 1;
      out += blank(source.slice(i, j + 1));
      i = j + 1;
    } else {
      out += rest[0];
      i++;
    }
  }
  return out;
}

/** The first `--[[ ]]` block, when the file opens with one. */
function headerOf(source: string): string | null {
  if (!source.startsWith('--[[')) return null;
  const end = source.indexOf(']]');
  return end < 0 ? null : source.slice(4, end);
}

function headerRefs(f: LuaFile): HeaderRef[] {
  const header = headerOf(f.source) ?? '';
  const out: HeaderRef[] = [];
  for (const m of header.matchAll(/\b(KEYS|ARGV)\[([^\]\n]*)\]/g)) {
    // Another script's index ("enqueue.lua's ARGV[7..]"): not this script's.
    if (/\.lua's\s+$/.test(header.slice(0, m.index))) continue;
    const array = m[1] as LuaArray;
    const text = (m[2] as string).replace(/\s+/g, '');
    const ref = { array, file: f.file, text };
    const one = /^(\d+)$/.exec(text);
    const range = /^(\d+)\.\.(\d+)$/.exec(text);
    const open = /^(\d+)\.\.$/.exec(text);
    if (one) out.push({ ...ref, kind: 'index', from: Number(one[1]), to: Number(one[1]) });
    else if (range) out.push({ ...ref, kind: 'index', from: Number(range[1]), to: Number(range[2]) });
    else out.push({ ...ref, kind: 'group', start: open ? Number(open[1]) : null });
  }
  return out;
}

function bodyRefs(f: LuaFile): BodyRef[] {
  const body = code(f.source);
  const out: BodyRef[] = [];
  for (const m of body.matchAll(/\b(KEYS|ARGV)\b/g)) {
    const at = m.index;
    if (body[at - 1] === '#') continue; // a length, not a read
    const array = m[1] as LuaArray;
    const line = body.slice(0, at).split('\n').length;
    let j = at + m[0].length;
    while (body[j] === ' ') j++;
    if (body[j] !== '[') {
      out.push({ array, file: f.file, line, text: array, index: null });
      continue;
    }
    let depth = 0;
    let k = j;
    for (; k < body.length; k++) {
      if (body[k] === '[') depth++;
      else if (body[k] === ']' && --depth === 0) break;
    }
    const inner = body.slice(j + 1, k).trim();
    out.push({
      array,
      file: f.file,
      line,
      text: `${array}[${inner}]`,
      index: /^\d+$/.test(inner) ? Number(inner) : null,
    });
  }
  return out;
}

/** What is wrong with one script's headers (the rules at the top), one line per index. */
function checkScript(name: string, files: LuaFile[]): string[] {
  const problems: string[] = [];
  for (const f of files)
    if (headerOf(f.source) === null) problems.push(`${name}: ${f.file} does not open with a --[[ ]] header`);
  const header = files.flatMap(headerRefs);
  const body = files.flatMap(bodyRefs);
  for (const array of ['KEYS', 'ARGV'] as const) {
    const named = new Map<number, string>();
    for (const h of header)
      if (h.array === array && h.kind === 'index') for (let n = h.from; n <= h.to; n++) named.set(n, h.file);
    const groups = header.filter((h) => h.array === array && h.kind === 'group');
    const literal = new Map<number, BodyRef>();
    for (const b of body) if (b.array === array && b.index !== null && !literal.has(b.index)) literal.set(b.index, b);
    const computed = body.filter((b) => b.array === array && b.index === null);

    for (const [n, b] of [...literal].sort(([x], [y]) => x - y))
      if (!named.has(n)) problems.push(`${name}: ${array}[${n}] is read (${b.file}:${b.line}) but no header names it`);
    if (computed.length > 0 && groups.length === 0) {
      const b = computed[0] as BodyRef;
      problems.push(
        `${name}: ${b.text} is read at a computed offset (${b.file}:${b.line}) but no header declares a group ` +
          `(${array}[m..] or ${array}[<expression>])`,
      );
    }
    const starts = groups.flatMap((g) => (g.kind === 'group' && g.start !== null ? [g.start] : []));
    for (const [n, file] of [...named].sort(([x], [y]) => x - y)) {
      if (literal.has(n)) continue;
      if (computed.length > 0 && starts.some((m) => m <= n)) continue;
      problems.push(
        `${name}: ${array}[${n}] is named in ${file}'s header but never read ` +
          `(not literally, nor at a computed offset in a declared ${array}[m..] group)`,
      );
    }
    if (computed.length === 0)
      for (const g of groups)
        problems.push(
          `${name}: ${array}[${g.text}] is declared as a group in ${g.file}'s header but ${array} is read only at ` +
            'literal indexes',
        );
  }
  return problems;
}

/** A script's file and its includes, in include order, as the loader splices them. */
function scriptFiles(file: string): LuaFile[] {
  const source = readFileSync(join(DIR, file), 'utf8');
  const includes = [...source.matchAll(INCLUDE)].map((m) => `includes/${m[1]}.lua`);
  return [{ file, source }, ...includes.map((f) => ({ file: f, source: readFileSync(join(DIR, f), 'utf8') }))];
}

const SCRIPT_FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.lua'))
  .sort();

describe('Lua script headers', () => {
  test('the scripts checked here are the ones the loader runs, includes spliced in the same way', () => {
    const loaded = new Map(allScripts().map((s) => [s.name, s.source]));
    expect([...loaded.keys()].sort()).toEqual(SCRIPT_FILES.map((f) => f.slice(0, -4)).sort());
    for (const file of SCRIPT_FILES) {
      const [own, ...includes] = scriptFiles(file) as [LuaFile, ...LuaFile[]];
      let k = 0;
      const spliced = own.source.replace(INCLUDE, () => (includes[k++] as LuaFile).source);
      expect(spliced, file).toBe(loaded.get(file.slice(0, -4)));
    }
  });

  test('every include is used by a script', () => {
    const used = new Set(SCRIPT_FILES.flatMap((f) => scriptFiles(f).slice(1)).map((f) => f.file));
    const includes = readdirSync(join(DIR, 'includes')).filter((f) => f.endsWith('.lua'));
    expect(includes.map((f) => `includes/${f}`).filter((f) => !used.has(f))).toEqual([]);
  });

  test('every KEYS and ARGV index a script reads is named in its headers, and every index they name is read', () => {
    const problems = SCRIPT_FILES.flatMap((f) => checkScript(f.slice(0, -4), scriptFiles(f)));
    expect(problems).toEqual([]);
  });
});

describe('the header check itself', () => {
  const lua = (header: string, body: string) => `--[[\n${header}\n]]\n${body}\n`;
  const check = (header: string, body: string, includes: LuaFile[] = []) =>
    checkScript('s', [{ file: 's.lua', source: lua(header, body) }, ...includes]);

  test('passes a header that names exactly what the body reads', () => {
    expect(check('KEYS[1] k\nARGV[1..2] a, b', "redis.call('SET', KEYS[1], ARGV[1] .. ARGV[2])")).toEqual([]);
  });

  test('reports an index read but not named (lease.lua read ARGV[9] with ARGV 1-8 documented)', () => {
    expect(
      check(
        'KEYS[1] k\nARGV[1..8] a',
        'local x = KEYS[1] .. ARGV[1] .. ARGV[2] .. ARGV[3] .. ARGV[4]\n' +
          'local y = ARGV[5] .. ARGV[6] .. ARGV[7] .. ARGV[8] .. ARGV[9]',
      ),
    ).toEqual(['s: ARGV[9] is read (s.lua:6) but no header names it']);
  });

  test('reports an index named but never read', () => {
    expect(check('KEYS[1] k\nARGV[1] a\nARGV[2] gone', 'return {KEYS[1], ARGV[1]}')).toEqual([
      "s: ARGV[2] is named in s.lua's header but never read (not literally, nor at a computed offset in a " +
        'declared ARGV[m..] group)',
    ]);
  });

  test('requires a group for reads at computed offsets, and reads at computed offsets for a group', () => {
    const loop = "for i = 2, tonumber(ARGV[1]) + 1 do redis.call('SADD', KEYS[1], ARGV[i]) end";
    expect(check('KEYS[1] k\nARGV[1] n', loop)).toEqual([
      's: ARGV[i] is read at a computed offset (s.lua:5) but no header declares a group (ARGV[m..] or ARGV[<expression>])',
    ]);
    expect(check('KEYS[1] k\nARGV[1] n\nARGV[2..] members', "redis.call('SADD', KEYS[1], ARGV[1])")).toEqual([
      "s: ARGV[2..] is declared as a group in s.lua's header but ARGV is read only at literal indexes",
    ]);
    expect(
      check('KEYS[1] k\nARGV[1] n\nARGV[2..] members', "redis.call('SADD', KEYS[1], unpack(ARGV, 2, 1 + ARGV[1]))"),
    ).toEqual([]);
  });

  test('lets a named index be read at a computed offset only inside a declared X[m..] group', () => {
    const body = "local a0 = 1\nredis.call('SET', KEYS[1], ARGV[a0 + 1])";
    expect(check('KEYS[1] k\nARGV[1..] batch\nARGV[2] value', body)).toEqual([]);
    expect(check('KEYS[1] k\nARGV[a0 + k] batch\nARGV[2] value', body)).toEqual([
      "s: ARGV[2] is named in s.lua's header but never read (not literally, nor at a computed offset in a declared " +
        'ARGV[m..] group)',
    ]);
  });

  test("counts an include's header and body, and ignores comments, strings and another script's indexes", () => {
    const include = { file: 'includes/x.lua', source: lua('KEYS[1] k\nARGV[1] now', 'local K = { k = KEYS[1] }') };
    expect(
      check(
        "ARGV[2] v (restamp.lua's ARGV[8])",
        "-- KEYS[2]\n--[[ ARGV[3] ]]\nredis.call('SET', K.k, ARGV[2], 'ARGV[4]')\nlocal now = ARGV[1]",
        [include],
      ),
    ).toEqual([]);
    const unread = { file: 'includes/x.lua', source: lua('KEYS[1] k\nARGV[1] now', 'local K = {}') };
    expect(check('ARGV[2] v', "redis.call('SET', K.k, ARGV[2])", [unread])).toEqual([
      "s: KEYS[1] is named in includes/x.lua's header but never read (not literally, nor at a computed offset in a " +
        'declared KEYS[m..] group)',
      "s: ARGV[1] is named in includes/x.lua's header but never read (not literally, nor at a computed offset in a " +
        'declared ARGV[m..] group)',
    ]);
  });
});
