import { RE2JS } from 're2js';

/**
 * A crawl's `allow_regex` / `deny_regex` pattern, compiled as RE2 (re2js): matching is linear in the URL's
 * length whatever the pattern, so a hostile pattern such as `(a+)+$` cannot pin a worker on every link
 * (docs/design.md §10). RE2's syntax is Python's and Perl's common core, closer to what Scrapy Cluster's clients
 * wrote for Python's `re` than JavaScript's (`(?i)` works); lookaround and backreferences are refused.
 * @throws RE2JSSyntaxException when `source` is not valid RE2.
 */
export function compileLinkRegex(source: string): RE2JS {
  return RE2JS.compile(source);
}
