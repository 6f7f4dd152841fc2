/**
 * Child-process entry of localstack/site/process.ts: serves one fixture site, or the simulated internet
 * (internet-server.ts), with the options sent over IPC, answers `{ port }`, and closes and exits on `close` or when
 * the parent goes away.
 */
import { startInternet } from './internet-server.ts';
import type { FixtureMessage } from './process.ts';
import { startSite } from './site.ts';

process.once('message', (message: FixtureMessage) => {
  void (async () => {
    const site = 'internet' in message ? await startInternet(message.internet) : await startSite(message.options);
    const stop = async () => {
      await site.close();
      process.exit(0);
    };
    process.on('message', (m: { type?: string }) => {
      if (m.type === 'close') void stop();
      if (m.type === 'hits') process.send?.({ type: 'hits', hits: [...site.hits] });
    });
    process.once('disconnect', () => void stop());
    process.send?.({ type: 'ready', port: site.port });
  })();
});
