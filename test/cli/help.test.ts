// The command line's own answers: `keygate <command> --help` and `keygate help <command>` for every
// command, `keygate --version`, an unknown option (one line, exit code 2, before any database is
// opened), and the one reading of spans and instants every duration option goes through.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { commandArgs, UsageError } from '../../src/cli/args.js';
import { ADMIN_COMMANDS, PROGRAMS } from '../../src/cli/commands.js';
import { parseDuration, parseInstant, parseSpan, parseTtl } from '../../src/cli/durations.js';
import { helpOrVersion } from '../../src/cli/help.js';
import { COMMAND_SPECS } from '../../src/cli/specs.js';
import { runCli } from '../helpers/cli-program.js';

const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: '/proc/keygate-never' };
const specs = Object.values(COMMAND_SPECS);

describe('--help', () => {
  it.each(specs.map((s) => [s.name]))('keygate %s --help: its usage, every option and an example', (name) => {
    const spec = COMMAND_SPECS[name as keyof typeof COMMAND_SPECS];
    const text = helpOrVersion([...name.split(' '), '--help']);
    expect(text).toMatch(new RegExp(`^usage: keygate ${name}\\b`));
    for (const option of [...Object.keys(spec.options), 'json', 'help']) expect(text).toContain(`  --${option}`);
    expect(text).toContain(`example:\n  ${spec.example}\n`);
    expect(helpOrVersion(['help', ...name.split(' ')])).toBe(text);
    // Given anywhere on the line, as before the command's own arguments are read.
    expect(helpOrVersion([...name.split(' '), '--json', '-h'])).toBe(text);
  });

  it.each(PROGRAMS.map((p) => [p]))('keygate %s --help: the program, its settings and an example', (name) => {
    const text = helpOrVersion([name, '--help']);
    expect(text).toMatch(new RegExp(`^usage: keygate ${name}\n`));
    expect(text).toMatch(/\nexample:\n {2}\S.* keygate /);
    expect(text).not.toContain('--json');
  });

  it('each example is a valid command line of its command', () => {
    for (const s of specs) {
      const words = s.example.replace(/\s*>.*$/, '').split(' ');
      expect(words.slice(0, 1 + s.name.split(' ').length).join(' ')).toBe(`keygate ${s.name}`);
      expect(() => commandArgs(s, words.slice(1 + s.name.split(' ').length)), s.example).not.toThrow();
    }
  });

  it('a group (keygate keys --help) lists its commands; the whole usage lists every one', () => {
    for (const group of ADMIN_COMMANDS) {
      const text = helpOrVersion([group, '--help']);
      for (const s of specs.filter((c) => c.name.startsWith(`${group} `)))
        expect(text).toContain(`${s.name} ${s.synopsis[0]}`.trimEnd());
    }
    const all = helpOrVersion(['--help']);
    expect(all).toMatch(/^usage: keygate <command>\n/);
    for (const s of specs) expect(all).toContain(`  ${s.name}`);
    expect(helpOrVersion(['help'])).toBe(all);
    expect(helpOrVersion(['help', 'frobnicate'])).toBe(all);
  });

  it.concurrent(
    'the program: keygate keys rotate --help, keygate help gateway (exit 0, stdout only)',
    async () => {
      const rotate = await runCli(['keys', 'rotate', '--help'], env);
      expect([rotate.code, rotate.stderr]).toEqual([0, '']);
      expect(rotate.stdout).toBe(helpOrVersion(['keys', 'rotate', '--help']));
      const gateway = await runCli(['help', 'gateway'], env);
      expect([gateway.code, gateway.stderr]).toEqual([0, '']);
      expect(gateway.stdout).toMatch(/^usage: keygate gateway\n/);
    },
    60_000,
  );
});

describe('--version', () => {
  it.concurrent(
    "keygate --version prints package.json's version",
    async () => {
      const r = await runCli(['--version'], env);
      expect(r).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    },
    60_000,
  );
});

describe('an unknown option: one line naming the command and the option, exit code 2', () => {
  it.concurrent.each([
    [['keys', 'list', '--colour'], 'keygate: keys list: unknown option --colour'],
    [['audit', 'verify', '--since=2026-01-01'], 'keygate: audit verify: unknown option --since'],
    [['keys', 'rotate', '12', '-x'], 'keygate: keys rotate: unknown option -x'],
    [['gateway', '--port', '8080'], 'keygate: gateway: unknown option --port'],
    [['migrate', 'now'], 'keygate: migrate: unexpected argument "now"'],
    [['keys', '--version'], 'keygate: keys: expected create, list, update, rotate or revoke (got "--version")'],
  ])(
    '%j',
    async (args, line) => {
      const r = await runCli(args, env);
      expect(r).toEqual({ code: 2, stdout: '', stderr: `${line}\n` });
    },
    60_000,
  );

  it('a flag given a value, a value missing, a string option twice', () => {
    const spec = COMMAND_SPECS['keys update'];
    const refused = (argv: string[]) => {
      try {
        commandArgs(spec, argv);
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(refused(['1', '--no-expiry=yes'])).toBe('keys update: --no-expiry takes no value');
    expect(refused(['1', '--name'])).toBe('keys update: --name needs a value');
    expect(refused(['1', '--name', '--json'])).toBe('keys update: --name needs a value');
    expect(refused(['1', '--name', 'a', '--name=b'])).toBe('keys update: --name is given twice');
    // A value may start with one dash, and `--` ends the options.
    expect(commandArgs(spec, ['1', '--name', '-a-', '--json']).values).toEqual({ name: '-a-' });
    expect(commandArgs(spec, ['--', '1']).positionals).toEqual({ keyId: '1' });
  });
});

describe('spans and instants: one reading of <n><unit>', () => {
  it('parseDuration', () => {
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('90m')).toBe(5_400_000);
    expect(parseDuration('12h')).toBe(43_200_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('999999d')).toBe(999_999 * 86_400_000);
    for (const bad of ['0', '0s', '01h', '1w', '1.5h', '1H', ' 1h', '1000000s', '+1h', '', 'h'])
      expect(parseDuration(bad), bad).toBeNull();
    expect(parseDuration('30s', ['m', 'h', 'd'])).toBeNull();
  });

  it('a bad duration: each option names itself and what it takes', () => {
    expect(() => parseSpan('keys rotate', '--grace', '1w')).toThrow(
      'keys rotate: --grace must be 0 or <n>s, <n>m, <n>h or <n>d such as 24h (got "1w")',
    );
    expect(parseSpan('keys rotate', '--grace', '0')).toBe(0);
    expect(() => parseTtl('sessions create', '30s')).toThrow(/^sessions create: --ttl must be minutes/);
    expect(() => parseTtl('sessions create', '367d')).toThrow(/at most 366d \(got "367d"\)$/);
    expect(parseTtl('sessions create', '366d')).toBe(366 * 86_400_000);
    expect(parseInstant('keys update', '--expires-at', '+2h', 1_000)).toEqual(new Date(7_201_000));
    expect(() => parseInstant('keys update', '--expires-at', '30d')).toThrow(
      /^keys update: --expires-at must be an ISO 8601 time with a zone .* \(got "30d"\)$/,
    );
  });

  it.concurrent(
    'the program: a bad duration is one line, exit code 2',
    async () => {
      const r = await runCli(['keys', 'rotate', '12', '--grace', 'soon'], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^keygate: keys rotate: --grace must be 0 or .* \(got "soon"\)\n$/);
    },
    60_000,
  );
});
