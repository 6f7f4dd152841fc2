import { describe, expect, it } from 'vitest';
import { offerStop } from '../../cli/crawl-stop.ts';
import type { Output } from '../../cli/output.ts';
import { type ClusterSession, type Message, ReplyWaiter } from '../../cli/reply-wait.ts';

/** An Output that keeps what was said, by stream. */
function recordingOutput(): Output & { lines: string[] } {
  const lines: string[] = [];
  return {
    json: false,
    lines,
    progress: (m) => lines.push(m),
    info: (m) => lines.push(m),
    data: (v) => lines.push(JSON.stringify(v)),
    error: (m) => lines.push(`error: ${m}`),
  };
}

/** A session whose every request is answered at once by `answer(request)`, through the waiter. */
function answeringSession(replies: ReplyWaiter, answer: (request: Message) => Message): ClusterSession {
  return {
    prefix: 'p',
    send: async (request: Message) => {
      queueMicrotask(() => replies.offer({ uuid: request.uuid, ...answer(request) }));
    },
  } as unknown as ClusterSession;
}

describe('offerStop (Ctrl-C during crawl, stdin not a terminal)', () => {
  const request = { appid: 'a', crawlid: 'c1', spiderid: 'nosuch' };

  it('says the cluster refused the stop, with its reason, instead of a purged count', async () => {
    const replies = new ReplyWaiter();
    const out = recordingOutput();
    const session = answeringSession(replies, () => ({
      appid: 'a',
      error: 'unknown_spider',
      details: [{ path: '/spiderid', message: 'no spider "nosuch"' }],
    }));

    const reply = await offerStop(session, replies, request, out);

    expect(reply).toBeUndefined();
    expect(out.lines).toContain('error: the cluster did not stop crawl c1: unknown_spider: no spider "nosuch"');
    expect(out.lines.join('\n')).not.toContain('purged');
  });

  it('prints the purged count of a stop reply', async () => {
    const replies = new ReplyWaiter();
    const out = recordingOutput();
    const session = answeringSession(replies, () => ({ appid: 'a', action: 'stop', total_purged: 3 }));

    const reply = await offerStop(session, replies, request, out);

    expect(reply).toMatchObject({ total_purged: 3 });
    expect(out.lines).toContain('stopped crawl c1: purged 3 pending requests');
  });
});
