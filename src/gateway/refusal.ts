// What a refusal is, for every part of the gateway that decides one (the guards, the decisions, a body's
// reading) and for the module that answers it (./answers.ts). Types only, and nothing of the gateway
// imported: every other gateway module can import it without making a circle.
import type { CodeA, CodeB } from '../http/errors.js';

/** A code of either /v2 table; on /v1 it is written with the v1 code of the same meaning. */
export type GatewayCode = CodeA | CodeB;

export interface Refusal {
  code: GatewayCode;
  message?: string;
  retryAfter?: number;
  details?: Record<string, unknown>;
  /** A limit's refusal: the layer that refused (the usage history counts each apart: src/access/usage/). */
  layer?: LimitLayer;
}

/** The limit layers a refusal of code 150005 (rate_limit_exceeded on /v1) comes from. */
export type LimitLayer = 'key' | 'address' | 'month';

/** What reading a body, or finding room for it, refuses with (./body-read.ts, ./body-budget.ts). */
export type BodyRefusal =
  | { code: 'payload_too_large'; message: string }
  | { code: 'request_timeout'; message: string }
  | { code: 'service_unavailable'; message: string; retryAfter: number };
