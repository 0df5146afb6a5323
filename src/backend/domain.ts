// What a resource domain of the backend is: its routes, its background jobs, the schemas of its
// operations and its sections of the seed file, exported together from the domain's index.ts and
// listed once, in domains.ts. Types only:
// the registries (jobs.ts, schemas.ts) and every domain import this module, never each other.
import type { z } from 'zod';
import type { SeedSections } from '../access/seed.js';
import type { Router } from './router.js';
import type { BackendServices } from './services.js';

export interface Job {
  name: string;
  intervalMs: number;
  run(): Promise<void>;
}

export interface OperationSchemas {
  /** Path parameters beyond what the path pattern says (ids are canonical decimals, docs/decisions.md). */
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** The `data` of a success (Envelope A or B), or the whole /v1 body. Absent: an open object. */
  response?: z.ZodType;
  /** Success statuses, when not just 200. */
  status?: number[];
  /** The success envelope, when not the interface's own (the tag list answers in Envelope A). */
  envelope?: 'A' | 'csv';
  /** Page-style lists carry Envelope B's `pagination`. */
  paginated?: boolean;
}

/** Operation schemas by `METHOD path`, as config/routes.json writes it. */
export type SchemaRegistry = Record<string, OperationSchemas>;

export interface BackendDomain {
  name: string;
  /** Adds the domain's /v1 and /v2 routes; runs once at start (a bad data file fails the start here). */
  register(router: Router, svc: BackendServices): void;
  /** The domain's background jobs, if it has any. */
  jobs?: (svc: BackendServices) => Job[];
  /** The request and response schemas of the domain's operations (what the OpenAPI document is built from). */
  schemas?: SchemaRegistry;
  /** The seed file's sections of the domain's tables, written in the order of DOMAINS (src/backend/seed.ts). */
  seed?: SeedSections;
}
