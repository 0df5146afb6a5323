// Every key-management command's options and help, apart from the commands' code: `keygate <command>
// --help` prints them without loading the service layer, and each command hands its spec to parseArgs
// (src/cli/args.ts). The programs' own (start, gateway, ...) are in src/cli/help.ts.
import type { CommandSpec, OptionSpec, OptionSpecs } from './args.js';

const str = (arg: string, help: string, extra: Partial<OptionSpec> = {}): OptionSpec => ({
  type: 'string',
  arg,
  help,
  ...extra,
});
const flag = (help: string): OptionSpec => ({ type: 'boolean', help });

const TIME = '<time>';
const expiresAt = str(TIME, 'when the key stops working (see <time> below); default never');
const metadata = str('<json>', 'a JSON object of up to 1 KiB the verifier hands the service, or null');

const LIMITS: OptionSpecs = {
  read: str('N|plan', 'requests per minute of the read bucket; plan: back to the layer above'),
  write: str('N|plan', 'the write bucket, likewise'),
  bulk: str('N|plan', 'the bulk bucket, likewise'),
  'monthly-quota': str('N|none|plan', 'requests per UTC month (organizations only); none: no quota'),
  clear: flag('every override back to the layer above'),
};

const AUDIT_FILTERS: OptionSpecs = {
  org: str('<id>', 'rows of one organization'),
  actor: str('<kind>', 'admin-token, user, cli, internal, seed or api-key'),
  'actor-id': str('<id>', 'one actor of that kind'),
  action: str('<action>', 'key.rotate, or key. for every action on keys'),
  'target-type': str('<type>', 'key, organization, workspace, ...'),
  target: str('<id>', 'one target'),
  since: str(TIME, 'rows at or after'),
  until: str(TIME, 'rows before'),
};

const USAGE_RANGE: OptionSpecs = {
  from: str(TIME, 'the first instant, or -7d, -24h: that long ago; default 24 hours before --to'),
  to: str(TIME, 'the end; default now'),
  granularity: str('<unit>', 'minute (at most 1440 buckets), hour (the default, 2000) or day (400)'),
};

const spec = (s: CommandSpec): CommandSpec => s;

