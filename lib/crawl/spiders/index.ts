/**
 * The built-in spiders, as a plugin module: the crawler loads this module first, exactly as it loads each module
 * of `CRAWLER_PLUGINS` (lib/crawl/spiders/registry.ts). Adding a built-in spider: a file in this folder, and its
 * export in the list below; nothing else names it.
 */
import type { Spider } from '../types.ts';
import { browserSpider } from './browser.ts';
import { linkSpider } from './link.ts';
import { sitemapSpider } from './sitemap.ts';
import { wanderingSpider } from './wandering.ts';

const builtIns: Spider[] = [linkSpider, wanderingSpider, sitemapSpider, browserSpider];
export default builtIns;

/** The built-in spider types: always accepted in requests, whatever the fleet runs. */
export const BUILT_IN_SPIDERS: ReadonlySet<string> = new Set(builtIns.map((s) => s.name));
