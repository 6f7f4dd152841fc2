/**
 * The URL Frontier API gRPC server (insecure, like the reference): binds host:port over a store and closes
 * cleanly. Port 0 picks a free port.
 */
import { networkInterfaces } from 'node:os';
import * as grpc from '@grpc/grpc-js';
import type { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { SERVER_OPTIONS, urlFrontierServiceDefinition } from '../../lib/url-frontier/definition.ts';
import { ReadBudget } from '../../lib/url-frontier/read-budget.ts';
import { PUT_BUFFER_BYTES, urlFrontierHandlers } from '../../lib/url-frontier/service.ts';

export interface UrlFrontierServer {
  /** The bound port. */
  port: number;
  /** `host:port` as ListNodes reports it (the advertised address when one is given). */
  address: string;
  /** What this server's PutURLs / PutDiscovered streams hold unacked, together (lib/url-frontier/read-budget.ts). */
  putBudget: ReadBudget;
  /** Stops accepting calls; gives running calls `graceMs` and then cancels them. */
  close(graceMs?: number): Promise<void>;
}

/** This machine's first non-internal IPv4 address (what a peer in the same network reaches), else 127.0.0.1. */
export function ownAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.1';
}

/** The host ListNodes reports for a bind host: itself, or {@link ownAddress} for every interface. */
function reportedHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? ownAddress() : host;
}

export async function startUrlFrontierServer(
  store: UrlFrontierStore,
  options: {
    host?: string;
    port?: number;
    /** `host:port` for ListNodes instead of the bound address (behind a load balancer: its endpoint). */
    advertise?: string;
    log?: (level: 'info' | 'error', message: string) => void;
    /**
     * Wire bytes every PutURLs / PutDiscovered stream together may hold unacked before they stop reading.
     * @default PUT_BUFFER_BYTES
     */
    putBufferBytes?: number;
  } = {},
): Promise<UrlFrontierServer> {
  const host = options.host ?? '127.0.0.1';
  const server = new grpc.Server(SERVER_OPTIONS);
  const putBudget = new ReadBudget(options.putBufferBytes ?? PUT_BUFFER_BYTES);
  let address = options.advertise || `${reportedHost(host)}:${options.port ?? 7071}`;
  server.addService(
    urlFrontierServiceDefinition(),
    urlFrontierHandlers(store, { nodeAddress: () => address, log: options.log, putBudget }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${host.includes(':') ? `[${host}]` : host}:${options.port ?? 7071}`,
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    );
  });
  address = options.advertise || `${reportedHost(host)}:${port}`;
  return {
    port,
    address,
    putBudget,
    close: (graceMs = 2000) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
