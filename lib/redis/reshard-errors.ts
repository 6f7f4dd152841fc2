/**
 * The errors of `frontier reshard` (lib/redis/reshard.ts), shared by the move of the crawl frontier and that of the
 * URL Frontier store (lib/redis/url-frontier/reshard.ts).
 */
import { CrawlClusterError } from '../errors.ts';

/** The move was not started: something else uses the frontier, or another move is unfinished. Nothing was changed. */
export class ReshardRefusedError extends CrawlClusterError {}

/**
 * The move stopped part-way because something else wrote to the old partitions meanwhile (a monitor, a crawler or a
 * URL Frontier server still running): nothing is lost, and the move is finished by running it again once they are
 * stopped.
 */
export class ReshardInterruptedError extends CrawlClusterError {
  constructor(what: string) {
    super(
      `${what}: something still writes to the frontier (a monitor, a crawler or a URL Frontier server). Nothing is ` +
        'lost: stop every crawler, monitor and URL Frontier server, then run this again to finish the move',
    );
  }
}
