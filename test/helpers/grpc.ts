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
