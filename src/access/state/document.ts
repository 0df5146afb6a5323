// A state document as text: YAML (the default) or JSON out, either in (YAML reads JSON too), and the
// schema's refusals as one line per mistake with the field's path as the file writes it
// (`organizations[1].keys[0].scopes[2]`), not zod's dotted one.
import { parseDocument, stringify } from 'yaml';
import type { z } from 'zod';
import { formatZodIssue } from '../../config/errors.js';
import { WORKSPACE_KEY_PROFILE, type KeyProfile } from '../key-types.js';
import { stateSchemaOf, type StateDocument } from './schema.js';

export type StateFormat = 'yaml' | 'json';

export function serializeState(doc: StateDocument, format: StateFormat): string {
  if (format === 'json') return JSON.stringify(doc, null, 2) + '\n';
  // No folding and no anchors: a line of the file is a field, and a diff of two exports shows fields.
  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** `organizations[1].keys[0]` of a path. */
export function pathText(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('');
}

function issueLines(issue: z.core.$ZodIssue, input: unknown): string[] {
  const where = pathText(issue.path);
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((k) => `${pathText([...issue.path, k])}: unknown field`);
  // The words of config/errors.ts (`must be an integer`, `is required`), after its dotted path.
  const text = formatZodIssue('', issue, input);
  const dotted = `${issue.path.map(String).join('.') || '(root)'}: `;
  return [`${where || '(document)'}: ${text.slice(text.indexOf(dotted) + dotted.length)}`];
}

export type Parsed = { ok: true; doc: StateDocument } | { ok: false; mistakes: string[] };

/**
 * The document of a file's text, or its mistakes, each `path: what is wrong`. Its keys are of the
 * profile's key types (absent: the workspace API's), a key of another type a mistake naming them.
 */
export function parseState(text: string, profile: KeyProfile = WORKSPACE_KEY_PROFILE): Parsed {
  const yaml = parseDocument(text, { uniqueKeys: true });
  if (yaml.errors.length)
    return {
      ok: false,
      mistakes: yaml.errors.map((e) => {
        const pos = e.linePos?.[0];
        const what = e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
        return `${pos ? `line ${pos.line}, column ${pos.col}: ` : ''}${what}`;
      }),
    };
  const raw: unknown = yaml.toJS();
  const r = stateSchemaOf(profile).safeParse(raw);
  if (!r.success) return { ok: false, mistakes: r.error.issues.flatMap((i) => issueLines(i, raw)) };
  return { ok: true, doc: r.data };
}
