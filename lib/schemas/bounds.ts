/**
 * The bounds of a request that no JSON schema keyword can express (docs/design.md §10: every edge has a bound),
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
 * surrogate is valid JSON that Redis's cjson cannot decode, docs/design.md §10), and the size of `attrs`.
 * Paths in the details are cut short: a pointer 10,000 levels deep is no help to anyone.
 */
export function structureProblems(value: unknown): RejectionDetail[] {
  const details: RejectionDetail[] = [];
  // A node knows its parent and its key; its JSON pointer is built only when it has a problem (this walk runs
  // for every request, and building a path string per node was half its cost).
  const stack: Node[] = [{ value, depth: 1, key: '', parent: undefined }];
  let tooDeep = false;
  while (stack.length > 0 && details.length < 10) {
    const node = stack.pop() as Node;
    const v = node.value;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) details.push({ path: shortPath(pathOf(node)), message: NOT_WELL_FORMED });
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (node.depth > MAX_REQUEST_DEPTH) {
      if (!tooDeep) {
        let top = node;
        while (top.parent?.parent !== undefined) top = top.parent;
        details.push({ path: pathOf(top), message: `must not nest deeper than ${MAX_REQUEST_DEPTH} levels` });
      }
      tooDeep = true;
      continue;
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], depth: node.depth + 1, key: i, parent: node });
      continue;
    }
    for (const key in v) {
      if (!Object.hasOwn(v, key)) continue;
      const child: Node = { value: (v as Record<string, unknown>)[key], depth: node.depth + 1, key, parent: node };
      if (!key.isWellFormed()) details.push({ path: shortPath(pathOf(child)), message: `name ${NOT_WELL_FORMED}` });
      stack.push(child);
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

/** A value met by the walk: where it is (its key in its parent) and how deep. */
interface Node {
  value: unknown;
  depth: number;
  key: string | number;
  parent: Node | undefined;
}

/** The JSON pointer of a node (keys made well-formed so the detail itself is valid JSON text). */
function pathOf(node: Node): string {
  const segments: string[] = [];
  for (let n: Node | undefined = node; n?.parent !== undefined; n = n.parent) {
    segments.push(typeof n.key === 'number' ? `/${n.key}` : pointerSegment(n.key.toWellFormed()));
  }
  return segments.reverse().join('');
}

/** A JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `key` as one JSON pointer segment (RFC 6901 escapes). */
export function pointerSegment(key: string): string {
  return `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}
