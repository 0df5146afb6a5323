// The commands' names, apart from their code: the program entry (src/cli.ts) dispatches on them without
// loading the key-management commands, which bring the service layer and parts of the backend a gateway
// process never uses (about 8 MB of its resident memory).
export const PROGRAMS = ['start', 'gateway', 'backend', 'migrate', 'seed'] as const;
export const ADMIN_COMMANDS = [
  'keys',
  'orgs',
  'sessions',
  'audit',
  'admin-tokens',
  'limits',
  'usage',
  'export',
  'diff',
  'apply',
] as const;

/** Whether the command line asks for help (`--help` or `-h` anywhere, `help [command]`) or `--version`. */
export function asksForHelp(argv: readonly string[]): boolean {
  return argv[0] === 'help' || argv[0] === '--version' || argv.some((a) => a === '--help' || a === '-h');
}
