// The verify API (POST /verify, docs/forward-auth.md): for a caller that is not a proxy, e.g. a queue
// worker spending a customer's quota before it does the work. It names a key and a request; keygate
// decides that request as its proxy would, spending once, and says what it decided in JSON.
import { requestInterface } from '../gateway/interfaces.js';
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { GatewayDeps } from '../gateway/context.js';
import type { ResponseFields } from '../gateway/fields.js';
import type { Identity } from '../http/identity.js';
import { clientIp, normalizeIp } from '../http/client-ip.js';
import { jsonOf, readBody } from '../http/body.js';
import type { CodeB } from '../http/errors.js';
import { identityOf } from '../gateway/identity-headers.js';
import { METHODS, ORIGIN_FORM } from './describe.js';
import type { Decider } from './decide.js';

/** A verify request is a key and a request line: a few hundred bytes. */
export const VERIFY_BODY_MAX = 16 * 1024;
const KEY_MAX = 1024;

export interface VerifyAnswer {
  allowed: boolean;
  status: number;
  code: string | null;
  message: string | null;
  requestId: string;
  identity: Identity | null;
  limits: Record<string, LimitView>;
  headers: Record<string, string>;
}

interface LimitView {
  limit: number;
  used: number;
  remaining: number;
  /** When the layer's window ends, unix seconds. */
  reset: number;
}

export type VerifyOutcome =
  { body: VerifyAnswer } | { code: CodeB; message: string; details?: Record<string, unknown> };

export async function verifyApi(deps: GatewayDeps, decide: Decider, req: IncomingMessage): Promise<VerifyOutcome> {
  const raw = await readBody(req, VERIFY_BODY_MAX);
  if (raw === 'too_large') return { code: 'payload_too_large', message: `The body exceeds ${VERIFY_BODY_MAX} bytes.` };
  const parsed = parseVerify(jsonOf(raw)?.value);
  if ('field' in parsed) return { code: 'invalid_request', message: parsed.message, details: { field: parsed.field } };
  const { key, method, path } = parsed;
  // The key is presented as the path's interface reads it (docs/profiles.md, `key.header`).
  const { header, bearer } = requestInterface(deps.profile(), path).iface.spec.key;
  const ip = parsed.ip ?? clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trusted);
  const d = await decide({
    method,
    target: path,
    headers: { [header]: bearer ? `Bearer ${key}` : key },
    ip,
  });
  const fields = d.kind === 'allow' ? d.clientFields : d.fields;
  const said = d.kind === 'answer' ? whatItSays(d.body) : { code: null, message: null };
  return {
    body: {
      allowed: d.kind === 'allow',
      status: d.kind === 'allow' ? 200 : d.status,
      code: said.code,
      message: said.message,
      requestId: d.requestId,
      identity: d.kind === 'allow' ? identityOf(d.principal, d.grant) : null,
      limits: limitsOf(fields, deps.clock.now()),
      headers: clientHeaders(fields),
    },
  };
}

type Parsed = { key: string; method: string; path: string; ip?: string } | { field: string; message: string };

/** The request named by the body; a refusal names the field (never its value: `key` is a secret). */
function parseVerify(v: unknown): Parsed {
  const bad = (field: string, message: string) => ({ field, message });
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return bad('body', 'The body must be a JSON object: { "key", "method", "path", "ip" }.');
  const o = v as Record<string, unknown>;
  for (const name in o)
    if (!['key', 'method', 'path', 'ip'].includes(name)) return bad(name, `Unknown field "${name}".`);
  const { key, method = 'GET', path, ip } = o;
  if (typeof key !== 'string' || key === '' || key.length > KEY_MAX || /[^\x21-\x7e]/.test(key))
    return bad('key', `"key" must be the API key, printable ASCII, at most ${KEY_MAX} characters.`);
  if (typeof method !== 'string' || !METHODS.has(method))
    return bad('method', '"method" must be an HTTP method in upper case (default GET).');
  if (typeof path !== 'string' || !ORIGIN_FORM.test(path))
    return bad('path', '"path" must be a request target: a path beginning with "/", and its query.');
  if (ip === undefined) return { key, method, path };
  const addr = typeof ip === 'string' ? normalizeIp(ip) : '';
  if (isIP(addr) === 0) return bad('ip', '"ip" must be an IPv4 or IPv6 address.');
  return { key, method, path, ip: addr };
}

/** The error code and message of an answer, in whichever envelope the interface wrote it. */
function whatItSays(body: Buffer): { code: string | null; message: string | null } {
  const v = jsonOf(body)?.value;
  const str = (x: unknown) => (typeof x === 'string' ? x : null);
  const obj = (x: unknown) => (typeof x === 'object' && x !== null ? (x as Record<string, unknown>) : null);
  const o = obj(v);
  if (!o) return { code: null, message: null };
  // Envelope B, { error: { code, message } }; Envelope A, { errorCode, errorMessage }; /v1, { error_code, message };
  // problem details (RFC 9457), { code, detail }.
  const b = obj(o.error);
  if (b) return { code: str(b.code), message: str(b.message) };
  if ('errorCode' in o) return { code: str(o.errorCode), message: str(o.errorMessage) };
  if ('error_code' in o) return { code: str(o.error_code), message: str(o.message) };
  if ('type' in o && 'status' in o) return { code: str(o.code), message: str(o.detail) };
  return { code: null, message: null };
}

/**
 * Each layer of the answer's rate-limit fields, from the draft's RateLimit-Policy (`"<name>";q=<limit>`)
 * and RateLimit (`"<name>";r=<remaining>;t=<seconds to reset>`): the key's bucket (`read`, `write`,
 * `bulk`, or `partner` on /v1), `ip`, and `month` for an organization with a quota.
 */
function limitsOf(fields: ResponseFields, nowMs: number): Record<string, LimitView> {
  const policy = fieldValue(fields, 'ratelimit-policy');
  const current = fieldValue(fields, 'ratelimit');
  const out: Record<string, LimitView> = {};
  if (policy === undefined || current === undefined) return out;
  const params = (item: string) => {
    const m = /^\s*"([^"]+)"((?:;[a-z]+=\d+)*)\s*$/.exec(item);
    if (!m) return null;
    const p: Record<string, number> = {};
    for (const kv of m[2].split(';').slice(1)) p[kv.split('=')[0]] = Number(kv.split('=')[1]);
    return { name: m[1], p };
  };
  const limits = new Map<string, number>();
  for (const item of policy.split(',')) {
    const x = params(item);
    if (x && x.p.q !== undefined) limits.set(x.name, x.p.q);
  }
  for (const item of current.split(',')) {
    const x = params(item);
    const limit = x && limits.get(x.name);
    if (!x || limit === undefined || limit === null || x.p.r === undefined || x.p.t === undefined) continue;
    out[x.name] = { limit, used: limit - x.p.r, remaining: x.p.r, reset: Math.floor(nowMs / 1000) + x.p.t };
  }
  return out;
}

function fieldValue(fields: ResponseFields, name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (String(fields[i]).toLowerCase() === name) return String(fields[i + 1]);
  return undefined;
}

/** The client's answer fields as an object (names in lower case), the body's framing left out. */
function clientHeaders(fields: ResponseFields): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) {
    const name = String(fields[i]).toLowerCase();
    if (name === 'content-length' || name === 'content-type') continue;
    out[name] = String(fields[i + 1]);
  }
  return out;
}
