/**
 * The spider plugins this crawler runs. Adding one: a file in this folder exporting a {@link Spider},
 * and one line in {@link SPIDERS} (and its name in `KNOWN_SPIDERS` of lib/schemas, which validates
 * `spiderid`).
 */
import type { Spider } from '../types.ts';
import { linkSpider } from './link.ts';
import { wanderingSpider } from './wandering.ts';

const SPIDERS: readonly Spider[] = [linkSpider, wanderingSpider];

/** Every registered spider by name (a new Map each call: callers may add test spiders to theirs). */
export function spiderRegistry(): Map<string, Spider> {
  return new Map(SPIDERS.map((spider) => [spider.name, spider]));
}

const registry = spiderRegistry();

/** The spider called `name`, or undefined when none is registered (requests are validated first). */
export function getSpider(name: string): Spider | undefined {
  return registry.get(name);
}
