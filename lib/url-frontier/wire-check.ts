/**
 * What a request looked like on the wire, found before protobufjs decodes it: its size in bytes (what a PutURLs
 * stream holds while Redis stores it, service.ts) and the first string field whose bytes are not valid UTF-8.
 *
 * protobufjs decodes a string's invalid bytes to U+FFFD without a word, so two different URLs (or crawl IDs, keys,
 * metadata) would collapse onto one; the reference service (protobuf-java) rejects such a message. The decoded
 * string cannot tell a replacement from a U+FFFD the client really sent (EF BF BD, valid), so the check reads the
 * raw bytes: it walks the message's wire format with the schema (string, message and map fields; every other field
 * is skipped by its wire type) and runs `isUtf8` on each string's bytes. O(message size), no copies.
 */
import { isUtf8 } from 'node:buffer';
import type { PackageDefinition } from '@grpc/proto-loader';

/** A message type's string and message fields by number, as the walk needs them. */
interface MessageRule {
  fields: Map<number, FieldRule>;
  /** A map's entry message (field 1 the map key, field 2 its value). */
  mapEntry: boolean;
}

interface FieldRule {
  name: string;
  message?: MessageRule;
}

/** The parts of a proto-loader DescriptorProto (as a plain object) the rules are built from. */
interface Descriptor {
  name: string;
  field?: { name: string; number: number; type: string; typeName: string }[];
  nestedType?: Descriptor[];
  options?: { mapEntry?: boolean } | null;
}

/**
 * The rules of message type `fullName` (`package.Message`) of a proto-loader package definition. Type names are
 * resolved among the message's nested types first, then in its package, as protoc resolves them.
 */
export function messageRule(pkg: PackageDefinition, fullName: string): MessageRule {
  const cache = new Map<Descriptor, MessageRule>();
  const packageName = fullName.slice(0, fullName.lastIndexOf('.'));
  const topLevel = (name: string): Descriptor | undefined => {
    const full = name.startsWith('.') ? name.slice(1) : name.includes('.') ? name : `${packageName}.${name}`;
    return (pkg[full] as { type?: Descriptor } | undefined)?.type;
  };
  const build = (d: Descriptor): MessageRule => {
    const known = cache.get(d);
    if (known) return known;
    const rule: MessageRule = { fields: new Map(), mapEntry: d.options?.mapEntry === true };
    cache.set(d, rule); // before the fields: a message type that contains itself
    for (const f of d.field ?? []) {
      if (f.type === 'TYPE_STRING') rule.fields.set(f.number, { name: f.name });
      else if (f.type === 'TYPE_MESSAGE') {
        const nested = d.nestedType?.find((n) => n.name === f.typeName) ?? topLevel(f.typeName);
        if (nested) rule.fields.set(f.number, { name: f.name, message: build(nested) });
      }
    }
    return rule;
  };
  const root = topLevel(fullName);
  if (!root) throw new Error(`wire-check: no message type ${fullName}`);
  return build(root);
}

/** A varint at `at`: its value and where the next field starts; undefined when the bytes end first. */
function varint(buf: Uint8Array, at: number): [number, number] | undefined {
  let value = 0;
  let scale = 1;
  for (let i = at; i < buf.length && i < at + 10; i++) {
    const b = buf[i] as number;
    value += (b & 0x7f) * scale;
    scale *= 128;
    if (b < 0x80) return [value, i + 1];
  }
  return undefined;
}

/** How a field is named in an error: its dotted path; a map's names and values as `metadata name` / `metadata values`. */
function childLabel(path: string, rule: MessageRule, field: number, name: string): string {
  if (rule.mapEntry) return field === 1 ? `${path} name` : `${path} values`;
  return path === '' ? name : `${path}.${name}`;
}

/**
 * The first string field of `buf` (a message of `rule`'s type) whose bytes are not valid UTF-8, named by its path
 * (`discovered.info.url`, `items.crawlID`, `discovered.info.metadata name`), or undefined. A malformed message is
 * left to the decoder, which rejects it.
 */
export function invalidUtf8Field(buf: Uint8Array, rule: MessageRule): string | undefined {
  return walk(buf, rule, '', false);
}

/** `whole`: every field inside is named `path` (a map's value: `metadata values`, not `metadata values.values`). */
function walk(buf: Uint8Array, rule: MessageRule, path: string, whole: boolean): string | undefined {
  let at = 0;
  while (at < buf.length) {
    const tag = varint(buf, at);
    if (!tag) return undefined;
    at = tag[1];
    const field = Math.floor(tag[0] / 8);
    switch (tag[0] & 7) {
      case 0: {
        const v = varint(buf, at);
        if (!v) return undefined;
        at = v[1];
        break;
      }
      case 1:
        at += 8;
        break;
      case 5:
        at += 4;
        break;
      case 2: {
        const len = varint(buf, at);
        if (!len || len[1] + len[0] > buf.length) return undefined;
        const bytes = buf.subarray(len[1], len[1] + len[0]);
        at = len[1] + len[0];
        const f = rule.fields.get(field);
        if (!f) break;
        const label = whole ? path : childLabel(path, rule, field, f.name);
        if (f.message) {
          const bad = walk(bytes, f.message, label, whole || (rule.mapEntry && field === 2));
          if (bad) return bad;
        } else if (!isUtf8(bytes)) return label;
        break;
      }
      default:
        return undefined; // groups (proto2) are not in this schema
    }
  }
  return undefined;
}
