/**
 * The spider registry (lib/crawl/spiders/registry.ts): built-ins and CRAWLER_PLUGINS modules loaded the same way,
 * and every way a plugin can be broken failing at load with the module's name and the reason.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  closeSpiders,
  loadSpiders,
  openSpiders,
  PluginLoadError,
  pluginList,
  pluginSpecifier,
  spidersOf,
} from '../../lib/crawl/spiders/registry.ts';
import type { Spider } from '../../lib/crawl/types.ts';

const ROOT = join(import.meta.dirname, '../..');
const fixture = (name: string) => `test/fixtures/plugins/${name}`;

async function loadError(plugins: string[]): Promise<PluginLoadError> {
  const error = await loadSpiders(plugins, { baseDir: ROOT }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PluginLoadError);
  return error as PluginLoadError;
}

describe('CRAWLER_PLUGINS', () => {
  it('is a comma-separated list; blanks and spaces are dropped', () => {
    expect(pluginList('')).toEqual([]);
    expect(pluginList(' a.ts , ,@acme/spiders,./b.js ')).toEqual(['a.ts', '@acme/spiders', './b.js']);
  });

  it('resolves paths against the base directory and leaves package names to import()', () => {
    expect(pluginSpecifier('examples/x.ts', '/srv/app')).toBe('file:///srv/app/examples/x.ts');
    expect(pluginSpecifier('./y.js', '/srv/app')).toBe('file:///srv/app/y.js');
    expect(pluginSpecifier('/opt/p/z.mjs', '/srv/app')).toBe('file:///opt/p/z.mjs');
    expect(pluginSpecifier('@acme/spiders', '/srv/app')).toBe('@acme/spiders');
  });
});

describe('loadSpiders', () => {
  it('registers the built-in spiders without any plugin', async () => {
    const spiders = await loadSpiders([]);
    expect([...spiders.keys()]).toEqual(['link', 'wandering', 'sitemap', 'browser']);
  });

  it('adds the spiders of each plugin module, TypeScript or JavaScript, default or named exports', async () => {
    const spiders = await loadSpiders(
      ['examples/json-ld-products/products.ts', 'examples/hand-off/shop.ts', fixture('plain.js')],
      { baseDir: ROOT },
    );
    expect([...spiders.keys()]).toEqual([
      'link',
      'wandering',
      'sitemap',
      'browser',
      'products',
      'catalog',
      'product-page',
      'js-one',
      'js-two',
    ]);
  });

  it('fails with the module and the reason when the module does not exist', async () => {
    const error = await loadError(['plugins/missing.ts']);
    expect(error.module).toBe('plugins/missing.ts');
    expect(error.message).toMatch(/^CRAWLER_PLUGINS: plugins\/missing\.ts: cannot be loaded: .*Cannot find module/);
  });

  it('fails with the module and its own error when the module throws while loading', async () => {
    const error = await loadError([fixture('top-level-throw.ts')]);
    expect(error.message).toBe(
      `CRAWLER_PLUGINS: ${fixture('top-level-throw.ts')}: cannot be loaded: Error: this plugin needs SHOP_API_KEY`,
    );
  });

  it('fails when a module exports no spider', async () => {
    const error = await loadError([fixture('no-spider.ts')]);
    expect(error.message).toContain('exports no spider');
  });

  it('fails on a spider name a request could not carry', async () => {
    const error = await loadError([fixture('bad-name.ts')]);
    expect(error.message).toContain('spider name "has space" is not 1–40 of A-Za-z0-9._-');
  });

  it('fails when a plugin takes a name already registered (a built-in, or another plugin)', async () => {
    expect((await loadError([fixture('link-again.ts')])).message).toContain(
      'spider "link" is already registered by built-in',
    );
    const twice = await loadError(['examples/json-ld-products/products.ts', './examples/json-ld-products/products.ts']);
    expect(twice.message).toContain('spider "products" is already registered by examples/json-ld-products/products.ts');
  });
});

describe('spidersOf', () => {
  const parse = () => ({});

  it('refuses a default export that is not a spider, an array holding a non-spider, and hooks that are not functions', () => {
    expect(() => spidersOf({ default: 42 }, 'm')).toThrow('its default export is neither a spider nor an array');
    expect(() => spidersOf({ list: [{ name: 'a', parse }, 'b'] }, 'm')).toThrow('holds something that is not a spider');
    expect(() => spidersOf({ default: { name: 'a', parse: 'no' } }, 'm')).toThrow(
      'spider "a": parse is not a function',
    );
    expect(() => spidersOf({ default: { name: 'a', parse, open: 1 } }, 'm')).toThrow(
      'spider "a": open is not a function',
    );
    expect(() => spidersOf({ default: { name: 'url-frontier', parse } }, 'm')).toThrow('is reserved');
  });

  it('counts a spider exported twice (default and named) once', () => {
    const spider = { name: 'a', parse };
    expect(spidersOf({ default: spider, a: spider }, 'm')).toEqual([spider]);
  });
});

describe('open() and close() hooks', () => {
  it('opens every spider in order; a failing open() names the spider and the reason', async () => {
    const opened: string[] = [];
    const spider = (name: string): Spider => ({ name, parse: () => ({}), open: () => void opened.push(name) });
    await openSpiders([spider('a'), spider('b')], { log: { info() {}, warn() {} } });
    expect(opened).toEqual(['a', 'b']);
    const spiders = await loadSpiders([fixture('failing-open.ts')], { baseDir: ROOT });
    const error = await openSpiders(spiders.values(), { log: { info() {}, warn() {} } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PluginLoadError);
    expect((error as Error).message).toBe(
      'CRAWLER_PLUGINS: spider "failing-open": open() failed: cannot reach the product API',
    );
  });

  it('closes every spider even when one close() throws, reporting it', async () => {
    const closed: string[] = [];
    const failures: string[] = [];
    await closeSpiders(
      [
        { name: 'a', parse: () => ({}), close: () => void closed.push('a') },
        {
          name: 'b',
          parse: () => ({}),
          close: () => {
            throw new Error('boom');
          },
        },
        { name: 'c', parse: () => ({}), close: async () => void closed.push('c') },
      ],
      (spider, error) => failures.push(`${spider}: ${(error as Error).message}`),
    );
    expect(closed).toEqual(['a', 'c']);
    expect(failures).toEqual(['b: boom']);
  });
});
