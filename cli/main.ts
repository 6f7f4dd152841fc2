/**
 * The `crawl-cluster` command line. Every command has `--help`; `--json` switches any command to one
 * machine-readable JSON document on stdout. Exit codes: 0 success, 1 failure, 2 invalid usage or input.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { PluginLoadError } from '../lib/crawl/spiders/registry.ts';
import { ConfigError, SchemaValidationError } from '../lib/errors.ts';
import { registerAckLost } from './ack-lost-command.ts';
import { registerActions } from './action-commands.ts';
import { registerCrawl } from './crawl-command.ts';
import { registerDemo } from './demo-command.ts';
import { registerDump } from './dump-command.ts';
import { registerFeed } from './feed-command.ts';
import { registerFrontier } from './frontier-command.ts';
import { registerLocal } from './local-command.ts';
import { createOutput } from './output.ts';
import { registerServices } from './services-command.ts';
import { registerTopics } from './topics-command.ts';

/**
 * A reader that closed its end (`crawl-cluster dump ... | head`) ends the command quietly with exit 0, as Unix tools
 * do, instead of an unhandled EPIPE stack trace.
 */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

/** The package's version, from package.json beside cli/ (what `crawl-cluster --version` prints). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

export async function main(argv: string[]): Promise<number> {
  quietOnClosedPipe(process.stdout);
  const json = argv.includes('--json');
  const out = createOutput(json);
  const program = new Command('crawl-cluster')
    .description('Scrapy Cluster reborn: a distributed on-demand crawler on Kafka, Redis, Lambda and Fargate')
    .version(packageVersion(), '-V, --version', 'print the version of crawl-cluster and exit')
    .option('--json', 'print one machine-readable JSON document instead of human output')
    .showHelpAfterError()
    .exitOverride();
  registerServices(program, out);
  registerTopics(program, out);
  registerFeed(program, out);
  registerDump(program, out);
  registerCrawl(program, out);
  registerActions(program, out);
  registerLocal(program, out);
  registerDemo(program, out);
  registerFrontier(program, out);
  registerAckLost(program, out);
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof ConfigError || error instanceof SchemaValidationError || error instanceof PluginLoadError) {
      out.error(error.message);
      return 2;
    }
    out.error((error as Error).message);
    return 1;
  }
}
