// The error table (src/http/errors.ts) equals the codes the documents list, both ways: every code
// docs/v2-interface.md, docs/v1-interface.md and docs/decisions.md give a status is in the table with
// that status and envelope, and every code of the table is documented or marked as keygate's own. The
// table's own page, docs/errors.md, is generated from it and must be current.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  ENVELOPE_A,
  ENVELOPE_B,
  V1_ERRORS,
  isCodeOf,
  type ErrorCode,
  type ErrorEnvelope,
} from '../../src/http/errors.js';
import { renderErrorTable } from '../../scripts/error-table.js';

const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

interface DocumentedCode {
  code: string;
  status: number;
  envelope: ErrorEnvelope;
  where: string;
}

const envelopeOfCode = (code: string, snakeCaseEnvelope: ErrorEnvelope): ErrorEnvelope =>
  /^\d{6}$/.test(code) ? 'A' : snakeCaseEnvelope;

/** The text of `## heading` up to the next `## `. */
function section(markdown: string, heading: RegExp): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => heading.test(line));
  if (start === -1) throw new Error(`no section ${heading}`);
  const end = lines.findIndex((line, index) => index > start && /^## /.test(line));
  return lines.slice(start, end === -1 ? undefined : end).join('\n');
}

const cells = (row: string) =>
  row
    .split('|')
    .slice(1, -1)
    .map((cell) => cell.trim());
const tableRows = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .map(cells);

