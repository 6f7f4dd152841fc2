/**
 * Child-process entry of localstack/site/process.ts: serves one fixture site with the options sent over IPC,
 * answers `{ port }`, and closes and exits on `close` or when the parent goes away.
 */
import { type SiteOptions, startSite } from './site.ts';

process.once('message', (message: { options: SiteOptions }) => {
  void (async () => {
    const site = await startSite(message.options);
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
