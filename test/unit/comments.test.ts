/**
 * Source comments say what and why, never what a bench measured (docs/style.md, "Comments"): a rate or a cost per
 * page goes stale with the next change and belongs in bench/PROFILE.md and the commit body. Checked on the comments
 * of the shipped code (lib/, functions/, cli/, localstack/, cdk/) with a deliberately narrow pattern: a number
 * followed by a rate (pages/s, URLs/s, requests/s), a cost per page (ms/page, ms per page, µs per) or a speed-up
 * (x faster). Limits and defaults the code sets are written differently (`10 MiB`, `5 s`) and do not match.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(import.meta.dirname, '../..'));
const DIRS = ['lib', 'functions', 'cli', 'localstack', 'cdk'];

/** A measured rate, per-page cost or speed-up, as bench results are written. */
const FIGURE =
  /\d[\d,.]*\s*(?:k\s+)?(?:(?:(?:article|plain)\s+)?(?:pages?|URLs?|requests?|msgs?|messages?)\s*(?:\/\s*(?:s|sec|min)\b|(?:per|a)\s+(?:second|minute)\b)|(?:CPU\s+)?(?:ms|µs|us)\s*(?:of\s+\w+\s+)?(?:\/\s*|per\s+|a\s+)(?:article\s+|plain\s+)?(?:page|URL|request)s?\b|µs\s+(?:per|a)\b|(?:x|×|times)\s+(?:faster|slower)\b)/gi;

/** Comments of a TypeScript or JavaScript source: `//` and block comments, with strings, templates and regexes skipped. */
function scriptComments(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  const lineAt = (i: number) => text.slice(0, i).split('\n').length;
  const templates: number[] = []; // brace depth at each open `${`
  let depth = 0;
  let prev = ''; // last significant character outside comments
  let i = 0;
  const skipQuoted = (quote: string) => {
    for (i++; i < text.length && text[i] !== quote && text[i] !== '\n'; i++) if (text[i] === '\\') i++;
    i++;
  };
  const skipTemplate = () => {
    for (; i < text.length; i++) {
      if (text[i] === '\\') i++;
      else if (text[i] === '`') {
        i++;
        return;
      } else if (text[i] === '$' && text[i + 1] === '{') {
        templates.push(depth);
        depth++;
        i += 2;
        return;
      }
    }
  };
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      const stop = end < 0 ? text.length : end;
      out.push({ line: lineAt(i), text: text.slice(i + 2, stop) });
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out.push({ line: lineAt(i), text: text.slice(i + 2, stop - 2) });
      i = stop;
    } else if (
      c === '/' &&
      (prev === '' ||
        /[(,=:[!&|?{};+\-*%<>~^]/.test(prev) ||
        /\b(?:return|typeof|case|of|in)$/.test(text.slice(Math.max(0, i - 8), i).trimEnd()))
    ) {
      // A regex literal: up to the unescaped `/` outside a character class.
      let inClass = false;
      for (i++; i < text.length && text[i] !== '\n'; i++) {
        if (text[i] === '\\') i++;
        else if (text[i] === '[') inClass = true;
        else if (text[i] === ']') inClass = false;
        else if (text[i] === '/' && !inClass) break;
      }
      i++;
      prev = 'a';
    } else if (c === "'" || c === '"') {
      skipQuoted(c);
      prev = 'a';
    } else if (c === '`') {
      i++;
      skipTemplate();
      prev = 'a';
    } else if (c === '}' && templates.length > 0 && templates[templates.length - 1] === depth - 1) {
      templates.pop();
      depth--;
      i++;
      skipTemplate();
      prev = 'a';
    } else {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      if (!/\s/.test(c)) prev = c;
      i++;
    }
  }
  return out;
}

/** Comments of a Lua script (`--` lines and `--[[ ]]` blocks) or of a shell script or Dockerfile (`#` lines). */
function lineComments(text: string, pattern: RegExp): { line: number; text: string }[] {
  return [...text.matchAll(pattern)].map((m) => ({
    line: text.slice(0, m.index).split('\n').length,
    text: m[0],
  }));
}

function comments(file: string): { line: number; text: string }[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  if (/\.(?:ts|js|mjs|cjs)$/.test(file)) return scriptComments(text);
  if (file.endsWith('.lua')) return lineComments(text, /--\[\[[\s\S]*?\]\]|--[^\n]*/g);
  if (/(?:\.sh|Dockerfile)$/.test(file)) return lineComments(text, /(?:^|[ \t])#[^\n]*/gm);
  return [];
}

const files = DIRS.flatMap((dir) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && !e.parentPath.includes('node_modules'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name))),
);

describe('source comments', () => {
  it('the scanner finds comments and skips strings, templates and regexes', () => {
    const found = scriptComments(
      [
        "const a = '// not 1 page/s'; // one",
        // A template with a nested template in its placeholder (`$` and `{` apart, so this is no placeholder here).
        ['const b = `x $', '{`/* $', '{"no"} */`} // still the template`; /* two */'].join(''),
        'const r = /\\/\\/ 2 pages\\/s/; const d = a / 2 / 3; // three',
      ].join('\n'),
    ).map((c) => c.text.trim());
    expect(found).toEqual(['one', 'two', 'three']);
  });

  it('the pattern matches bench figures and not the code own limits', () => {
    for (const figure of [
      '3,591 pages/s',
      '0.19 ms/page',
      '1.9 ms per page',
      '25 µs per lease',
      '4x faster',
      '120 URLs/s',
      '3,600 plain pages/s',
      '0.6 ms of Redis per page',
    ])
      expect(figure).toMatch(new RegExp(FIGURE.source, 'i'));
    for (const limit of [
      '10 MiB default',
      'every 5 s',
      'at most 16 pages',
      '1 ms timer',
      'pages/s a saturated task measures',
    ])
      expect(limit).not.toMatch(new RegExp(FIGURE.source, 'i'));
  });

  it('name no measured rate, per-page cost or speed-up in lib/, functions/, cli/, localstack/ or cdk/', () => {
    const hits = files.flatMap((file) =>
      comments(file).flatMap((c) =>
        [...c.text.matchAll(FIGURE)].map(
          (m) => `${file}:${c.line + c.text.slice(0, m.index).split('\n').length - 1}: ${m[0]}`,
        ),
      ),
    );
    expect(hits).toEqual([]);
  });
});