/** docs/v2-interface.md, Errors: `| code | HTTP | ... |` rows; a row may list several codes and statuses in order. */
function v2SpecCodes(): DocumentedCode[] {
  const found: DocumentedCode[] = [];
  for (const [codeCell, statusCell] of tableRows(section(doc('v2-interface.md'), /^## Errors/))) {
    const codes = codeCell.split(',').map((code) => code.trim().replace(/`/g, ''));
    const statuses = [...statusCell.matchAll(/\b[1-5]\d\d\b/g)].map((match) => Number(match[0]));
    if (!codes.every((code) => /^(\d{6}|[a-z_]+)$/.test(code)) || statuses.length === 0) continue; // the header row
    expect(statuses.length, `v2-interface.md row ${codeCell}`).toBe(codes.length);
    codes.forEach((code, index) =>
      found.push({
        code,
        status: statuses[index],
        envelope: envelopeOfCode(code, 'B'),
        where: 'v2-interface.md, Errors',
      }),
    );
  }
  return found;
}

/** docs/v1-interface.md, Errors: `| Status | error_code | Condition |` rows; "not given" names no code. */
function v1SpecCodes(): DocumentedCode[] {
  const found: DocumentedCode[] = [];
  for (const [statusCell, codeCell] of tableRows(section(doc('v1-interface.md'), /^## Errors/))) {
    if (!/^\d{3}$/.test(statusCell) || !/^[a-z_]+$/.test(codeCell)) continue;
    found.push({ code: codeCell, status: Number(statusCell), envelope: 'v1', where: 'v1-interface.md, Errors' });
  }
  return found;
}

/**
 * docs/decisions.md sections 3 to 7: a status followed by its code(s) in backticks, e.g. "401 `150001`",
 * "404 Envelope B `not_found`", "403 `subscription_paused` / `api_access_disabled`", or a v1 body
 * "a 429 is `{"error_code":"rate_limit_exceeded",...}`". Section 4 is the /v1 interface.
 */
function contractCodes(): DocumentedCode[] {
  const contract = doc('decisions.md');
  const found: DocumentedCode[] = [];
  for (const number of [3, 4, 5, 6, 7]) {
    const text = section(contract, new RegExp(`^## ${number}\\. `));
    const snakeCaseEnvelope: ErrorEnvelope = number === 4 ? 'v1' : 'B';
    const mention = /\b([45]\d\d)\b(?: is)?(?: Envelope [AB])?\s+`([^`]+)`(?:\s*\/\s*`([^`]+)`)?/g;
    for (const match of text.matchAll(mention)) {
      for (const literal of [match[2], match[3]]) {
        if (literal === undefined) continue;
        const code = /"error_code":"([a-z_]+)"/.exec(literal)?.[1] ?? literal;
        if (!/^(\d{6}|[a-z_]+)$/.test(code))
          throw new Error(`decisions.md section ${number}: cannot read a code in ${match[0]}`);
        // "401 Envelope B `unauthenticated`" is Envelope B whatever the section.
        const envelope = /Envelope B/.test(match[0]) ? 'B' : envelopeOfCode(code, snakeCaseEnvelope);
        found.push({ code, status: Number(match[1]), envelope, where: `decisions.md section ${number}` });
      }
    }
  }
  return found;
}

const documented = [...v2SpecCodes(), ...v1SpecCodes(), ...contractCodes()];

describe('the error table and the documents', () => {
  it('reads the codes of every document', () => {
    // The parsers found what the documents hold (a format change would otherwise pass silently).
    expect(v2SpecCodes().filter((entry) => entry.envelope === 'A')).toHaveLength(12);
    expect(v2SpecCodes().map((entry) => entry.code)).toEqual(
      expect.arrayContaining(['quota_exceeds_org_limit', 'conflict', 'forbidden', 'unprocessable_entity']),
    );
    expect(
      v1SpecCodes()
        .map((entry) => entry.code)
        .sort(),
    ).toEqual(['not_found', 'not_implemented']);
    expect(contractCodes().map((entry) => entry.code)).toEqual(
      expect.arrayContaining([
        'invalid_request',
        'payload_too_large',
        '150006',
        'not_found',
        'unauthorized',
        'too_many_failed_attempts',
        'subscription_paused',
        'api_access_disabled',
        'rate_limit_exceeded',
        'unauthenticated',
        'bad_gateway',
        'gateway_timeout',
      ]),
    );
  });

  it.each(documented.map((entry) => [`${entry.code} (${entry.where})`, entry] as const))(
    '%s is in the table with its status and envelope',
    (_name, entry) => {
      expect(Object.hasOwn(ERROR_CODES, entry.code), `${entry.code} missing from ERROR_CODES`).toBe(true);
      const spec = ERROR_CODES[entry.code as ErrorCode];
      expect(spec.status).toBe(entry.status);
      expect(spec.envelopes).toContain(entry.envelope);
    },
  );

  it.each(Object.keys(ERROR_CODES))("%s is documented in each of its envelopes, or marked as keygate's own", (code) => {
    const spec = ERROR_CODES[code as ErrorCode];
    const own = 'own' in spec && spec.own === true;
    const documentedEnvelopes = new Set(
      documented.filter((entry) => entry.code === code).map((entry) => entry.envelope),
    );
    const undocumented = spec.envelopes.filter((envelope) => !documentedEnvelopes.has(envelope));
    // A code documented for one interface may also be written in the other: the generic ones are
    // shared by Envelope B and /v1 (the gateway writes a /v2 refusal on /v1 under the same name).
    const sharedGeneric = undocumented.every((envelope) => envelope !== 'A' && documentedEnvelopes.size > 0);
    expect(
      own || undocumented.length === 0 || sharedGeneric,
      `${code}: undocumented in ${undocumented.join(', ')} and not marked own`,
    ).toBe(true);
    expect(spec.message.length).toBeGreaterThan(0);
  });

  it('marks as own only codes no document lists', () => {
    const documentedCodes = new Set(documented.map((entry) => entry.code));
    const markedButDocumented = Object.entries(ERROR_CODES)
      .filter(([code, spec]) => 'own' in spec && documentedCodes.has(code))
      .map(([code]) => code);
    expect(markedButDocumented).toEqual([]);
  });

  it('is the table docs/errors.md shows (regenerate: npx tsx scripts/error-table.ts --write)', () => {
    expect(doc('errors.md')).toBe(renderErrorTable());
  });
});

describe('the views of the error table', () => {
  it("gives the gateway each envelope's codes of the same table", () => {
    for (const [code, spec] of Object.entries(ERROR_CODES)) {
      const envelopes = spec.envelopes as readonly ErrorEnvelope[];
      expect(isCodeOf('A', code)).toBe(envelopes.includes('A'));
      if (envelopes.includes('A'))
        expect(ENVELOPE_A[code as keyof typeof ENVELOPE_A]).toEqual({ status: spec.status, message: spec.message });
      if (envelopes.includes('B')) expect(ENVELOPE_B[code as keyof typeof ENVELOPE_B]).toBe(spec.status);
      if (envelopes.includes('v1')) expect(V1_ERRORS[code as keyof typeof V1_ERRORS]).toBe(spec.status);
    }
    expect(Object.keys(ENVELOPE_A).length + Object.keys(ENVELOPE_B).length + Object.keys(V1_ERRORS).length).toBe(
      Object.values(ERROR_CODES).reduce((total, spec) => total + spec.envelopes.length, 0),
    );
  });
});
