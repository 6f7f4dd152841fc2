/**
 * What the crawler and its spider thread say to each other (lib/crawl/spiders/sandbox.ts, lib/crawl/spiders/thread.ts):
 * the messages, and the slots of the memory they share. A module of its own so the sandbox can name them without
 * loading the thread's entry point.
 */
import type { FetchResult, FollowRequest, Link, SpiderRequest } from '../types.ts';

/** Slots of the shared Int32Array (see the module doc). */
export const SLOT_CALL = 0;
export const SLOT_CALL_START = 1;
export const SLOT_BEAT = 2;
/** Run messages the thread has taken off its port: the pages sent after them are still queued, not started. */
export const SLOT_RECEIVED = 3;
export const SHARED_SLOTS = 4;

/** How often the thread writes its heartbeat (ms). */
export const BEAT_MS = 50;

/** Most follow entries one page may return; the rest are dropped and counted (the page says how many). */
export const MAX_FOLLOW_PER_PAGE = 100_000;

/** What the thread gets at start. */
export interface SpiderThreadData {
  plugins: string[];
  baseDir: string;
  /** Int32Array over a SharedArrayBuffer of {@link SHARED_SLOTS} slots. */
  shared: Int32Array;
  /** Epoch ms the slots' times count from. */
  base: number;
}

/** A page to run. */
export interface RunMessage {
  type: 'run';
  id: number;
  spider: string;
  request: SpiderRequest;
  response: FetchResult;
  links: Link[];
}

/** What the thread made of a page: the spider's result reduced to plain data. */
export interface SandboxResult {
  /** What the spider's `wantsLinks` said (false: the page carries no links). */
  wantsLinks: boolean;
  /** The page's `data` as JSON (undefined: none). */
  dataJson?: string;
  /** The data was over MAX_DATA_BYTES or not JSON: the page carries `data: null, data_truncated: true`. */
  dataTruncated?: boolean;
  follow: FollowRequest[];
  /** Follow entries past {@link MAX_FOLLOW_PER_PAGE}, dropped. */
  followDropped: number;
  /** The spider's `attrs` for the page, when it has the hook. */
  attrs?: Record<string, unknown>;
}

/** What the thread posts back. */
export type ThreadMessage =
  | { type: 'ready'; spiders: string[] }
  | { type: 'open-failed'; message: string }
  | { type: 'log'; level: 'info' | 'warn'; message: string; fields?: Record<string, unknown> }
  | ({ type: 'result'; id: number } & SandboxResult)
  /** What the spider's code threw: its name (`TypeError`...) and message, as thrown. */
  | { type: 'error'; id: number; name: string; message: string };
