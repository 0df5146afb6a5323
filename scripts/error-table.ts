// docs/errors.md, generated from the one error table (src/http/errors.ts) so that the page cannot drift
// from what the programs answer; test/http/error-table.test.ts fails when the page is stale.
//
//   npx tsx scripts/error-table.ts           print the page
//   npx tsx scripts/error-table.ts --write   write docs/errors.md
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, type ErrorEnvelope } from '../src/http/errors.js';

const ENVELOPE_NAMES: Record<ErrorEnvelope, string> = {
  A: 'A (`errorCode`)',
  B: 'B (`error.code`)',
  v1: '/v1 (`error_code`)',
};

export function renderErrorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, spec]) => {
    const own = 'own' in spec && spec.own === true ? 'keygate' : 'documented';
    const envelopes = (spec.envelopes as readonly ErrorEnvelope[])
      .map((envelope) => ENVELOPE_NAMES[envelope])
      .join(', ');
    return `| \`${code}\` | ${spec.status} | ${envelopes} | ${own} | ${spec.message.replace(/\|/g, '\\|')} |`;
  });
  return [
    '# Error codes',
    '',
    '<!-- Generated from src/http/errors.ts by `npx tsx scripts/error-table.ts --write`; do not edit by hand. -->',
    '',
    'Every code either interface answers with, its HTTP status, the envelopes it is written in and its default',
    'message. "documented" codes are listed by [v2-interface.md](v2-interface.md),',
    '[v1-interface.md](v1-interface.md) or [decisions.md](decisions.md); "keygate" codes are the',
    "project's own, for cases those pages leave open (src/http/errors.ts says why each exists).",
    '',
    '| code | HTTP | envelopes | source | default message |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const page = renderErrorTable();
  if (process.argv.includes('--write')) writeFileSync(new URL('../docs/errors.md', import.meta.url), page);
  else process.stdout.write(page);
}
