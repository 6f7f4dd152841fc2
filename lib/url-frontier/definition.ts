/**
 * The `urlfrontier.URLFrontier` service as grpc-js loads it (urlfrontier.proto): the definition whose decoders
 * attach each request's wire facts (size, invalid UTF-8), the server options and the client constructor.
 */
import { Buffer } from 'node:buffer';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { invalidUtf8Field, messageRule } from './wire-check.ts';

const PROTO_PATH = join(import.meta.dirname, 'urlfrontier.proto');

/** proto-loader options: field names as in the schema, uint64 as numbers, enums by name, oneof markers. */
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** What a request looked like on the wire (wire-check.ts), attached to the decoded message by the server. */
export interface WireFacts {
  /** The message's size in bytes. */
  bytes: number;
  /** The first string field whose bytes are not valid UTF-8 (its path), if any. */
  invalidUtf8?: string;
}

const WIRE = Symbol('url frontier wire facts');

/** The wire facts of a request, or an estimate when it did not come through {@link urlFrontierServiceDefinition}. */
export function wireFacts(req: object): WireFacts {
  return (req as { [WIRE]?: WireFacts })[WIRE] ?? { bytes: Buffer.byteLength(JSON.stringify(req) ?? '') };
}

/**
 * The `urlfrontier.URLFrontier` service definition, each request's decoder wrapped so that the message carries its
 * wire size and any string field that is not valid UTF-8 (the handlers reject those with INVALID_ARGUMENT).
 */
export function urlFrontierServiceDefinition(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    urlfrontier: { URLFrontier: { service: grpc.ServiceDefinition } };
  };
  const service = pkg.urlfrontier.URLFrontier.service;
  const out: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const [name, method] of Object.entries(service)) {
    const requestType = (method as unknown as { requestType: { type: { name: string } } }).requestType.type.name;
    const rule = messageRule(definition, `urlfrontier.${requestType}`);
    const decode = method.requestDeserialize;
    out[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        const message = decode(bytes) as object;
        const facts: WireFacts = { bytes: bytes.length, invalidUtf8: invalidUtf8Field(bytes, rule) };
        Object.defineProperty(message, WIRE, { value: facts });
        return message;
      },
    };
  }
  return out;
}

/**
 * gRPC server options of the service (functions/url-frontier/server.ts): the largest request message it reads (grpc's
 * own default, stated here because the PutURLs memory bound counts in it: docs/url-frontier.md).
 */
export const SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': 4 * 1024 * 1024,
};

/** A client constructor for `urlfrontier.URLFrontier` (tests, tools). */
export function urlFrontierClientConstructor(): grpc.ServiceClientConstructor {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS)) as unknown as {
    urlfrontier: { URLFrontier: grpc.ServiceClientConstructor };
  };
  return pkg.urlfrontier.URLFrontier;
}
