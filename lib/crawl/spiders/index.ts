/**
 * The spider plugins this crawler runs. Adding one: a file in this folder exporting a {@link Spider}, its name
 * in `BUILT_IN_SPIDERS` (lib/schemas, which validates `spiderid`), and its entry in {@link SPIDERS}; the
 * compiler refuses a name without an implementation and an implementation without a name.
 */
import type { BuiltInSpider } from '../../schemas/index.ts';
import type { Spider } from '../types.ts';
import { linkSpider } from './link.ts';
import { wanderingSpider } from './wandering.ts';

const SPIDERS: Record<BuiltInSpider, Spider> = { link: linkSpider, wandering: wanderingSpider };

/** Every registered spider by name (a new Map each call: callers may add test spiders to theirs). */
export function spiderRegistry(): Map<string, Spider> {
  return new Map(Object.values(SPIDERS).map((spider) => [spider.name, spider]));
}
