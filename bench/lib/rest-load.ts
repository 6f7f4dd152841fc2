/**
 * A child process of bench/scenarios/sizes-rest.ts: `node bench/lib/rest-load.ts <origin> <clients> <path>` runs
 * `clients` busy keep-alive clients, each sending `GET <path>` again as soon as its last answer arrived, over one
 * undici Pool of that many connections. They ignore Retry-After (the worst case for the server); after a failed
 * request (a connection the server closed) a client pauses 10 ms so this process does not spin. Prints one JSON
 * line a second with the answers so far by status (and errors by code); runs until killed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

const [origin, clientsArg, path = '/'] = process.argv.slice(2);
const clients = Number(clientsArg);
if (!origin || !Number.isInteger(clients) || clients < 1) {
  process.stderr.write('usage: rest-load.ts <origin> <clients> [path]\n');
  process.exit(2);
}

const pool = new Pool(origin, {
  connections: clients,
  pipelining: 1,
  keepAliveTimeout: 60_000,
  headersTimeout: 60_000,
  bodyTimeout: 60_000,
  connectTimeout: 30_000,
});
const counts: Record<string, number> = {};
const bump = (key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
};

async function client(): Promise<never> {
  for (;;) {
    try {
      const answer = await pool.request({ method: 'GET', path });
      await answer.body.dump();
      bump(String(answer.statusCode));
    } catch (error) {
      bump((error as { code?: string }).code ?? 'error');
      await sleep(10);
    }
  }
}

setInterval(() => process.stdout.write(`${JSON.stringify({ at: Date.now(), counts })}\n`), 1000);
for (let i = 0; i < clients; i++) void client();
