/**
 * The one spider registry of a crawler process. Built-in spiders (lib/crawl/spiders/index.ts) and the modules of
 * `CRAWLER_PLUGINS` are loaded the same way: a module exports spiders as its default export (one spider or an array
 * of them) and/or as named exports, each an object with a `name` and a `parse` function (lib/crawl/types.ts `Spider`).
 *
 * Loading fails fast: a module that cannot be imported, exports no spider, exports a malformed one, or reuses a
 * name already registered, stops the crawler at start with {@link PluginLoadError}, which names the module and
 * says why. A crawler never runs with a spider missing.
 */
import { readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CrawlClusterError } from '../../errors.ts';
import type { Spider, SpiderOpenContext } from '../types.ts';
import * as builtInModule from './index.ts';

/** A spider type name: what `spiderid` may hold and a heartbeat id can carry (`<spider>|<node>`). */
const SPIDER_NAME = /^[A-Za-z0-9._-]{1,40}$/;

/** Names no plugin may take: the URL Frontier API's crawls use this one in info, stop and stats. */
const RESERVED_NAMES: ReadonlySet<string> = new Set(['url-frontier']);

/** A plugin module (or one of its spiders) that cannot be used; the crawler does not start. */
export class PluginLoadError extends CrawlClusterError {
  /** The module as `CRAWLER_PLUGINS` names it (or `built-in`). */
  readonly module: string;
  constructor(module: string, reason: string, options?: ErrorOptions) {
    super(`CRAWLER_PLUGINS: ${module}: ${reason}`, options);
    this.module = module;
  }
}

/** The module specifiers of a `CRAWLER_PLUGINS` value: comma-separated, blanks dropped. */
export function pluginList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * What `import()` gets for a specifier: a path (relative to `baseDir`, or absolute) as a file URL, else a package name.
 * A path is one that starts with `.` or `/`, ends in a module extension, or names a file that exists (relative to
 * `baseDir`): `examples/shop` is that file when it exists, else a package.
 */
export function pluginSpecifier(spec: string, baseDir: string): string {
  const isPath =
    spec.startsWith('.') ||
    isAbsolute(spec) ||
    /\.(?:[cm]?[jt]s)$/.test(spec) ||
    kindOf(resolve(baseDir, spec)) === 'file';
  return isPath ? pathToFileURL(resolve(baseDir, spec)).href : spec;
}

/** Module files a directory holds, for the hint when `CRAWLER_PLUGINS` names the directory. */
const MODULE_FILE = /\.(?:[cm]?[jt]s)$/;

function kindOf(path: string): 'file' | 'directory' | undefined {
  try {
    const st = statSync(path);
    return st.isDirectory() ? 'directory' : st.isFile() ? 'file' : undefined;
  } catch {
    return undefined;
  }
}

/** Up to `max` module files under `dir` (two levels deep), as paths relative to `baseDir`, sorted. */
function modulesIn(dir: string, baseDir: string, max = 5): string[] {
  const found: string[] = [];
  const walk = (d: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(d, name);
      const kind = kindOf(path);
      if (kind === 'file' && MODULE_FILE.test(name) && !name.endsWith('.d.ts')) found.push(relative(baseDir, path));
      else if (kind === 'directory' && depth < 2 && name !== 'node_modules') walk(path, depth + 1);
    }
  };
  walk(dir, 1);
  return found.slice(0, max);
}

/**
 * A specifier that names a directory is refused with the modules in it (a plugin is a module file, not a folder).
 * @throws PluginLoadError saying so
 */
function refuseDirectory(spec: string, baseDir: string): void {
  const path = resolve(baseDir, spec);
  if (kindOf(path) !== 'directory') return;
  const modules = modulesIn(path, baseDir);
  throw new PluginLoadError(
    spec,
    `is a directory (${path}); name the plugin module files, comma-separated${
      modules.length > 0 ? `, e.g. CRAWLER_PLUGINS=${modules.join(',')}` : ' (it holds no .ts, .js or .mjs file)'
    }`,
  );
}

function isSpiderLike(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && 'name' in value && 'parse' in value;
}

