// The key-management commands' names, apart from their code: the program entry (src/cli.ts) dispatches on
// them without loading the commands, which bring the service layer and parts of the backend a gateway
// process never uses (about 8 MB of its resident memory).
export const ADMIN_COMMANDS = ['keys', 'orgs', 'sessions', 'audit', 'admin-tokens', 'limits'] as const;
