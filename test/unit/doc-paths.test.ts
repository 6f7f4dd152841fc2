/**
 * Every repository path that README.md and docs/*.md name exists in the tree (issue 31, "docs a check keeps true"),
 * so a file moved or removed fails CI until the prose follows it. README.md stays a short user's guide (issue 34):
 * under README_MAX_LINES lines, linking every page of docs/ where the rest lives; the layout tree is docs/layout.md's.
 *
 * What counts as a named path, kept to three simple rules:
 * 1. A markdown link `[text](target)` whose target has no scheme and is not an anchor: resolved against the
 *    markdown file's folder.
 * 2. Anywhere else (prose, code spans, fenced commands), a token that starts with one of the repository's own
 *    top-level folders followed by `/` (`lib/crawl/fetch/fetcher.ts`, `bench/results/*.json`, `localstack/`), not inside a
 *    URL or an absolute path. Folders .gitignore lists (`.services/`, `.toolchain/`, `node_modules/`) are a
 *    machine's run-time state, not the tree, and absolute paths (`/app/plugins`) are a container's or the user's.
 * 3. A fenced block that opens with `package.json` is a layout tree: a line starting with `name/`, indented one
 *    level (2 spaces) under a folder's line, is a folder of that folder and must exist exactly there; every other
 *    file name (`name.ext`) or folder name (`name/`) on a line must exist somewhere under the folder the line
 *    belongs to, since the descriptions name files of subfolders too (`shared/ (aws.ts, msk.ts)`); a path starting
 *    with a top-level folder is checked from the root.
 * A glob or placeholder (`*`, `<name>`, `{a,b}`, `$VAR`) is checked up to the folder before it. Paths of other
 * projects that happen to start with one of our folder names are listed in FOREIGN with the project they belong to.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, normalize, posix } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(import.meta.dirname, '../..'));

/** Paths in the docs that are another project's, never ours (doc file → paths). */
const FOREIGN: Record<string, string[]> = {
  // Powertools for AWS Lambda (TypeScript)'s example app, named as a model to follow.
  'docs/style.md': ['examples/app/functions'],
};

