/**
 * Where bodies too big for a Kafka message go (docs/contract.md "Pages", Ext `body_ref`): a local directory
 * for local runs, S3 on AWS (functions/crawler picks S3 when BODY_STORE_BUCKET is set). The page message keeps
 * the first part.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PutObjectCommand } from '@aws-sdk/client-s3';

export interface BodyStore {
  /** Stores the body under `key` and returns a reference a consumer can fetch it by. */
  put(key: string, body: Buffer, contentType?: string): Promise<string>;
}

/** The content type of a body stored without one. */
export const DEFAULT_BODY_CONTENT_TYPE = 'application/octet-stream';

/**
 * Bodies as files under `dir`; the reference is the file's `file://` URL (`fileURLToPath` gives the path back, even
 * for keys with `%`). A key that would leave `dir` is refused.
 */
export function directoryBodyStore(dir: string): BodyStore {
  const root = resolve(dir);
  return {
    async put(key, body) {
      const path = resolve(root, key);
      if (!path.startsWith(root + sep)) throw new Error(`body store: key ${JSON.stringify(key)} leaves ${root}`);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, body);
      return pathToFileURL(path).href;
    },
  };
}

/**
 * What the S3 body store needs of an S3 client: sending one PutObject. `S3Client` satisfies it; tests hand in
 * a fake that records the commands.
 */
export interface S3PutClient {
  send(command: PutObjectCommand): Promise<unknown>;
}

/**
 * Bodies as objects `<prefix><key>` in `bucket`; the reference is `s3://bucket/<prefix><key>`. Encryption is the
 * bucket's default (SSE-S3 on the stack's body bucket), so the request names none.
 */
export function s3BodyStore(client: S3PutClient, bucket: string, prefix = ''): BodyStore {
  if (!bucket) throw new Error('s3BodyStore: bucket is required');
  return {
    async put(key, body, contentType) {
      const objectKey = `${prefix}${key}`;
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: objectKey,
          Body: body,
          ContentType: contentType ?? DEFAULT_BODY_CONTENT_TYPE,
          ContentLength: body.byteLength,
        }),
      );
      return `s3://${bucket}/${objectKey}`;
    },
  };
}
