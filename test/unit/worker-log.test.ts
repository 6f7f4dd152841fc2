import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { RuntimeLogLevel } from '../../localstack/runtime/log.ts';
import { logWorkerOutput, workerLine } from '../../localstack/runtime/worker-log.ts';

describe('a worker output line as a runtime log line', () => {
  it('a Powertools JSON line keeps its level, message and fields, without the envelope, named after its worker', () => {
    const line = JSON.stringify({
      level: 'WARN',
      message: 'spider types not registered',
      timestamp: '2026-12-06T19:25:29.658Z',
      service: 'crawler',
      sampling_rate: 0,
      error: 'READONLY',
    });

    expect(workerLine('crawler worker 1', line, 'stderr')).toEqual({
      level: 'warn',
      message: 'crawler worker 1: spider types not registered',
      fields: { error: 'READONLY' },
    });
  });

  it('INFO and DEBUG are info, ERROR and CRITICAL are error; a line without fields has none', () => {
    const at = (level: string) =>
      workerLine('w', JSON.stringify({ level, message: 'm', service: 'crawler', sampling_rate: 0 }), 'stdout');

    expect(at('INFO')).toEqual({ level: 'info', message: 'w: m' });
    expect(at('DEBUG').level).toBe('info');
    expect(at('ERROR').level).toBe('error');
    expect(at('CRITICAL').level).toBe('error');
  });

  it('a line of text is its message: an error on stderr, info on stdout; JSON that is not a log line is text', () => {
    expect(workerLine('w', 'CRAWLER_SPIDERS: unknown spider type "x"', 'stderr')).toEqual({
      level: 'error',
      message: 'w: CRAWLER_SPIDERS: unknown spider type "x"',
    });
    expect(workerLine('w', '{"a":1}', 'stdout')).toEqual({ level: 'info', message: 'w: {"a":1}' });
    expect(workerLine('w', '{not json', 'stderr')).toEqual({ level: 'error', message: 'w: {not json' });
  });

  it('logWorkerOutput logs every line of both streams and resolves once both have ended', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const lines: [RuntimeLogLevel, string, Record<string, unknown> | undefined][] = [];
    const done = logWorkerOutput('crawler worker 0', { stdout, stderr }, (level, message, fields) =>
      lines.push([level, message, fields]),
    );
    stdout.end(`${JSON.stringify({ level: 'INFO', message: 'crawler started', service: 'crawler', slots: 4 })}\n\n`);
    stderr.end('boom\n');
    await done;

    expect(lines.sort((a, b) => a[1].localeCompare(b[1]))).toEqual([
      ['error', 'crawler worker 0: boom', undefined],
      ['info', 'crawler worker 0: crawler started', { slots: 4 }],
    ]);
  });
});