/** Checks one spider's shape, throwing what is wrong with it. */
function checkSpider(value: Record<string, unknown>, module: string): Spider {
  const name = value.name;
  if (typeof name !== 'string' || !SPIDER_NAME.test(name)) {
    throw new PluginLoadError(module, `spider name ${JSON.stringify(name)} is not 1–40 of A-Za-z0-9._-`);
  }
  if (RESERVED_NAMES.has(name)) throw new PluginLoadError(module, `spider name "${name}" is reserved`);
  if (typeof value.parse !== 'function') throw new PluginLoadError(module, `spider "${name}": parse is not a function`);
  for (const hook of ['open', 'close', 'attrs', 'wantsLinks'] as const) {
    if (value[hook] !== undefined && typeof value[hook] !== 'function') {
      throw new PluginLoadError(module, `spider "${name}": ${hook} is not a function`);
    }
  }
  return value as unknown as Spider;
}

/**
 * The spiders a module exports (see the module doc).
 * @throws PluginLoadError when it exports none, or a malformed one
 */
export function spidersOf(exports: Record<string, unknown>, module: string): Spider[] {
  const found = new Set<Spider>();
  const take = (value: unknown, strict: boolean) => {
    if (Array.isArray(value)) {
      for (const item of value) {
        if (!isSpiderLike(item))
          throw new PluginLoadError(module, 'an exported array holds something that is not a spider');
        found.add(checkSpider(item, module));
      }
    } else if (isSpiderLike(value)) {
      found.add(checkSpider(value, module));
    } else if (strict) {
      throw new PluginLoadError(module, 'its default export is neither a spider nor an array of spiders');
    }
  };
  for (const [key, value] of Object.entries(exports)) take(value, key === 'default');
  if (found.size === 0)
    throw new PluginLoadError(module, 'exports no spider (an object with a name and a parse function)');
  return [...found];
}

/** Adds spiders to a registry, refusing a name that is already taken (by a built-in or another module). */
function registerSpiders(
  registry: Map<string, Spider>,
  origins: Map<string, string>,
  spiders: Spider[],
  module: string,
): void {
  for (const spider of spiders) {
    const taken = origins.get(spider.name);
    if (taken !== undefined) {
      throw new PluginLoadError(module, `spider "${spider.name}" is already registered by ${taken}`);
    }
    registry.set(spider.name, spider);
    origins.set(spider.name, module);
  }
}

export interface LoadSpidersOptions {
  /** Relative plugin paths are resolved against this directory. @default process.cwd() */
  baseDir?: string;
}

/**
 * The registry of a crawler process: the built-in spiders, then each plugin module in order.
 * @throws PluginLoadError naming the first module that cannot be used, and why
 */
export async function loadSpiders(plugins: string[], options: LoadSpidersOptions = {}): Promise<Map<string, Spider>> {
  const registry = new Map<string, Spider>();
  const origins = new Map<string, string>();
  registerSpiders(registry, origins, spidersOf({ ...builtInModule }, 'built-in'), 'built-in');
  const baseDir = options.baseDir ?? process.cwd();
  for (const spec of plugins) {
    refuseDirectory(spec, baseDir);
    const specifier = pluginSpecifier(spec, baseDir);
    let exports: Record<string, unknown>;
    try {
      exports = (await import(specifier)) as Record<string, unknown>;
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      // A bare name that is neither a file here nor an installed package: say both were looked for.
      const notFound =
        specifier === spec && (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND'
          ? `there is no file ${resolve(baseDir, spec)} and no installed package "${spec}" (a path is relative to ${baseDir})`
          : undefined;
      throw new PluginLoadError(spec, `cannot be loaded: ${notFound ?? reason.split('\n')[0]}`, { cause: error });
    }
    registerSpiders(registry, origins, spidersOf(exports, spec), spec);
  }
  return registry;
}

/**
 * Calls every spider's `open()` hook, in registration order.
 * @throws PluginLoadError naming the spider whose hook threw
 */
export async function openSpiders(spiders: Iterable<Spider>, context: SpiderOpenContext): Promise<void> {
  for (const spider of spiders) {
    try {
      await spider.open?.(context);
    } catch (error) {
      throw new PluginLoadError(
        `spider "${spider.name}"`,
        `open() failed: ${(error as Error)?.message ?? String(error)}`,
        {
          cause: error,
        },
      );
    }
  }
}

/** Calls every spider's `close()` hook; a throw is reported through `onError` and the others still close. */
export async function closeSpiders(
  spiders: Iterable<Spider>,
  onError: (spider: string, error: unknown) => void,
): Promise<void> {
  for (const spider of spiders) {
    try {
      await spider.close?.();
    } catch (error) {
      onError(spider.name, error);
    }
  }
}
