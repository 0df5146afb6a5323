// A key-management command in process, as src/cli.ts runs it (runAdminCommand with the settings of
// `migrate`), and what the entry's catch prints: `keygate: <message>` on stderr, exit code 2 for a
// ConfigError, 1 otherwise. Whatever the command writes itself is captured. The child-process cases of
// test/cli/keys.test.ts prove that wiring for the real program (test/helpers/cli-program.ts runCli).
import { vi } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { loadSettings } from '../../src/config/settings.js';
import { runAdminCommand } from '../../src/cli/program.js';
import type { CliRun } from '../helpers/cli-program.js';

export async function keygateInProcess(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    await runAdminCommand(loadSettings(env, 'migrate'), args);
    return { code: 0, stdout, stderr };
  } catch (error) {
    return {
      code: error instanceof ConfigError ? 2 : 1,
      stdout,
      stderr: stderr + `keygate: ${(error as Error).message}\n`,
    };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** An environment holding none of the machine's keygate settings. */
export const bareEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ...extra,
});
