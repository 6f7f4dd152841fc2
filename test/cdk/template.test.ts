import { describe, expect, it } from 'vitest';
import { synthStack } from './synth.ts';

/** Asset hashes change with every source edit; the snapshot is about the infrastructure. */
function scrubbed(template: unknown): unknown {
  return JSON.parse(JSON.stringify(template).replace(/[0-9a-f]{64}/g, '<asset-hash>'));
}

describe('template', () => {
  it('matches the reviewed snapshot (asset hashes scrubbed)', () => {
    expect(scrubbed(synthStack().template.toJSON())).toMatchSnapshot();
  });
});
