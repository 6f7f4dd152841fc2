/**
 * The crawler's stall watchdog (lib/crawl/crawler/stall-watchdog.ts): a process whose event loop stops is killed from its
 * watchdog thread (SIGKILL, one line on stderr), so its supervisor starts a new one; a live process is left alone.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { startStallWatchdog } from '../../lib/crawl/crawler/stall-watchdog.ts';

const BLOCKS = fileURLToPath(new URL('../fixtures/stall/blocks.ts', import.meta.url));

describe('stall watchdog', () => {
  test('kills a process whose event loop is blocked for stallMs, saying why on stderr', async () => {
    const child = spawn(process.execPath, [BLOCKS, '800'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    const started = Date.now();
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    expect(exit.signal).toBe('SIGKILL');
    expect(Date.now() - started).toBeLessThan(8000);
    const line = JSON.parse(err.trim().split('\n').at(-1) as string);
    expect(line).toMatchObject({ level: 'ERROR', stall_exit_ms: 800 });
    expect(line.blocked_ms).toBeGreaterThanOrEqual(800);
  }, 15_000);

  test('leaves a live process alone, and stops when asked', async () => {
    const dog = startStallWatchdog(300);
    // Busy but never blocked past the bound: short synchronous bursts with the event loop turning between them.
    for (let i = 0; i < 10; i++) {
      const until = Date.now() + 50;
      while (Date.now() < until) {
        // busy
      }
      await new Promise((r) => setTimeout(r, 30));
    }
    await dog.stop();
    expect(process.exitCode ?? 0).toBe(0);
  });

  test('0 starts no watchdog', async () => {
    await expect(startStallWatchdog(0).stop()).resolves.toBeUndefined();
  });
});
