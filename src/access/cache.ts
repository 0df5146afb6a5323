// The gateway's principal cache. A cached principal is used only while its organization's access
// version (read in the same round trip as the cooldown check) equals the version it was resolved at;
// every writer of access data bumps that version after committing, so a change applies to the very
// next request on every instance. PostgreSQL NOTIFY evicts as well, for changes made outside the
// backend (an operator's SQL), and an entry lives at most `ttlMs` as a last line of defence.
import crypto from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/types.js';
import type { Preflight, AccessVersions } from '../limits/types.js';
import { hashSecret } from './secrets.js';
import { organizationOfKey, resolvePrincipal, type Principal } from './principal.js';
import { StoreUnavailableError } from '../limits/resilient/index.js';

/** SHA-256 in base64: the one-shot `crypto.hash` where Node has it (20.12 and later), else a Hash object. */
const sha256: (s: string) => string =
  typeof crypto.hash === 'function'
    ? (s) => crypto.hash('sha256', s, 'base64')
    : (s) => crypto.createHash('sha256').update(s).digest('base64');

/** The database could not answer a lookup the cache could not serve on its own. */
export class AccessStoreUnavailableError extends Error {
  override name = 'AccessStoreUnavailableError';
}

interface Entry {
  principal: Principal;
  version: number;
}

export type Lookup =
  { kind: 'cooldown'; seconds: number } | { kind: 'invalid' } | { kind: 'ok'; principal: Principal; cached: boolean };

export interface PrincipalCacheOptions {
  db: Db;
  pepper: string;
  preflight: Preflight;
  versions: AccessVersions;
  max?: number;
  ttlMs?: number;
}

export class PrincipalCache {
  private entries: LRUCache<string, Entry>;
  /** cache key -> organization id: immutable facts, so kept without a version. */
  private orgOf: LRUCache<string, number>;
  hits = 0;
  misses = 0;
  invalidations = 0;

  constructor(private opts: PrincipalCacheOptions) {
    this.entries = new LRUCache({ max: opts.max ?? 50_000, ttl: opts.ttlMs ?? 5 * 60_000 });
    this.orgOf = new LRUCache({ max: opts.max ?? 50_000 });
  }

  /**
   * The cache's key for a secret: a plain SHA-256 (about 0.5 µs, a quarter of the database's keyed
   * HMAC, which is computed only on a miss). The secret itself is never kept.
   */
  key(secret: string): string {
    return sha256(secret);
  }

  /** The cached principal of a secret, without any I/O; its exactness is proven later (store gate). */
  peek(secret: string): { key: string; principal: Principal; version: number } | { key: string; principal: null } {
    const key = this.key(secret);
    const e = this.entries.get(key);
    return e ? { key, principal: e.principal, version: e.version } : { key, principal: null };
  }

  /** Forget one entry (its version turned out stale). */
  drop(key: string): void {
    this.entries.delete(key);
  }

  noteHit(): void {
    this.hits++;
  }

  /**
   * Steps 3 and 4: the IP's cooldown, then the key. One Redis round trip when the principal is cached
   * and current; on a miss or a stale entry the database is read after the version, so a change
   * committed meanwhile always leaves the cached copy behind a newer version.
   */
  async lookup(secret: string, keyType: string, ip: string, key?: string): Promise<Lookup> {
    const k = key ?? this.key(secret);
    const entry = this.entries.get(k);
    const orgHint = entry?.principal.organizationId ?? this.orgOf.get(k) ?? null;
    const pre = await this.opts.preflight(ip, orgHint);
    if (pre.cooldown > 0) return { kind: 'cooldown', seconds: pre.cooldown };
    if (entry && pre.version !== null && entry.version === pre.version) {
      this.hits++;
      return { kind: 'ok', principal: entry.principal, cached: true };
    }
    this.misses++;
    let version = pre.version;
    let p: Principal | null;
    const h = hashSecret(this.opts.pepper, secret);
    try {
      if (orgHint === null) {
        const org = await organizationOfKey(this.opts.db, h);
        if (org === null) return { kind: 'invalid' };
        this.orgOf.set(k, org);
        // Without a provable version (Redis degraded) the principal is used but not cached.
        version = await this.opts.versions.get(org).catch((err) => {
          if (err instanceof StoreUnavailableError) return null;
          throw err;
        });
      }
      p = await resolvePrincipal(this.opts.db, h, keyType);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      throw new AccessStoreUnavailableError((err as Error).message);
    }
    if (!p) {
      this.entries.delete(k);
      return { kind: 'invalid' };
    }
    if (version !== null) this.entries.set(k, { principal: p, version });
    return { kind: 'ok', principal: p, cached: false };
  }

  /** Drop every cached principal of an organization (on a database NOTIFY). */
  evictOrganization(orgId: number): void {
    for (const [k, e] of this.entries.entries()) {
      if (e.principal.organizationId === orgId) {
        this.entries.delete(k);
        this.invalidations++;
      }
    }
  }

  /** Forget every principal (after Redis or the database notification channel came back). */
  clear(): void {
    this.invalidations += this.entries.size;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
