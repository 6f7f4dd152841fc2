import type { Command } from 'commander';
import { config } from '../lib/config/index.ts';
import {
  layoutFrom,
  type ServiceStatus,
  servicesDown,
  servicesStatus,
  servicesUp,
} from '../localstack/services/index.ts';
import { type Output, printTable } from './output.ts';

function statusRows(statuses: ServiceStatus[]): string[][] {
  return statuses.map((s) => [s.name, s.state, s.address, s.pid ? String(s.pid) : '-', s.log ?? '-']);
}

/** `services up|down|status`. */
export function registerServices(program: Command, out: Output): void {
  const services = program
    .command('services')
    .description(
      'start, stop or inspect the local Redis (standalone + cluster mode), Kafka and LocalStack (no Docker)',
    );
  services
    .command('up')
    .description('start every local service that is not running and wait until each really works (idempotent)')
    .action(async () => {
      const layout = layoutFrom(config());
      const started = Date.now();
      const statuses = await servicesUp(layout, (m) => out.progress(m));
      if (out.json) out.data(statuses);
      else {
        printTable(out, ['service', 'state', 'address', 'pid', 'log'], statusRows(statuses));
        // Said again below the table: the line during start scrolls away.
        for (const s of statuses.filter((s) => s.state === 'external')) {
          out.info(`WARN ${s.name} on ${s.address} is not ours (external): see the WARN line above`);
        }
        out.info(`all services ready in ${((Date.now() - started) / 1000).toFixed(1)} s; data in ${layout.dir}`);
      }
    });
  services
    .command('down')
    .description('stop the local services that `services up` started (others are left alone)')
    .action(async () => {
      const layout = layoutFrom(config());
      await servicesDown(layout, (m) => out.progress(m));
      if (out.json) out.data(await servicesStatus(layout));
      else out.info('stopped');
    });
  services
    .command('status')
    .description('show what runs where: running (ours), external (another process on the port) or stopped')
    .action(async () => {
      const statuses = await servicesStatus(layoutFrom(config()));
      if (out.json) out.data(statuses);
      else printTable(out, ['service', 'state', 'address', 'pid', 'log'], statusRows(statuses));
    });
}
