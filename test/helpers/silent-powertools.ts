/**
 * Imported by a handler unit test ahead of the handler modules, for its side effect: their Powertools logger and
 * metrics are created at import and read LOG_LEVEL and POWERTOOLS_METRICS_DISABLED then, so these are set to SILENT
 * and true first. The values found are put back after the test file.
 */
import { afterAll } from 'vitest';

const saved = {
  LOG_LEVEL: process.env.LOG_LEVEL,
  POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED,
};
process.env.LOG_LEVEL = 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});
