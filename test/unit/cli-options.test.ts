import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { integerOption, positiveSeconds } from '../../cli/options.ts';

describe('integerOption', () => {
  it.each([
    ['0', 0],
    ['42', 42],
    ['-3', -3],
    ['007', 7],
    [String(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER],
  ])('parses %j without bounds as %d', (text, value) => {
    expect(integerOption()(text)).toBe(value);
  });

  it.each([
    '',
    ' ',
    'abc',
    '1.5',
    '1.0',
    '1e3',
    '0x10',
    ' 5',
    '5 ',
    '+5',
    '5abc',
    'Infinity',
    'NaN',
    '9007199254740993',
  ])('refuses %j: not a plain decimal safe integer', (text) => {
    expect(() => integerOption()(text)).toThrow(new InvalidArgumentError('must be an integer'));
  });

  it('keeps to inclusive bounds and says which in the message', () => {
    const port = integerOption({ min: 0, max: 65535 });
    expect(port('0')).toBe(0);
    expect(port('65535')).toBe(65535);
    expect(() => port('65536')).toThrow('must be an integer from 0 to 65535');
    expect(() => port('-1')).toThrow('must be an integer from 0 to 65535');
    expect(() => integerOption({ min: 1 })('0')).toThrow('must be an integer >= 1');
    expect(() => integerOption({ min: 1 })('abc')).toThrow('must be an integer >= 1');
    expect(() => integerOption({ max: 3 })('4')).toThrow('must be an integer <= 3');
    expect(integerOption({ max: 3 })('-10')).toBe(-10);
  });
});

describe('positiveSeconds', () => {
  it.each([
    ['30', 30],
    ['0.5', 0.5],
  ])('parses %j as %d', (text, value) => {
    expect(positiveSeconds(text)).toBe(value);
  });

  it.each(['', '0', '-1', 'abc', 'Infinity'])('refuses %j', (text) => {
    expect(() => positiveSeconds(text)).toThrow(new InvalidArgumentError('must be a positive number of seconds'));
  });
});

describe('through commander', () => {
  function parse(args: string[]): { max?: number; error?: CommanderError; stderr: string } {
    let stderr = '';
    const program = new Command('t')
      .exitOverride()
      .configureOutput({ writeErr: (s) => (stderr += s), writeOut: () => {} })
      .option('--max <n>', 'stop after n', integerOption({ min: 1 }), 10);
    try {
      program.parse(args, { from: 'user' });
      return { max: program.opts<{ max: number }>().max, stderr };
    } catch (error) {
      return { error: error as CommanderError, stderr };
    }
  }

  it('hands the parsed number to the command; the default is not parsed', () => {
    expect(parse(['--max', '3']).max).toBe(3);
    expect(parse([]).max).toBe(10);
  });

  it("reports a bad value as commander's invalid-argument usage error", () => {
    const { error, stderr } = parse(['--max', 'abc']);
    expect(error).toBeInstanceOf(CommanderError);
    expect(error?.code).toBe('commander.invalidArgument');
    expect(stderr).toBe("error: option '--max <n>' argument 'abc' is invalid. must be an integer >= 1\n");
  });
});
