/**
 * The layers, checked on the source itself (docs/layout.md): `lib/` is the core and imports nothing above it;
 * `functions/` are the deployables' adapters over the core; nothing that ships imports `test/` or `bench/`; the
 * deploy code (`cdk/`) leans on the core and the adapters only; the product CLI (`cli/`) sits on top, imported only
 * by `bin/` and tests, and no CLI command lives anywhere else. No import cycle anywhere. Static, type-only, re-export and dynamic imports all count. Inside the core: `lib/` imports
 * no Lambda package (event types, middy, Powertools: Lambda's shapes live with the adapters in functions/), only
 * lib/kafka imports kafkajs, the ports and the crawl path reach nothing of lib/redis (Redis implements the ports,
 * it does not define them), and lib/crawl is in rooms by stage. And the rules of the code itself: no write into a
 * third-party module, no source file over 500 lines, no citation of notes outside the repository.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(import.meta.dirname, '../..'));
const TOP = ['lib', 'functions', 'localstack', 'cli', 'cdk', 'bench', 'bin', 'test'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.parentPath.includes('node_modules'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** Every relative import of every source file, as repository paths. */
const graph = new Map<string, string[]>(
  TOP.flatMap(sources).map((file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const targets = [...text.matchAll(IMPORT)].map((m) => normalize(join(dirname(file), m[1] as string)));
    return [file, targets];
  }),
);

const top = (path: string) => path.split('/')[0] as string;

/** Where shipped and runnable source lives (everything but test/). */
const SHIPPED = TOP.filter((dir) => dir !== 'test');

/** Package (non-relative) import specifiers, `require` and `/// <reference types>` included. */
const PACKAGE_IMPORT =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"]([^./'"][^'"]*)['"]|\/\/\/\s*<reference\s+types\s*=\s*['"]([^'"]+)['"]/g;

/** The package specifiers a source file imports. */
function packageImports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(PACKAGE_IMPORT)].map((m) => (m[1] ?? m[2]) as string);
}

/** Lambda's event types, middy and Powertools: what only the adapters in functions/ may use. */
const LAMBDA_PACKAGE = /^(?:(?:@types\/)?aws-lambda(?:\/|$)|@middy\/|@aws-lambda-powertools\/)/;

/** Every file `starts` import, directly or through other files, `starts` included. */
function reach(starts: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const todo = [...starts];
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    todo.push(...(graph.get(file) ?? []));
  }
  return seen;
}

function offenders(from: (file: string) => boolean, allowed: (target: string) => boolean): string[] {
  return [...graph].flatMap(([file, targets]) =>
    from(file) ? targets.filter((t) => !allowed(t)).map((t) => `${file} -> ${t}`) : [],
  );
}

/** The longest a source file may be (issue 31: one concern per file, each readable in one sitting). */
const MAX_SOURCE_LINES = 500;

