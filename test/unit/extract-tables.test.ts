/**
 * lib/crawl/extract/pass.ts replays htmlparser2's Parser over its Tokenizer with copies of the Parser's tables (the
 * elements an opening tag closes, void elements, foreign-context elements and HTML integration points). The library
 * keeps those tables private, so this reads them from the installed package's own Parser.js, as it runs, and fails
 * when a version changes them (or moves them where this cannot find them): the copies must then be redone.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { PARSER_TABLES } from '../../lib/crawl/extract/tables.ts';

/** The tables copied, named as in htmlparser2's Parser.js and in {@link PARSER_TABLES} alike. */
const TABLES = [
  'openImpliesClose',
  'voidElements',
  'foreignContextElements',
  'htmlIntegrationElements',
] as const satisfies readonly (keyof typeof PARSER_TABLES)[];

/** The Parser.js the extractor's `import { Tokenizer } from 'htmlparser2'` sits beside (the ESM build). */
const PARSER_JS = fileURLToPath(new URL('Parser.js', import.meta.resolve('htmlparser2')));

/**
 * Runs the module-level declarations of Parser.js (everything between its imports and `export class Parser`) in a
 * fresh context and returns the tables. They are plain literals, so they run without the imports.
 */
function libraryTables(): Record<(typeof TABLES)[number], unknown> {
  const source = readFileSync(PARSER_JS, 'utf8');
  const start = source.lastIndexOf('\nimport ');
  const end = source.indexOf('\nexport class Parser');
  if (start < 0 || end < start) throw new Error(`${PARSER_JS}: no module-level declarations before 'class Parser'`);
  const declarations = source.slice(source.indexOf('\n', start + 1), end);
  return runInNewContext(`${declarations}\n({ ${TABLES.join(', ')} })`, {}, { filename: PARSER_JS });
}

/** A table as plain sorted data, comparable across realms: sets become arrays, a map an object of arrays. */
function plain(table: unknown): unknown {
  if (table instanceof Map || Object.prototype.toString.call(table) === '[object Map]') {
    const entries = [...(table as Map<string, Iterable<string>>)].map(([k, v]) => [k, [...v].sort()] as const);
    return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)));
  }
  if (table instanceof Set || Object.prototype.toString.call(table) === '[object Set]') {
    return [...(table as Set<string>)].sort();
  }
  throw new Error(`not a Map or Set: ${String(table)}`);
}

describe("lib/crawl/extract/tables.ts's copies of htmlparser2's Parser tables", () => {
  const library = libraryTables();

  it('finds the tables in the installed Parser.js', () => {
    expect(PARSER_JS).toMatch(/htmlparser2[\\/]dist[\\/]esm[\\/]Parser\.js$/);
    expect(plain(library.voidElements)).toContain('br');
    expect(plain(library.openImpliesClose)).toHaveProperty('p', ['p']);
  });

  it.each(TABLES)('%s equals the library’s', (name) => {
    expect(plain(PARSER_TABLES[name])).toEqual(plain(library[name]));
  });

  it('a table that differs fails the comparison', () => {
    const changed = new Set([...PARSER_TABLES.voidElements, 'image']);
    expect(plain(changed)).not.toEqual(plain(library.voidElements));
  });
});
