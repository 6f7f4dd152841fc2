/**
 * The dashboard page served at `GET /ui` (lib/rest/dashboard.ts): the files of ./dashboard/ made into one HTML
 * document, so that it works offline, loads nothing from elsewhere and needs no build step.
 *
 * - `index.html` is the page. It names its style with `<link rel="stylesheet" href="style.css">` and its scripts
 *   with one `<script src="name.js"></script>` each, in {@link DASHBOARD_SCRIPTS}' order; each of those tags is
 *   replaced by the file it names, inline, byte for byte. Nothing else is rewritten.
 * - `style.css` is checked by Biome; the scripts are plain browser JavaScript, classic scripts sharing one global
 *   scope (./dashboard/app.js says why), checked by Biome and, with JSDoc types, by tsc against the DOM
 *   (./dashboard/tsconfig.json; they share the endpoints' answer types, ./dashboard-api.ts).
 *
 * The response's Content-Security-Policy allows exactly these scripts and this style, by the SHA-256 of what is
 * served: the files' bytes. The browser hashes an inline element's text after the HTML parser has read it, so
 * the files are refused at load (instead of being blocked by the CSP in the browser) if that text could differ
 * from the bytes or end early: a carriage return (the parser turns CRLF into LF), `</script` or `<!--` in the
 * script, `</style` in the style, or bytes that are not UTF-8.
 *
 * **Why files read at load, and how the Lambda gets them.** Node runs this module from its .ts source (locally,
 * in tests) and esbuild bundles it into the rest function (cdk/constructs/crawl-function.ts). Both find the
 * files at `./dashboard/` next to the running module: beside this file in the repository, and beside the
 * bundle's `index.mjs`, where the construct copies {@link DASHBOARD_FILES} after bundling (as it copies the Lua
 * scripts that lib/redis/scripts.ts reads). Importing them as text instead would need an esbuild loader and a
 * Node text-import hook (Node runs `.ts` files, not `.js?raw` or `type: 'text'` imports); a copy keeps both
 * paths plain. They are read when the module loads, so a bundle without them fails at its first start (and
 * test/unit/dashboard-page.test.ts bundles the rest function and serves the page from the bundle).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The directory of the page's files, relative to this module, and to the Lambda bundle's entry. */
export const DASHBOARD_DIR = 'dashboard';
/** The page's scripts, in the order index.html names them and the browser runs them (app.js, the main one, last). */
export const DASHBOARD_SCRIPTS = ['dom.js', 'api.js', 'crawls.js', 'panels.js', 'app.js'] as const;
/** The files of {@link DASHBOARD_DIR} the page is made of: what a bundle must carry. */
export const DASHBOARD_FILES = ['index.html', 'style.css', ...DASHBOARD_SCRIPTS] as const;

type DashboardFile = (typeof DASHBOARD_FILES)[number];

const STYLE_TAG = '<link rel="stylesheet" href="style.css">';
/** The tag of index.html that names a script. */
const scriptTag = (name: string) => `<script src="${name}"></script>`;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A file of the page as text, refused unless it is UTF-8 without carriage returns (see the module doc). */
function read(name: DashboardFile): string {
  const path = join(import.meta.dirname, DASHBOARD_DIR, name);
  let text: string;
  try {
    text = utf8.decode(readFileSync(path));
  } catch (error) {
    if (error instanceof TypeError) throw new Error(`${path} is not UTF-8`);
    throw error;
  }
  if (text.includes('\r')) throw new Error(`${path} has a carriage return: its inline hash would not match`);
  return text;
}

/** `html` with its one occurrence of `tag` replaced by `replacement` (no `$` patterns, unlike String.replace). */
function inline(html: string, tag: string, replacement: string): string {
  const at = html.indexOf(tag);
  if (at < 0 || html.indexOf(tag, at + 1) >= 0) throw new Error(`index.html must have exactly one ${tag}`);
  return html.slice(0, at) + replacement + html.slice(at + tag.length);
}

/** `text` if no `pattern` (case-insensitive) in it would end its inline element early or change how it parses. */
function refuse(text: string, name: DashboardFile, patterns: string[]): string {
  const lower = text.toLowerCase();
  const found = patterns.find((pattern) => lower.includes(pattern));
  if (found !== undefined) throw new Error(`${name} contains ${found}: inline, it would not read as plain text`);
  return text;
}

/** index.html, refused unless it names the scripts in {@link DASHBOARD_SCRIPTS}' order (the order they run in). */
function page(): string {
  const html = read('index.html');
  const at = DASHBOARD_SCRIPTS.map((name) => html.indexOf(scriptTag(name)));
  if (at.some((a, i) => i > 0 && a < (at[i - 1] as number)))
    throw new Error(`index.html must name the scripts in this order: ${DASHBOARD_SCRIPTS.join(', ')}`);
  return html;
}

const STYLE = refuse(read('style.css'), 'style.css', ['</style']);
const SCRIPTS = DASHBOARD_SCRIPTS.map((name) => ({ name, text: refuse(read(name), name, ['</script', '<!--']) }));

/** The whole page: index.html with style.css and every script inline, each exactly as in its file. */
export const DASHBOARD_HTML = SCRIPTS.reduce(
  (html, { name, text }) => inline(html, scriptTag(name), `<script>${text}</script>`),
  inline(page(), STYLE_TAG, `<style>${STYLE}</style>`),
);

const hash = (text: string) => `sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}`;

/** CSP sources of the inline scripts: the hash of each script, in {@link DASHBOARD_SCRIPTS}' order. */
export const DASHBOARD_SCRIPT_HASHES: readonly string[] = SCRIPTS.map(({ text }) => hash(text));
/** CSP source of the inline style: the hash of style.css. */
export const DASHBOARD_STYLE_HASH = hash(STYLE);
