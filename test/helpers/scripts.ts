/**
 * Which Lua scripts a piece of code runs, and with which KEYS: a spy on the client's `sendCommand` (scripts run as
 * ioredis commands through `defineCommand`, so EVALSHA, and EVAL after a NOSCRIPT, pass there).
 */
import { createHash } from 'node:crypto';
import { vi } from 'vitest';
import type { RedisClient } from '../../lib/redis/client.ts';
import { allScripts } from '../../lib/redis/scripts.ts';

/** One script call: the script's name (lib/redis/scripts/<name>.lua), its KEYS and its ARGV. */
export interface ScriptCall {
  script: string;
  keys: string[];
  argv: unknown[];
}

/** One command as ioredis sends it. */
export interface SentCommand {
  name: string;
  args: unknown[];
}

/** Runs `run` and returns every command it sent on `redis` (a spy on the client's `sendCommand`), in order. */
export async function recordCommands(redis: RedisClient, run: () => Promise<unknown>): Promise<SentCommand[]> {
  const client = redis as unknown as { sendCommand: (command: SentCommand) => unknown };
  const spy = vi.spyOn(client, 'sendCommand');
  try {
    await run();
    return spy.mock.calls.map((c) => c[0] as SentCommand);
  } finally {
    // Restoring a spy clears its record, so it is copied first (the return above runs before this).
    spy.mockRestore();
  }
}

/** Runs `run` and returns the script calls it made on `redis`, in order. */
export async function recordScriptCalls(redis: RedisClient, run: () => Promise<unknown>): Promise<ScriptCall[]> {
  const bySha = new Map(allScripts().map((s) => [s.sha, s.name]));
  const sent = await recordCommands(redis, run);
  const toCall = (sha: string, args: unknown[]): ScriptCall => ({
    script: bySha.get(sha) ?? `unknown script ${sha}`,
    keys: args.slice(2, 2 + Number(args[1])).map(String),
    argv: args.slice(2 + Number(args[1])),
  });
  return sent.flatMap((c) => {
    if (c.name === 'evalsha') return [toCall(String(c.args[0]), c.args)];
    if (c.name === 'eval') return [toCall(createHash('sha1').update(String(c.args[0])).digest('hex'), c.args)];
    return [];
  });
}
