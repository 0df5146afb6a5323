// The answer nginx cannot pass through auth_request (it takes only 2xx, 401 and 403 from it), carried in
// one signed field, X-Keygate-Answer, to `/answer`, which renders it (docs/forward-auth.md, "nginx"):
//   token = base64url(JSON { status, fields, body: base64 }) "." hex HMAC-SHA256(GATEWAY_SECRET, payload)
// The payload is the answer the client gets anyway; the HMAC keeps anyone who can reach /answer from
// making keygate speak an answer it never gave. The payload holds no newline, so its MAC can never equal
// an identity signature's (whose signed string always does).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ResponseFields } from '../gateway/fields.js';

export interface RenderedAnswer {
  status: number;
  fields: string[];
  body: Buffer;
}

export function answerToken(secret: string, a: { status: number; fields: ResponseFields; body: Buffer }): string {
  const payload = Buffer.from(
    JSON.stringify({ status: a.status, fields: a.fields.map(String), body: a.body.toString('base64') }),
  ).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

/** The answer of a token keygate signed, or null for any token it did not (or that does not parse). */
export function readAnswerToken(secret: string, token: string | string[] | undefined): RenderedAnswer | null {
  if (typeof token !== 'string') return null;
  const dot = token.indexOf('.');
  if (dot <= 0) return null;
  const payload = token.slice(0, dot);
  const given = token.slice(dot + 1);
  if (!/^[0-9a-f]{64}$/.test(given) || !/^[A-Za-z0-9_-]+$/.test(payload)) return null;
  if (!timingSafeEqual(Buffer.from(mac(secret, payload), 'hex'), Buffer.from(given, 'hex'))) return null;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const o = v as { status?: unknown; fields?: unknown; body?: unknown } | null;
  if (
    typeof o !== 'object' ||
    o === null ||
    !Number.isInteger(o.status) ||
    (o.status as number) < 200 ||
    (o.status as number) > 599 ||
    !Array.isArray(o.fields) ||
    o.fields.length % 2 !== 0 ||
    !o.fields.every((f) => typeof f === 'string') ||
    typeof o.body !== 'string'
  )
    return null;
  return { status: o.status as number, fields: o.fields as string[], body: Buffer.from(o.body, 'base64') };
}

const mac = (secret: string, payload: string) => createHmac('sha256', secret).update(payload).digest('hex');
