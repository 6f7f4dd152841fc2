/** A grpc-js client of the URL Frontier service as the integration tests drive it: any method, by name. */
import type * as grpc from '@grpc/grpc-js';

/** A generated grpc-js client, its methods looked up by name. */
export type AnyClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

/** Calls unary method `method` of `client` with `req`; rejects with the call's ServiceError. */
export function unary<T = Record<string, unknown>>(client: AnyClient, method: string, req: object): Promise<T> {
  return new Promise((resolve, reject) => {
    (client[method] as (r: object, cb: (e: grpc.ServiceError | null, res: T) => void) => void).call(
      client,
      req,
      (e, res) => (e ? reject(e) : resolve(res)),
    );
  });
}

/** Calls server-streaming method `method`; resolves with every message, rejects with the call's ServiceError. */
export function stream<T = Record<string, unknown>>(client: AnyClient, method: string, req: object): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const call = (client[method] as (r: object) => grpc.ClientReadableStream<T>).call(client, req);
    const out: T[] = [];
    call.on('data', (d: T) => out.push(d));
    call.on('error', reject);
    call.on('end', () => resolve(out));
  });
}

/** Calls bidirectional method `method`, writing `reqs` then ending; resolves with every message it answered. */
export function bidi<T = Record<string, unknown>>(client: AnyClient, method: string, reqs: object[]): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const call = (client[method] as () => grpc.ClientDuplexStream<object, T>).call(client);
    const out: T[] = [];
    call.on('data', (d: T) => out.push(d));
    call.on('error', reject);
    call.on('end', () => resolve(out));
    for (const r of reqs) call.write(r);
    call.end();
  });
}
