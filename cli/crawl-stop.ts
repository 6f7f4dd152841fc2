/**
 * Ctrl-C during `crawl`: asks whether to stop the crawl in the cluster when a person can answer (stdin is
 * a terminal), else stops it, and waits a while for the stop's reply.
 */
import { createInterface } from 'node:readline';
import { refusalReason } from './crawl-tally.ts';
import type { Output } from './output.ts';
import { type ClusterSession, type Message, noClusterHint, type ReplyWaiter, requestUuid } from './reply-wait.ts';

/** How long a stop on Ctrl-C waits for its reply. */
const STOP_REPLY_MS = 10_000;

/** @returns the stop's reply, or undefined when none was sent or none came. */
export async function offerStop(
  session: ClusterSession,
  replies: ReplyWaiter,
  request: { appid: string; crawlid: string; spiderid: string },
  out: Output,
): Promise<Message | undefined> {
  const { appid, crawlid, spiderid } = request;
  if (process.stdin.isTTY) {
    const answer = await ask(`stop crawl ${crawlid} in the cluster too (its pending requests are purged)? [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) {
      out.progress(
        `left crawl ${crawlid} running; stop it later with: crawl-cluster stop --appid ${appid} --crawlid ${crawlid}`,
      );
      return undefined;
    }
  }
  const uuid = requestUuid();
  const reply = replies.expect(uuid, STOP_REPLY_MS);
  out.progress(`stopping crawl ${crawlid} (Ctrl-C again to leave without waiting)`);
  try {
    await session.send({ uuid, appid, crawlid, spiderid, action: 'stop' });
  } catch (error) {
    out.error(`the stop request was not sent: ${(error as Error).message}`);
    return undefined;
  }
  const answer = await reply;
  if (answer === undefined) {
    out.error(`no reply to the stop request within ${STOP_REPLY_MS / 1000} s; ${noClusterHint(session.prefix)}`);
  } else if (typeof answer.error === 'string') {
    // A rejection (e.g. the crawl's unknown spider) or a failure: nothing was purged, and the reply says why.
    out.error(`the cluster did not stop crawl ${crawlid}: ${refusalReason(answer)}`);
    return undefined;
  } else {
    out.progress(
      `stopped crawl ${crawlid}: purged ${answer.total_purged} pending request${answer.total_purged === 1 ? '' : 's'}`,
    );
  }
  return answer;
}

/** One answer from a person at the terminal; Ctrl-C or end of input counts as "no". */
async function ask(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await new Promise<string>((resolve) => {
      rl.on('SIGINT', () => resolve(''));
      rl.on('close', () => resolve(''));
      rl.question(question, resolve);
    });
  } finally {
    rl.close();
  }
}
