/**
 * Poison tier, issue 48 item 8: compression bombs at once under a real memory limit. A crawler worker process in a
 * memory cgroup of its own (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes` on hosts whose memory controller is
 * v1) crawls 20 bomb pages with 20 fetch slots. Its body budget follows the cgroup's limit, so nothing is OOM-killed,
 * and every page ends with a message that says why its body was cut. 60 at once is bench/scenarios/sizes-bombs.ts.
 * Needs root, as CI has: creating the cgroup throws, saying why, without it.
 */
import { describe, expect, test } from 'vitest';
import { type BombRun, runBombs } from '../helpers/bomb-run.ts';
import { BOMB_BYTES } from '../helpers/hostile-site.ts';

const BOMBS = 20;
/** A worker alone takes about 150 MB; 20 bombs cut at 10 MiB would take well over 1 GB as they were counted. */
const LIMIT_BYTES = 384 * 1024 * 1024;
const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** KAFKA_MAX_MESSAGE_BYTES's default. */
const MESSAGE_BYTES = 1_000_000;

describe('compression bombs under a real memory limit', () => {
  let run: BombRun;

  test(`${BOMBS} bombs at once in ${LIMIT_BYTES / 2 ** 20} MiB: no OOM kill, every page a message`, async () => {
    run = await runBombs({ bombs: BOMBS, limitBytes: LIMIT_BYTES, timeoutMs: 150_000 });
    const why = `${JSON.stringify({ ...run, output: undefined, pages: run.pages.length })}\n${run.output.slice(-3000)}`;
    expect(run.oomKills, why).toBe(0);
    expect(run.workerAlive, why).toBe(true);
    expect(run.pages, why).toHaveLength(BOMBS);
  }, 200_000);

  test('each bomb page is a success cut with a reason, its stored body exactly what was kept', () => {
    expect(run.pages).toHaveLength(BOMBS);
    for (const page of run.pages) {
      expect(page).toMatchObject({ success: true, body_truncated: true });
      expect(['max_body_bytes', 'memory_budget']).toContain(page.body_cut);
      const kept = page.body_cut_bytes as number;
      expect(kept).toBeLessThan(BOMB_BYTES);
      if (page.body_cut === 'max_body_bytes') expect(kept).toBe(MAX_BODY_BYTES);
      else expect(kept).toBeLessThan(MAX_BODY_BYTES);
      // A body of NULs takes 6 bytes a character in JSON: one of more than a sixth of the message limit is sent in
      // part, and the store holds the body as fetched, cut where the page says (not the whole response).
      if (kept > MESSAGE_BYTES / 6) {
        expect(page.body_message_cut).toBe(true);
        expect(page.storedBytes).toBe(kept);
      }
    }
  });
});