export const COMMAND_SPECS = {
  'keys create': spec({
    name: 'keys create',
    synopsis: [
      '--type workspace --workspace <id> --name <name> [--role VIEWER|EDITOR|ADMIN|OWNER] [--scopes a:b,c:d] [--created-by <userId>]',
      '--type personal --user <id> --name <name> [--scopes a:b,c:d]',
      '--type partner --org <id> --name <name>',
      '--type <consumer type> --org <consumerId> --name <name> [--scopes a:b,c:d]   (a rest profile)',
    ],
    summary:
      "Creates a key of a type of the profile (PROFILE_FILE; each takes [--expires-at <time>] [--metadata <json>]); its secret, the type's prefix and 40 characters, is printed once.",
    options: {
      type: str(
        '<type>',
        "a key type of the profile (required): workspace, personal or partner; a rest profile's, such as consumer",
      ),
      name: str('<name>', '1 to 100 characters (required)'),
      workspace: str('<id>', 'a workspace key: its workspace'),
      role: str('<role>', "a workspace key: VIEWER, EDITOR, ADMIN or OWNER, at most its creator's"),
      'created-by': str('<userId>', 'a workspace key: the user it acts for'),
      user: str('<id>', 'a personal key: its user'),
      org: str('<id>', "a partner key: its organization; a rest profile's key: its consumer (keygate orgs create)"),
      scopes: str('a:b,c:d', "all but partner keys: the scopes (resource:action) it may use, among the profile's"),
      'expires-at': expiresAt,
      metadata,
    },
    example: 'keygate keys create --type workspace --workspace 100 --name ci --role EDITOR --expires-at +90d',
  }),
  'keys list': spec({
    name: 'keys list',
    synopsis: [
      '[--org <id>] [--workspace <id>] [--user <id>] [--type <type>] [--status active|expired|revoked] [--active]',
    ],
    summary: 'Lists keys (never their secrets), with their last use.',
    options: {
      org: str('<id>', 'keys of one organization'),
      workspace: str('<id>', 'keys of one workspace'),
      user: str('<id>', 'keys of one user'),
      type: str('<type>', 'a key type of the profile (workspace, personal, partner; consumer, ...)'),
      status: str('<status>', 'active, expired or revoked'),
      active: flag('as --status active'),
    },
    example: 'keygate keys list --org 1 --status expired',
  }),
  'keys update': spec({
    name: 'keys update',
    synopsis: ['<keyId> [--name <name>] [--expires-at <time> | --no-expiry] [--metadata <json>|null]'],
    summary: 'Renames a key, changes its expiry or its metadata.',
    positionals: ['keyId'],
    options: {
      name: str('<name>', 'its new name'),
      'expires-at': expiresAt,
      'no-expiry': flag('it never expires'),
      metadata,
    },
    example: 'keygate keys update 1042 --expires-at +30d',
  }),
  'keys rotate': spec({
    name: 'keys rotate',
    synopsis: ['<keyId> [--grace 24h]'],
    summary: 'Gives a key a new secret, printed once; the old one works for the grace period.',
    positionals: ['keyId'],
    options: { grace: str('<span>', 'how long the old secret keeps working: 0 (stops at once) or 30m, 24h, 7d') },
    example: 'keygate keys rotate 1042 --grace 1h --json',
  }),
  'keys revoke': spec({
    name: 'keys revoke',
    synopsis: ['<keyId>'],
    summary: 'Revokes a key: every gateway refuses it from its very next request.',
    positionals: ['keyId'],
    options: {},
    example: 'keygate keys revoke 1042',
  }),
  'keys limits': spec({
    name: 'keys limits',
    synopsis: ['<keyId> [--read N|plan] [--write N|plan] [--bulk N|plan] [--clear]'],
    summary: "Shows a key's rate limits, or overrides its organization's.",
    positionals: ['keyId'],
    options: LIMITS,
    example: 'keygate keys limits 1042 --bulk 2',
  }),
  'orgs create': spec({
    name: 'orgs create',
    synopsis: ['--name <name> [--plan <plan>] [--read N] [--write N] [--bulk N] [--monthly-quota N|none] [--paused]'],
    summary:
      'Creates an organization; under a rest profile (PROFILE_FILE) a consumer, which its keys belong to. Its id is printed.',
    options: {
      name: str('<name>', '1 to 100 characters (required)'),
      plan: str(
        '<plan>',
        "a plan of the profile's plans (PLANS_FILE for the workspace API); default none: the free plan's limits",
      ),
      read: LIMITS.read,
      write: LIMITS.write,
      bulk: LIMITS.bulk,
      'monthly-quota': str('N|none', 'requests per UTC month; none: no quota even if the plan has one'),
      paused: flag('created paused: every call of its keys refused until keygate orgs resume'),
    },
    example: 'keygate orgs create --name acme --plan pro --read 300',
  }),
  'orgs pause': spec({
    name: 'orgs pause',
    synopsis: ['<orgId>'],
    summary: 'Pauses an organization: every /v2 and /v1 call of its keys is refused.',
    positionals: ['orgId'],
    options: {},
    example: 'keygate orgs pause 1',
  }),
  'orgs resume': spec({
    name: 'orgs resume',
    synopsis: ['<orgId>'],
    summary: 'Resumes a paused organization.',
    positionals: ['orgId'],
    options: {},
    example: 'keygate orgs resume 1',
  }),
  'orgs plan': spec({
    name: 'orgs plan',
    synopsis: ['<orgId> <plan|none>'],
    summary: 'Moves an organization to a plan of PLANS_FILE (none: the Free limits).',
    positionals: ['orgId', 'plan'],
    options: {},
    example: 'keygate orgs plan 1 scale',
  }),
  'orgs limits': spec({
    name: 'orgs limits',
    synopsis: ['<orgId> [--read N|plan] [--write N|plan] [--bulk N|plan] [--monthly-quota N|none|plan] [--clear]'],
    summary: "Shows an organization's rate limits and quota, or overrides its plan's.",
    positionals: ['orgId'],
    options: LIMITS,
    example: 'keygate orgs limits 1 --read 50 --write 20',
  }),
  'limits replay': spec({
    name: 'limits replay',
    synopsis: ['--access-log <file> --plans <plans.json> [--overrides <file>]'],
    summary: 'Replays a gateway access log against candidate plans: what they would have refused (docs/limits.md).',
    options: {
      'access-log': str('<file>', "a gateway's access log (required)"),
      plans: str('<plans.json>', 'the candidate plans, in the format of config/plans.json (required)'),
      overrides: str('<file>', 'candidate overrides per organization and per key'),
    },
    example: 'keygate limits replay --access-log gateway.log --plans new-plans.json',
  }),
  'sessions create': spec({
    name: 'sessions create',
    synopsis: ['--user <id> [--ttl 24h]'],
    summary: "Creates a session of a user for the backend's /api-keys; its token is printed once.",
    options: {
      user: str('<id>', 'the user (required)'),
      ttl: str('<span>', '30m, 12h, 7d, at most 366d', { default: '24h' }),
    },
    example: 'keygate sessions create --user 10 --ttl 12h',
  }),
  'audit list': spec({
    name: 'audit list',
    synopsis: ['[filters] [--limit 100] [--before <id>]'],
    summary: 'A page of the audit trail, newest first (--json: JSON lines).',
    options: {
      ...AUDIT_FILTERS,
      limit: str('<n>', 'rows in the page, 1 to 1000 (default 100)'),
      before: str('<id>', 'rows older than this row (the next page)'),
    },
    example: 'keygate audit list --org 1 --action key. --since 2026-12-01 --limit 20',
  }),
  'audit export': spec({
    name: 'audit export',
    synopsis: ['[filters]'],
    summary: 'Every matching row of the audit trail, oldest first, as JSON lines.',
    options: AUDIT_FILTERS,
    example: 'keygate audit export --since 2026-01-01 > audit.jsonl',
  }),
  'audit verify': spec({
    name: 'audit verify',
    synopsis: [''],
    summary: "Checks the trail's hash chain; exit code 1 names the first row that does not follow.",
    options: {},
    example: 'keygate audit verify',
  }),
  'admin-tokens create': spec({
    name: 'admin-tokens create',
    synopsis: ['--name <name> --role read|write'],
    summary: 'Creates a token of the admin API; it is printed once.',
    options: { name: str('<name>', '1 to 100 characters (required)'), role: str('<role>', 'read or write (required)') },
    example: 'keygate admin-tokens create --name alice --role write',
  }),
  'admin-tokens list': spec({
    name: 'admin-tokens list',
    synopsis: ['[--all]'],
    summary: "Lists the admin API's tokens (never the tokens themselves).",
    options: { all: flag('revoked tokens too') },
    example: 'keygate admin-tokens list --all',
  }),
  'admin-tokens revoke': spec({
    name: 'admin-tokens revoke',
    synopsis: ['<tokenId>'],
    summary: 'Revokes an admin API token: refused from its next request.',
    positionals: ['tokenId'],
    options: {},
    example: 'keygate admin-tokens revoke 3',
  }),
  'usage key': spec({
    name: 'usage key',
    synopsis: ['<keyId> [--from <time>] [--to <time>] [--granularity minute|hour|day]'],
    summary:
      "A key's usage history: requests per bucket, admitted and refused by outcome (default the last 24 hours by hour, UTC).",
    positionals: ['keyId'],
    options: USAGE_RANGE,
    example: 'keygate usage key 1000 --from -7d --granularity day',
  }),
  'usage org': spec({
    name: 'usage org',
    synopsis: ['<orgId> [--from <time>] [--to <time>] [--granularity minute|hour|day]'],
    summary: "An organization's usage history, every key of it summed (default the last 24 hours by hour, UTC).",
    positionals: ['orgId'],
    options: USAGE_RANGE,
    example: 'keygate usage org 1 --from 2026-11-01 --to 2026-12-01 --granularity day --json',
  }),
  'usage export': spec({
    name: 'usage export',
    synopsis: ['--month YYYY-MM [--organization <id>] [--format csv|jsonl] [--out <file>]'],
    summary:
      "A month's usage per key for billing, every organization's or one's, as CSV or JSON lines (docs/usage.md, Export).",
    options: {
      month: str('YYYY-MM', 'the UTC month (required)'),
      organization: str('<id>', "only this organization's keys"),
      format: str('csv|jsonl', 'csv (the default) or jsonl'),
      out: str('<file>', 'write it to this file (whole, or not at all) instead of stdout'),
    },
    example: 'keygate usage export --month 2026-11 --format csv --out usage-2026-11.csv',
  }),
};

export type CommandName = keyof typeof COMMAND_SPECS;