/** Top-level names .gitignore excludes (plain names only: the globs there match no top-level folder). */
const IGNORED = new Set([
  '.git',
  ...readFileSync(join(ROOT, '.gitignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim().replace(/\/$/, ''))
    .filter((l) => /^[\w.-]+$/.test(l)),
]);

/** Plain names a folder's own .gitignore excludes there (bench/.gitignore: `.venv/`, the peers' virtualenv). */
function ignoredIn(dir: string): Set<string> {
  if (dir === '') return IGNORED;
  try {
    return new Set(
      readFileSync(join(ROOT, dir, '.gitignore'), 'utf8')
        .split('\n')
        .map((l) => l.trim().replace(/^\//, '').replace(/\/$/, ''))
        .filter((l) => /^[\w.-]+$/.test(l)),
    );
  } catch {
    return new Set();
  }
}

/** Every file and folder of the tree as a repository path (folders with a trailing `/`). */
function walk(dir: string): string[] {
  const ignored = ignoredIn(dir);
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    if (ignored.has(e.name)) return [];
    const path = dir === '' ? e.name : `${dir}/${e.name}`;
    return e.isDirectory() ? [`${path}/`, ...walk(path)] : [path];
  });
}
const TREE = walk('');
const EXISTS = new Set(TREE);
const TOP_DIRS = TREE.filter((p) => /^[^/]+\/$/.test(p)).map((p) => p.slice(0, -1));

/** A path as it exists: file, or folder with or without its trailing slash. */
function exists(path: string): boolean {
  const p = path.replace(/\/$/, '');
  return EXISTS.has(p) || EXISTS.has(`${p}/`);
}

/** The part of a path before its first glob or placeholder segment (`bench/results/*.json` → `bench/results/`). */
function fixedPart(path: string): string {
  const at = path.search(/[*<>{}$]/);
  return at < 0 ? path : path.slice(0, path.lastIndexOf('/', at) + 1);
}

/** A name mentioned in a layout tree exists at or somewhere under `dir` (a repository folder, `''` for the root). */
function existsUnder(dir: string, name: string): boolean {
  const n = name.replace(/\/$/, '');
  return TREE.some((p) => {
    const q = p.replace(/\/$/, '');
    return (dir === '' || q.startsWith(dir)) && (q === `${dir}${n}` || q.endsWith(`/${n}`));
  });
}

/** One path a document names that the tree lacks. */
interface Missing {
  doc: string;
  line: number;
  path: string;
}

const LINK = /\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
/** Rule 2: a token starting with a top-level folder, not preceded by a word, `/`, `.`, `@` or `:` (URLs, packages). */
const ROOTED = new RegExp(
  `(?<![\\w@./:~-])((?:${TOP_DIRS.map((d) => d.replace(/\./g, '\\.')).join('|')})/[^\\s\`'"()\\[\\],;|·]*)`,
  'g',
);
/** Rule 3: a file (`name.ext`, letters in the extension) or folder (`name/`) name in a layout line. */
const LAYOUT_NAME = /^(?:[\w-][\w.-]*\/)*(?:[\w-][\w.-]*\.[A-Za-z]{1,5}|[\w-][\w.-]*\/)$/;

/** Rule 3 on one line of a layout tree; `stack` holds the folders open above it and is updated. */
function checkLayoutLine(
  raw: string,
  stack: { indent: number; dir: string }[],
  check: (path: string, ok: boolean, note?: string) => void,
): void {
  const indent = raw.search(/\S/);
  if (indent < 0) return;
  while ((stack.at(-1)?.indent ?? -1) >= indent) stack.pop();
  let context = stack.at(-1)?.dir ?? '';
  // A folder entry starts a line at most one level (2 spaces) deeper than its parent; deeper lines continue the
  // description above them, even when they start with a folder name (`spiders/ (link, wandering, sitemap)`).
  const entry = indent <= (stack.at(-1)?.indent ?? -2) + 2 ? /^\s*([\w.-]+\/)(?:\s|$)/.exec(raw)?.[1] : undefined;
  if (entry !== undefined) {
    check(context + entry, exists(context + entry));
    context += entry;
    stack.push({ indent, dir: context });
  }
  const rest = entry === undefined ? raw : raw.slice(raw.indexOf(entry) + entry.length);
  for (const word of rest.split(/\s+/)) {
    const name = fixedPart(word.replace(/^[`(]+|[`),;:.]+$/g, ''));
    if (name === '' || word.includes('@')) continue;
    if (name.includes('/') && TOP_DIRS.includes(name.split('/')[0] as string)) check(name, exists(name));
    else if (LAYOUT_NAME.test(name))
      check(
        `${context}${name}`,
        existsUnder(context, name),
        ` (or a file of that name under ${context || 'the root'})`,
      );
  }
}

/** The paths one markdown document names, and those of them the tree lacks. */
function namedPaths(doc: string, text: string): { checked: string[]; missing: Missing[] } {
  const checked: string[] = [];
  const missing: Missing[] = [];
  const foreign = new Set(FOREIGN[doc] ?? []);
  const docDir = posix.dirname(doc) === '.' ? '' : `${posix.dirname(doc)}/`;
  const check = (line: number, path: string, ok: boolean, note = '') => {
    checked.push(path);
    if (!ok && !foreign.has(path)) missing.push({ doc, line, path: path + note });
  };
  let fence: 'layout' | 'code' | undefined;
  let fenceLine = -1;
  /** The layout tree's open folders, innermost last: indentation and repository path (`lib/kafka/`). */
  const stack: { indent: number; dir: string }[] = [];

  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (/^\s*```/.test(raw)) {
      fence = fence === undefined ? 'code' : undefined;
      fenceLine = line;
      stack.length = 0;
      return;
    }
    if (fence === 'code' && line === fenceLine + 1 && /^package\.json\s/.test(raw)) fence = 'layout';
    if (fence === 'layout') {
      checkLayoutLine(raw, stack, (path, ok, note) => check(line, path, ok, note));
      return;
    }
    for (const m of raw.matchAll(LINK)) {
      const target = (m[1] as string).replace(/#.*$/, '');
      if (target === '' || /^[a-z][\w+.-]*:/i.test(target) || target.startsWith('/')) continue;
      const path = fixedPart(posix.normalize(docDir + target));
      if (path !== '') check(line, path, exists(path));
    }
    for (const m of raw.replace(LINK, ' ').matchAll(ROOTED)) {
      const path = fixedPart((m[1] as string).replace(/[.:]+$/, ''));
      check(line, path, exists(path));
    }
  });
  return { checked, missing };
}

const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const named = new Map(DOCS.map((doc) => [doc, namedPaths(doc, readFileSync(join(ROOT, doc), 'utf8'))]));

describe('repository paths named in README.md and docs/*.md', () => {
  it('reads every document and finds its paths by each rule', () => {
    expect(DOCS).toEqual(expect.arrayContaining(['README.md', 'docs/design.md', 'docs/style.md', 'docs/contract.md']));
    expect(TOP_DIRS).toEqual(expect.arrayContaining(['lib', 'functions', 'localstack', 'docs']));
    expect(TOP_DIRS).not.toContain('node_modules');
    // A code span, bare prose, and the layout tree's folders and files.
    expect(named.get('docs/design.md')?.checked).toEqual(
      expect.arrayContaining(['lib/redis/keys.ts', 'functions/shared/msk.ts', 'localstack/kafka/pom.xml']),
    );
    expect(named.get('docs/layout.md')?.checked).toEqual(
      expect.arrayContaining(['lib/', 'lib/kafka/', 'lib/kafka/topics.ts', 'cli/']),
    );
    expect(named.get('README.md')?.checked).toEqual(
      expect.arrayContaining(['localstack/quickstart.sh', 'docs/configuration.md', 'bench/RESULTS.md']),
    );
  });

  it('reports a path that does not exist, by every rule, and passes the ones that do', () => {
    const doc = [
      'See [the design](design.md) and [gone](gone.md#x), `lib/crawl/extract/links.ts` and lib/nowhere.ts.',
      'Globs: `bench/results/*.json`, `lib/missing/<name>.ts`; not ours: https://x.org/lib/a.ts, /app/lib/x,',
      '`.services/redis/redis.log`, @scope/lib/x.',
      '```',
      'package.json  tsconfig.json',
      'lib/          the core · shell/',
      '  crawl/        links.ts · gone.ts · spiders/ · nowhere/<name>.ts · *.ts',
      '  local/        the local runtime',
      '                kafka/',
      'bin/          one line into cli/main.ts and localstack/nope',
      '```',
      'bench/RESULTS.md',
    ].join('\n');
    const { checked, missing } = namedPaths('docs/x.md', doc);
    expect(missing.map((m) => `${m.line}: ${m.path}`)).toEqual([
      '1: docs/gone.md',
      '1: lib/nowhere.ts',
      '2: lib/missing/',
      '6: lib/shell/ (or a file of that name under lib/)',
      '7: lib/crawl/gone.ts (or a file of that name under lib/crawl/)',
      '7: lib/crawl/nowhere/ (or a file of that name under lib/crawl/)',
      '8: lib/local/',
      '9: lib/local/kafka/ (or a file of that name under lib/local/)',
      '10: localstack/nope',
    ]);
    expect(checked).toEqual(
      expect.arrayContaining(['docs/design.md', 'lib/crawl/extract/links.ts', 'bench/results/', 'lib/crawl/spiders/']),
    );
    expect(checked).toContain('bench/RESULTS.md');
    expect(checked.filter((p) => p.includes('services') || p.includes('app/'))).toEqual([]);
  });

  it('every one exists in the tree', () => {
    const missing = [...named.values()].flatMap((n) => n.missing);
    expect(missing.map((m) => `${m.doc}:${m.line}: ${m.path}`)).toEqual([]);
  });
});

/** The most lines README.md may have: a user's guide, with everything else in docs/ (issue 34). */
const README_MAX_LINES = 400;

describe("README.md is a short user's guide", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  it(`stays under ${README_MAX_LINES} lines`, () => {
    expect(readme.split('\n').length).toBeLessThan(README_MAX_LINES);
  });

  it('links every page of docs/, where the rest of the guide lives', () => {
    const linked = new Set(
      [...readme.matchAll(LINK)].map((m) => posix.normalize((m[1] as string).replace(/#.*$/, ''))),
    );
    expect(DOCS.filter((doc) => doc !== 'README.md' && !linked.has(doc))).toEqual([]);
  });
});

/** The "Project layout" tree of docs/layout.md: the fenced block that opens with `package.json` under that heading. */
function layoutBlock(): string {
  const page = readFileSync(join(ROOT, 'docs/layout.md'), 'utf8');
  const section = page.slice(page.indexOf('# Project layout'));
  const open = section.indexOf('```\npackage.json');
  return section.slice(open, section.indexOf('```', open + 3) + 3);
}

/** Whether a layout word names `file` (a repository path): its name, its path, or a glob over its name. */
function namesFile(words: string[], file: string): boolean {
  const name = posix.basename(file);
  return words.some((w) => {
    if (w === name || w === file || file.endsWith(`/${w}`)) return true;
    if (!w.includes('*')) return false;
    const glob = new RegExp(`(?:^|/)${w.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    return glob.test(file);
  });
}

/** Top-level folders whose subfolders the layout must name (examples/ and docs/ hold content, not structure). */
const STRUCTURED = ['lib', 'functions', 'localstack', 'cli', 'cdk', 'bench', 'test'];

describe("docs/layout.md's project layout matches the tree both ways", () => {
  const block = layoutBlock();
  const { checked, missing } = namedPaths('docs/layout.md', block);
  const words = block.split(/[\s`(),;:]+/).filter((w) => w !== '' && w !== '·');

  it('names only what exists', () => {
    expect(block).toMatch(/^```\npackage\.json/);
    expect(missing.map((m) => m.path)).toEqual([]);
  });

  it('names every top-level folder, every folder of the structured ones, and every file of the core (lib/)', () => {
    const folders = TREE.filter((p) => p.endsWith('/') && !p.startsWith('.'));
    const unnamedFolders = folders.filter((p) => {
      const depth = p.split('/').length - 1;
      if (depth > 2 || (depth === 2 && !STRUCTURED.includes(p.split('/')[0] as string))) return false;
      return !checked.includes(p) && !namesFile(words, p.slice(0, -1));
    });
    const unnamedFiles = TREE.filter(
      (p) => p.startsWith('lib/') && !p.endsWith('/') && !p.includes('/dashboard/') && !namesFile(words, p),
    );
    expect({ unnamedFolders, unnamedFiles }).toEqual({ unnamedFolders: [], unnamedFiles: [] });
  });
});
