/**
 * The sink's output port on S3 (`s3://bucket/prefix`), and the reader of bodies stored there (`body_ref`). A
 * PutObject replaces an object whole, so a reader never sees part of one. Encryption is the bucket's default.
 */
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import type { SinkOutput } from './output.ts';
import type { BodyReader } from './page-body.ts';

/** What the sink needs of an S3 client: sending its commands. `S3Client` satisfies it. */
export interface S3CommandClient {
  send(command: PutObjectCommand | GetObjectCommand | ListObjectsV2Command | DeleteObjectCommand): Promise<unknown>;
}

/** Splits `s3://bucket/key/prefix` into the bucket and the key prefix. */
function parseS3Uri(uri: string): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri);
  if (!match?.[1]) throw new Error(`not an s3:// URI: ${JSON.stringify(uri)}`);
  const prefix = match[2] ?? '';
  return { bucket: match[1], prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/` };
}

/** Objects `<prefix><key>` in the bucket of `uri` (`s3://bucket/prefix`). */
export function s3Output(client: S3CommandClient, uri: string): SinkOutput {
  const { bucket, prefix } = parseS3Uri(uri);
  return {
    uri: `s3://${bucket}/${prefix}`,
    async put(key, chunks, contentType) {
      const length = chunks.reduce((n, c) => n + c.length, 0);
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: `${prefix}${key}`,
          Body: Readable.from(chunks),
          ContentLength: length,
          ContentType: contentType,
        }),
      );
    },
    async list(keyPrefix) {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = (await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}${keyPrefix}`, ContinuationToken: token }),
        )) as ListObjectsV2CommandOutput;
        for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key.slice(prefix.length));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys;
    },
    async remove(keys) {
      // Stale objects are few (a redelivery that holds fewer records than the first): one request each.
      for (const key of keys) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: `${prefix}${key}` }));
    },
  };
}

/** Reads `s3://bucket/key` bodies; a missing object reads as undefined. */
export function s3BodyReader(client: S3CommandClient): BodyReader {
  return {
    async read(ref) {
      const match = /^s3:\/\/([^/]+)\/(.+)$/.exec(ref);
      if (!match) throw new Error(`not an s3:// object URI: ${JSON.stringify(ref)}`);
      try {
        const out = (await client.send(new GetObjectCommand({ Bucket: match[1], Key: match[2] }))) as {
          Body?: { transformToByteArray(): Promise<Uint8Array> };
        };
        if (!out.Body) return Buffer.alloc(0);
        return Buffer.from(await out.Body.transformToByteArray());
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name === 'NoSuchKey' || name === 'NotFound') return undefined;
        throw error;
      }
    },
  };
}
