// The declarative state's commands' options and help (docs/declarative-state.md), apart from their code
// as COMMAND_SPECS are: `keygate export --help` loads neither the service layer nor the state's modules.
import type { CommandSpec } from './args.js';

const prune = {
  type: 'boolean' as const,
  help: 'also revoke or delete what the file lacks (keys revoked, workspaces soft-deleted, ...)',
};

export const STATE_SPECS = {
  export: {
    name: 'export',
    synopsis: ['[--format yaml|json] [--out <file>]'],
    summary:
      'Writes the state an operator manages (plans, organizations, users, workspaces, members, keys, admin tokens, webhook endpoints; never a secret) as one document.',
    options: {
      format: { type: 'string', arg: 'yaml|json', help: 'yaml (the default, or by the --out file name) or json' },
      out: { type: 'string', arg: '<file>', help: 'write it to this file instead of stdout' },
    },
    example: 'keygate export --out state.yaml',
  },
  diff: {
    name: 'diff',
    synopsis: ['<file> [--prune] [--exit-code]'],
    summary: 'Prints what `keygate apply <file>` would change, field by field; changes nothing.',
    positionals: ['file'],
    options: {
      prune,
      'exit-code': { type: 'boolean', help: 'exit 1 when there are changes, 0 when none (for CI)' },
    },
    example: 'keygate diff state.yaml --exit-code',
  },
  apply: {
    name: 'apply',
    synopsis: ['<file> [--prune]'],
    summary:
      'Makes the database match the file in one transaction, each change audited; a key, token or endpoint it creates has its secret printed once. A file with a mistake changes nothing (exit 2).',
    positionals: ['file'],
    options: { prune },
    example: 'keygate apply state.yaml',
  },
} satisfies Record<string, CommandSpec>;
