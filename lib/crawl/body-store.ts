/**
 * Where bodies too big for a Kafka message go (CONTRACT.md "Pages", Ext `body_ref`): a local directory
 * for local runs, S3 on AWS (functions/crawler wires the S3 one). The page message keeps the first part.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface BodyStore {
  /** Stores the body under `key` and returns a reference a consumer can fetch it by. */
  put(key: string, body: Buffer, contentType?: string): Promise<string>;
}

/** Bodies as files under `dir`; the reference is a `file://` URL. */
export function directoryBodyStore(dir: string): BodyStore {
  return {
    async put(key, body) {
      const path = join(dir, key);
      await mkdir(join(path, '..'), { recursive: true });
      await writeFile(path, body);
      return `file://${path}`;
    },
  };
}
