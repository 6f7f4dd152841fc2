/**
 * The bounds of a request that no JSON schema keyword can express (DESIGN.md §10: every edge has a bound),
 * checked on the parsed value before the schemas run.
 */
import { Buffer } from 'node:buffer';
import type { RejectionDetail } from '../errors.ts';

/** How deep a request may nest (the request object itself is level 1; `attrs` gets the rest). */
export const MAX_REQUEST_DEPTH = 32;

/** The largest `attrs` of a crawl request, as JSON bytes: it is echoed in every page of the crawl. */
export const MAX_ATTRS_BYTES = 65_536;

/**
 * The bounds no JSON schema keyword can express, checked in one iterative walk (a recursive one is what a
 * deeply nested request would overflow): nesting depth, well-formed Unicode in every string and key (a lone
 * surrogate is valid JSON that Redis's cjson cannot decode, DESIGN.md §10), and the size of `attrs`.
 * Paths in the details are cut short: a pointer 10,000 levels deep is no help to anyone.
 */
export function structureProblems(value: unknown): RejectionDetail[] {
  const details: RejectionDetail[] = [];
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: '', depth: 1 }];
  let tooDeep = false;
  while (stack.length > 0 && details.length < 10) {
    const item = stack.pop() as { value: unknown; path: string; depth: number };
    const v = item.value;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) details.push({ path: shortPath(item.path), message: NOT_WELL_FORMED });
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (item.depth > MAX_REQUEST_DEPTH) {
      if (!tooDeep) {
        details.push({
          path: shortPath(firstSegments(item.path, 1)),
          message: `must not nest deeper than ${MAX_REQUEST_DEPTH} levels`,
        });
      }
      tooDeep = true;
      continue;
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--)
        stack.push({ value: v[i], path: `${item.path}/${i}`, depth: item.depth + 1 });
      continue;
    }
    for (const [key, child] of Object.entries(v)) {
      const path = `${item.path}${pointerSegment(key.isWellFormed() ? key : key.toWellFormed())}`;
      if (!key.isWellFormed()) details.push({ path: shortPath(path), message: `name ${NOT_WELL_FORMED}` });
      stack.push({ value: child, path, depth: item.depth + 1 });
    }
  }
  // Measured only when the walk found it shallow: JSON.stringify recurses.
  if (details.length === 0 && isObject(value) && isObject(value.attrs)) {
    const bytes = Buffer.byteLength(JSON.stringify(value.attrs), 'utf8');
    if (bytes > MAX_ATTRS_BYTES) {
      details.push({ path: '/attrs', message: `must be at most ${MAX_ATTRS_BYTES} bytes as JSON, not ${bytes}` });
    }
  }
  return details;
}

const NOT_WELL_FORMED = 'must be well-formed Unicode (it has a lone surrogate)';
const MAX_PATH_CHARS = 200;

function shortPath(path: string): string {
  return path.length <= MAX_PATH_CHARS ? path : `${path.slice(0, MAX_PATH_CHARS)}…`;
}

/** The first `n` segments of a JSON pointer (`/attrs/a/b` → `/attrs` for 1). */
function firstSegments(path: string, n: number): string {
  let end = 0;
  for (let i = 0; i < n; i++) {
    const next = path.indexOf('/', end + 1);
    if (next === -1) return path;
    end = next;
  }
  return path.slice(0, end);
}

/** A JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `key` as one JSON pointer segment (RFC 6901 escapes). */
export function pointerSegment(key: string): string {
  return `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}
