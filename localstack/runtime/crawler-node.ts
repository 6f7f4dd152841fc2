/**
 * The Node binary that runs crawler worker processes on this machine. The crawler image runs a newer Node than the
 * Lambda functions (functions/crawler/Dockerfile: Node 26, whose V8 serializes a page's JSON faster;
 * the Lambda runtime is `nodejs24.x`), so the local runtime, the tests and the bench start workers with the image's
 * Node when `CRAWLER_NODE` names it (`localstack/toolchain.sh` exports it), and with the Node running them otherwise.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { config } from '../../lib/config/index.ts';
import { ConfigError } from '../../lib/errors.ts';

/**
 * `CRAWLER_NODE` (lib/config) when set (an absolute path to an executable file), else this process's own Node. A value
 * that is not an executable file is refused with a {@link ConfigError} naming it (the CLI exits 2 on it): a typo must not silently fall back to another Node.
 */
export function crawlerNode(setting: string = config().CRAWLER_NODE): string {
  const value = setting.trim();
  if (!value) return process.execPath;
  if (!isAbsolute(value))
    throw new ConfigError('CRAWLER_NODE', `must be an absolute path to a node binary (got "${value}")`);
  try {
    if (!statSync(value).isFile()) throw new Error('not a file');
    accessSync(value, constants.X_OK);
  } catch (e) {
    throw new ConfigError('CRAWLER_NODE', `"${value}" is not an executable file (${(e as Error).message})`);
  }
  return value;
}
