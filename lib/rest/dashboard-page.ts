/**
 * The dashboard page served at `GET /ui` (lib/rest/dashboard.ts): the three files of ./dashboard/ made into one
 * HTML document, so that it works offline, loads nothing from elsewhere and needs no build step.
 *
 * - `index.html` is the page. It names its style and script with `<link rel="stylesheet" href="style.css">` and
 *   `<script type="module" src="app.js"></script>`; each of those two tags is replaced by the file it names,
 *   inline, byte for byte. Nothing else is rewritten.
 * - `style.css` is checked by Biome; `app.js` is plain browser JavaScript, checked by Biome and, with JSDoc types,
 *   by tsc against the DOM (./dashboard/tsconfig.json; it shares the endpoints' answer types, ./dashboard-api.ts).
 *
 * The response's Content-Security-Policy allows exactly this script and style, by the SHA-256 of what is
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
/** The files of {@link DASHBOARD_DIR} the page is made of: what a bundle must carry. */
export const DASHBOARD_FILES = ['index.html', 'style.css', 'app.js'] as const;

type DashboardFile = (typeof DASHBOARD_FILES)[number];

const STYLE_TAG = '<link rel="stylesheet" href="style.css">';
const SCRIPT_TAG = '<script type="module" src="app.js"></script>';

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

const STYLE = refuse(read('style.css'), 'style.css', ['</style']);
const SCRIPT = refuse(read('app.js'), 'app.js', ['</script', '<!--']);

/** The whole page: index.html with style.css and app.js inline, each exactly as in its file. */
export const DASHBOARD_HTML = inline(
  inline(read('index.html'), STYLE_TAG, `<style>${STYLE}</style>`),
  SCRIPT_TAG,
  `<script type="module">${SCRIPT}</script>`,
);

const hash = (text: string) => `sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}`;

/** CSP source of the inline script: the hash of app.js. */
export const DASHBOARD_SCRIPT_HASH = hash(SCRIPT);
/** CSP source of the inline style: the hash of style.css. */
export const DASHBOARD_STYLE_HASH = hash(STYLE);
