// The load test's command line through node:util's parseArgs (src/cli/args.ts strictArgs): its
// defaults, and each mistake in one line naming the option, as the keygate commands word them.
import { describe, expect, it } from 'vitest';
import { parseOptions, UsageError } from '../../src/loadtest/options.js';

const KEY = 'svc_ws_LoadTestOptionsKey00000000000000001';
const base = ['--url', 'http://127.0.0.1:8080', '--key', KEY];

const refusal = (argv: string[]): string => {
  try {
    parseOptions(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  return 'accepted';
};

describe('loadtest options', () => {
  it('the defaults', () => {
    const o = parseOptions(base, new Date('2026-12-04T15:00:00Z'));
    expect(o).toMatchObject({
      duration: 30,
      connections: 10,
      timeoutMs: 10_000,
      requests: null,
      rate: null,
      honourRetryAfter: true,
      progress: true,
      outDir: 'loadtest-results/2026-12-04T15-00-00-000Z',
    });
  });

  it('repeatable options, and a value that starts with a dash', () => {
    const o = parseOptions([...base, '--url', 'http://127.0.0.1:8081', '--route', 'GET /a', '--route', 'POST /b 2']);
    expect(o.urls).toEqual(['http://127.0.0.1:8080', 'http://127.0.0.1:8081']);
    expect(o.routes.map((r) => `${r.method} ${r.path} ${r.weight}`)).toEqual(['GET /a 1', 'POST /b 2']);
    expect(refusal([...base, '--rate', '-5'])).toBe('--rate must be an integer from 1 to 1000000, not "-5"');
  });

  it('an unknown option, a value missing, a flag given one, a positional: one line each', () => {
    expect(refusal([...base, '--bogus'])).toBe('unknown option --bogus');
    expect(refusal([...base, '--rate'])).toBe('--rate needs a value');
    expect(refusal([...base, '--quiet=yes'])).toBe('--quiet takes no value');
    expect(refusal([...base, 'extra'])).toBe('unexpected argument "extra"');
    expect(refusal([...base, '--duration', '0'])).toBe('--duration must be an integer from 1 to 86400, not "0"');
  });
});
