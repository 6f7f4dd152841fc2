/**
 * Shipping spider plugins to Fargate (docs/spiders.md): the `crawlerPlugins` context copies a plugin
 * directory into the crawler image and names its modules in CRAWLER_PLUGINS, through the Dockerfile's build
 * arguments, and lets that directory (and nothing else new) into the image's build context.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pluginBuildArgs } from '../../cdk/constructs/fleet.ts';
import { SettingsError } from '../../cdk/context-values.ts';
import { REPO_ROOT } from '../../cdk/repo-root.ts';
import { readSettings } from '../../cdk/settings.ts';
import { type Synthesized, synthStack } from './synth.ts';

interface ImageAsset {
  source: { directory: string; dockerFile: string; dockerBuildArgs?: Record<string, string> };
}

function imageAssets(s: Synthesized): ImageAsset[] {
  const dir = s.app.synth().directory;
  return Object.values(
    JSON.parse(readFileSync(join(dir, `${s.stack.stackName}.assets.json`), 'utf8')).dockerImages,
  ) as ImageAsset[];
}

describe('crawler plugins in the image', () => {
  it('builds the image with the plugin directory and CRAWLER_PLUGINS naming its modules in /app/plugins', () => {
    const s = synthStack({ crawlerPlugins: 'examples/hand-off' });
    const [image] = imageAssets(s);
    expect(image?.source.dockerFile).toBe('functions/crawler/Dockerfile');
    expect(image?.source.dockerBuildArgs).toEqual({
      PLUGINS_DIR: 'examples/hand-off',
      CRAWLER_PLUGINS: 'plugins/shop.ts',
    });
  });

  it('ships no plugin by default: the empty placeholder directory and an empty CRAWLER_PLUGINS', () => {
    const [image] = imageAssets(synthStack({}));
    expect(image?.source.dockerBuildArgs).toEqual({ PLUGINS_DIR: 'functions/crawler/plugins', CRAWLER_PLUGINS: '' });
  });

  it('names every top-level module of the directory, sorted, and nothing else', () => {
    expect(pluginBuildArgs(REPO_ROOT, 'test/fixtures/plugins').CRAWLER_PLUGINS.split(',')).toEqual([
      'plugins/bad-name.ts',
      'plugins/dying-thread.ts',
      'plugins/failing-open.ts',
      'plugins/link-again.ts',
      'plugins/no-spider.ts',
      'plugins/plain.js',
      'plugins/runaway.ts',
      'plugins/thread-killers.ts',
      'plugins/throwing.ts',
      'plugins/top-level-throw.ts',
    ]);
  });

  it('fails synthesis on a directory that does not exist or holds no module', () => {
    expect(() => pluginBuildArgs(REPO_ROOT, 'no/such/dir')).toThrow('crawlerPlugins: no/such/dir is not a directory');
    expect(() => pluginBuildArgs(REPO_ROOT, 'functions/crawler/plugins')).toThrow('holds no .ts, .js or .mjs module');
  });

  it('refuses a path outside the repository as a context value', () => {
    expect(() => readSettings({ crawlerPlugins: '../elsewhere' })).toThrow(SettingsError);
    expect(() => readSettings({ crawlerPlugins: '/abs/plugins' })).toThrow(SettingsError);
    expect(readSettings({ crawlerPlugins: 'plugins/shop' }).crawlerPlugins).toBe('plugins/shop');
  });

  it('lets the plugin directory into the build context, and nothing else of its parents', () => {
    const s = synthStack({ crawlerPlugins: 'examples/hand-off' });
    const context = join(s.app.synth().directory, imageAssets(s)[0]?.source.directory ?? '');
    expect(existsSync(join(context, 'examples/hand-off/shop.ts'))).toBe(true);
    expect(existsSync(join(context, 'examples/json-ld-products'))).toBe(false);
    expect(existsSync(join(context, 'test'))).toBe(false);
  });

  it('has the Dockerfile copy PLUGINS_DIR to /app/plugins and set CRAWLER_PLUGINS from the build argument', () => {
    const dockerfile = readFileSync(join(REPO_ROOT, 'functions/crawler/Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/ARG PLUGINS_DIR=functions\/crawler\/plugins\n/);
    expect(dockerfile).toMatch(/COPY \$\{PLUGINS_DIR\} \.\/plugins\n/);
    expect(dockerfile).toMatch(/ENV CRAWLER_PLUGINS=\$\{CRAWLER_PLUGINS\}\n/);
  });
});