/** The names a file binds to package imports: default, namespace and named (with their local alias). */
function packageBindings(text: string): Set<string> {
  const names = new Set<string>();
  const IMPORT_CLAUSE = /\bimport\s+(?!type\b)([^'";]+?)\s+from\s*['"](?!node:)([^./'"][^'"]*)['"]/g;
  for (const m of text.matchAll(IMPORT_CLAUSE)) {
    const clause = m[1] as string;
    const ns = /\*\s+as\s+(\w+)/.exec(clause);
    if (ns) names.add(ns[1] as string);
    const def = /^(\w+)\s*(?:,|$)/.exec(clause.trim());
    if (def) names.add(def[1] as string);
    const named = /\{([^}]*)\}/.exec(clause);
    for (const part of named?.[1]?.split(',') ?? []) {
      const p = part.trim().replace(/^type\s+/, '');
      if (p === '' || part.trim().startsWith('type ')) continue;
      names.add((p.split(/\s+as\s+/).at(-1) as string).trim());
    }
  }
  const REQUIRE =
    /\b(?:const|let|var)\s+(\w+)\s*=\s*(?:createRequire\([^)]*\)|require)\(\s*['"]([^./'"][^'"]*)['"]\s*\)/g;
  for (const m of text.matchAll(REQUIRE)) names.add(m[1] as string);
  return names;
}

/**
 * Writes into third-party modules: the module cache or loader hooks, and any assignment to (or defineProperty,
 * setPrototypeOf, Object.assign on) a binding imported from a package or its members, prototypes included.
 */
function thirdPartyWrites(file: string, text: string): string[] {
  const found: string[] = [];
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  if (/\brequire\.cache\b|\bModule\._(?:cache|load|resolveFilename|extensions)\b|\bregisterHooks\s*\(/.test(code))
    found.push(`${file}: the module cache or a loader hook`);
  // A prototype written from outside its class: our own classes never need it, so it is somebody else's.
  if (
    /\b(?:Object\.(?:assign|defineProperty|defineProperties|setPrototypeOf)\(\s*[\w.]+\.prototype\b|\w+\.prototype\.\w+\s*=(?!=))/.test(
      code,
    )
  )
    found.push(`${file}: writes a prototype`);
  for (const name of packageBindings(code)) {
    const member = `(?<!:\\s*)\\b${name}(?:\\.\\w+|\\[[^\\]]+\\])+\\s*(?:=(?!=)|\\+=|-=|\\|\\|=|\\?\\?=)`;
    const call = `\\b(?:Object\\.(?:defineProperty|defineProperties|setPrototypeOf|assign)|Reflect\\.(?:set|defineProperty))\\(\\s*${name}\\b`;
    if (new RegExp(member).test(code)) found.push(`${file}: assigns to a member of "${name}" (a package import)`);
    if (new RegExp(call).test(code)) found.push(`${file}: redefines "${name}" (a package import)`);
  }
  return found;
}

/**
 * The one allowed exception: kafkajs's record-batch CRC-32C and Encoder buffers, replaced on load because they
 * measure (docs/design.md §4: a crawler worker's CPU on 30 KB pages 9.1-11.7 s without them, 5.3-5.5 s with them),
 * and its request queue's pending check, whose 1 ms timer loop on every idle connection is a kafkajs bug.
 */
const KAFKAJS_FAST_PATH = ['lib/kafka/crc32c.ts', 'lib/kafka/encoder.ts', 'lib/kafka/request-queue.ts'];

/** Five forms of write the check must see (two of them prototype writes). */
const PATCHING_FIXTURE = [
  "import { Encoder } from 'kafkajs/src/protocol/encoder';",
  "import * as undici from 'undici';",
  "import grpc from '@grpc/grpc-js';",
  'Encoder.prototype.writeInt32 = function () {};',
  "require.cache['/x'] = { exports: {} };",
  'undici.request = () => undefined;',
  'Object.defineProperty(grpc, "x", { value: 1 });',
  "const lib = require('ioredis'); lib.Command.prototype.x = 1;",
].join('\n');

describe('layers', () => {
  it('reads the whole tree', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('lib/crawl/crawler/leasing.ts')).toContain('lib/ports.ts');
  });

  it('lib/ (the core) imports only lib/', () => {
    expect(
      offenders(
        (f) => top(f) === 'lib',
        (t) => top(t) === 'lib',
      ),
    ).toEqual([]);
  });

  it('only lib/kafka imports kafkajs: every other module takes its types from lib/kafka (the client swaps in one place)', () => {
    expect(packageImports('lib/kafka/client.ts')).toContain('kafkajs');
    const found = ['lib', 'functions', 'localstack', 'cli', 'cdk', 'bench', 'bin']
      .flatMap(sources)
      .filter((file) => !file.startsWith('lib/kafka/'))
      .flatMap((file) =>
        packageImports(file)
          .filter((specifier) => specifier === 'kafkajs' || specifier.startsWith('kafkajs/'))
          .map((specifier) => `${file} -> ${specifier}`),
      );
    expect(found).toEqual([]);
  });

  it('lib/ imports no Lambda types (aws-lambda), middy or Powertools: the adapters in functions/ do', () => {
    // The check sees these imports where they are.
    expect(packageImports('functions/shared/msk.ts')).toContain('aws-lambda');
    expect(packageImports('functions/expire/handler.ts')).toEqual(
      expect.arrayContaining(['@middy/core', '@aws-lambda-powertools/logger/middleware']),
    );
    const found = sources('lib').flatMap((file) =>
      packageImports(file)
        .filter((specifier) => LAMBDA_PACKAGE.test(specifier))
        .map((specifier) => `${file} -> ${specifier}`),
    );
    expect(found).toEqual([]);
  });

  it('functions/ imports only lib/ and functions/', () => {
    expect(
      offenders(
        (f) => top(f) === 'functions',
        (t) => ['lib', 'functions'].includes(top(t)),
      ),
    ).toEqual([]);
  });

  it('cdk/ (the deploy code) imports only lib/, functions/ and cdk/: nothing of the local runtime', () => {
    expect(graph.get('cdk/constructs/crawl-function.ts')).toContain('cdk/repo-root.ts');
    expect(
      offenders(
        (f) => top(f) === 'cdk',
        (t) => ['lib', 'functions', 'cdk'].includes(top(t)),
      ),
    ).toEqual([]);
  });

  it('nothing that ships imports test/ or bench/', () => {
    const ships = (f: string) => ['lib', 'functions', 'localstack', 'cli', 'cdk', 'bin'].includes(top(f));
    expect(offenders(ships, (t) => !['test', 'bench'].includes(top(t)))).toEqual([]);
  });

  it('the CLI sits on top: only bin/ and tests import cli/, and nothing in localstack/ or below leans on it', () => {
    expect(graph.get('bin/crawl-cluster.ts')).toContain('cli/main.ts');
    expect(
      offenders(
        (f) => !['cli', 'bin', 'test'].includes(top(f)),
        (t) => top(t) !== 'cli',
      ),
    ).toEqual([]);
    expect(
      offenders(
        (f) => top(f) === 'cli',
        (t) => ['lib', 'functions', 'localstack', 'cli'].includes(top(t)),
      ),
    ).toEqual([]);
  });

  it('every CLI command lives in cli/: no *-command.ts and no command-line parser (commander) anywhere else', () => {
    expect(sources('cli').filter((f) => f.endsWith('-command.ts')).length).toBeGreaterThan(5);
    expect(packageImports('cli/main.ts')).toContain('commander');
    const outside = SHIPPED.filter((dir) => dir !== 'cli').flatMap(sources);
    const commands = outside.filter((f) => f.endsWith('-command.ts'));
    const parsers = outside.filter((f) => packageImports(f).some((p) => p === 'commander' || p === 'yargs'));
    // bin/ holds executables only: each is one import of cli/.
    const bins = sources('bin').filter((f) => !(graph.get(f) ?? []).every((t) => top(t) === 'cli'));
    expect({ commands, parsers, bins }).toEqual({ commands: [], parsers: [], bins: [] });
  });

  it('the ports own their types: lib/ports.ts reaches nothing of lib/redis, directly or through another file', () => {
    const reached = reach(['lib/ports.ts']);
    expect(reached).toContain('lib/frontier-model.ts');
    expect([...reached].filter((f) => f.startsWith('lib/redis/'))).toEqual([]);
  });

  it('lib/crawl reaches nothing of lib/redis: it takes the frontier, stats and robots.txt store through the ports', () => {
    const crawl = sources('lib/crawl');
    expect(graph.get('lib/crawl/fetch/robots.ts')).toContain('lib/ports.ts');
    const reached = [...reach(crawl)].filter((f) => f.startsWith('lib/redis/'));
    expect(reached).toEqual([]);
  });

  it('the crawler does not lean on the monitors or the REST API, nor the monitors on the REST API', () => {
    const inside = (dir: string) => (path: string) => path.startsWith(`lib/${dir}/`);
    expect(offenders(inside('crawl'), (t) => !inside('monitor')(t) && !inside('rest')(t))).toEqual([]);
    expect(offenders(inside('monitor'), (t) => !inside('rest')(t))).toEqual([]);
    expect(offenders(inside('schemas'), (t) => !inside('crawl')(t) && !inside('monitor')(t))).toEqual([]);
  });

  it('lib/crawl is in rooms by stage, each importing only the stages below it (docs/layout.md)', () => {
    // The room of a lib/crawl file: its sub-folder, or '' for the few files every stage shares.
    const room = (path: string) => {
      const parts = path.split('/');
      return parts[0] === 'lib' && parts[1] === 'crawl' ? (parts.length > 3 ? (parts[2] as string) : '') : undefined;
    };
    const below: Record<string, string[]> = {
      '': ['extract'],
      extract: [''],
      fetch: ['', 'extract'],
      spiders: ['', 'extract'],
      browser: ['', 'extract', 'fetch', 'spiders'],
      crawler: ['', 'extract', 'fetch', 'spiders'],
    };
    const rooms = new Set(sources('lib/crawl').map((f) => room(f) as string));
    expect([...rooms].sort()).toEqual(Object.keys(below).sort());
    const wrong = [...graph].flatMap(([file, targets]) => {
      const from = room(file);
      if (from === undefined) return [];
      return targets
        .filter((t) => {
          const to = room(t);
          return to !== undefined && to !== from && !(below[from] ?? []).includes(to);
        })
        .map((t) => `${file} -> ${t}`);
    });
    expect(wrong).toEqual([]);
    const flat = sources('lib/crawl').filter((f) => room(f) === '');
    expect(flat.length).toBeLessThanOrEqual(15);
  });

  it('cites only documents in the repository (docs/), never the team notes beside it', () => {
    const outside = /(?<![\w/])(CONTRACT|DESIGN|STYLE)\.md|shared\/notes\/|shared\/data\//;
    const citing = [...graph.keys()].filter((file) => outside.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(citing).toEqual([]);
  });

  it('no source file is over 500 lines (one concern per file), the shared test helpers included', () => {
    // The helpers are code many tests build on (fakes, service clients), held to the same rule; tests themselves
    // are lists of cases and are not.
    const big = [...SHIPPED, 'test/helpers']
      .flatMap((dir) =>
        readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
          .filter((e) => e.isFile() && /\.(ts|js|mjs|lua)$/.test(e.name) && !e.parentPath.includes('node_modules'))
          .map((e) => relative(ROOT, join(e.parentPath, e.name))),
      )
      .map((file) => ({ file, lines: readFileSync(join(ROOT, file), 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_SOURCE_LINES)
      .map((f) => `${f.file}: ${f.lines} lines`);
    expect(big).toEqual([]);
  });

  it('writes into no third-party module: no require.cache or loader hooks, no assignment to an imported package', () => {
    // The check sees a write where it is (a fixture of the forms it catches), and a type annotation is no write.
    expect(thirdPartyWrites('x.ts', PATCHING_FIXTURE)).toHaveLength(6); // one per form, and one for the file's prototype writes
    expect(
      thirdPartyWrites('x.ts', "import * as grpc from '@grpc/grpc-js';\nconst o: grpc.ServerOptions = {};"),
    ).toEqual([]);
    const found = SHIPPED.flatMap(sources)
      .filter((file) => !KAFKAJS_FAST_PATH.includes(file))
      .flatMap((file) => thirdPartyWrites(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(found).toEqual([]);
    // The allowed ones are what the check would catch, so a new write cannot hide in them unnoticed.
    for (const file of KAFKAJS_FAST_PATH)
      expect(thirdPartyWrites(file, readFileSync(join(ROOT, file), 'utf8')).length, file).toBeGreaterThan(0);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    // Iterative depth-first search: a cycle is an edge back to a file still open on the path.
    for (const start of graph.keys()) {
      if (state.has(start)) continue;
      const stack: { file: string; next: number }[] = [{ file: start, next: 0 }];
      state.set(start, 'open');
      path.push(start);
      while (stack.length > 0) {
        const frame = stack.at(-1) as { file: string; next: number };
        const targets = graph.get(frame.file) ?? [];
        if (frame.next >= targets.length) {
          state.set(frame.file, 'done');
          stack.pop();
          path.pop();
          continue;
        }
        const target = targets[frame.next++] as string;
        if (!graph.has(target)) continue;
        const seen = state.get(target);
        if (seen === 'open') cycles.push([...path.slice(path.indexOf(target)), target].join(' -> '));
        if (seen === undefined) {
          state.set(target, 'open');
          path.push(target);
          stack.push({ file: target, next: 0 });
        }
      }
    }
    expect(cycles).toEqual([]);
  });
});
