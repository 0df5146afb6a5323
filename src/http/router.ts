// The route table the backend and the admin API both serve from: routes registered as `METHOD /a/{id}`,
// matched by find-my-way, each parameter held to the pattern its interface gives, and a miss told
// apart as "no such path" (404) or "not with this method" (405, with the methods the path has). What
// an interface answers for each is its own: this table only says which case it is.
import FindMyWay from 'find-my-way';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export const METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export type RouteMatch<T> =
  | { kind: 'found'; route: T; params: Record<string, string> }
  | { kind: 'not_found' }
  | { kind: 'method_not_allowed'; allowed: Method[] };

interface Stored<T> {
  route: T;
  /** Registration order: the allowed methods of a 405 are listed in it. */
  order: number;
  method: Method;
}

/** `{name}` or `{name:kind}` in a registered path. */
const PLACEHOLDER = /\{([A-Za-z]+)(?::([a-z]+))?\}/g;

export class RouteTable<T> {
  // Paths arrive as the interface checked or parsed them: no trailing or doubled slash is forgiven,
  // and case matters.
  private matcher = FindMyWay({ ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, caseSensitive: true });
  private entries = new Map<string, Stored<T>>();

  /**
   * `paramSource` gives the pattern (a regular expression's source, anchored) a parameter must match:
   * a segment that fits none names no route.
   */
  constructor(private paramSource: (kind: string | undefined) => string) {}

  /** Registers `route`; false when `METHOD path` is registered already (the caller says how that fails). */
  add(method: Method, path: string, route: T): boolean {
    const key = `${method} ${path}`;
    if (this.entries.has(key)) return false;
    const stored: Stored<T> = { route, order: this.entries.size, method };
    const syntax = path.replace(
      PLACEHOLDER,
      (_whole, name: string, kind?: string) => `:${name}(${this.paramSource(kind)})`,
    );
    this.matcher.on(method, syntax, () => undefined, stored);
    this.entries.set(key, stored);
    return true;
  }

  /** The route of a path (no query string) and its parameters; HEAD is answered by the GET route. */
  find(method: string, path: string): { route: T; params: Record<string, string> } | null {
    const found = this.lookup(method === 'HEAD' ? 'GET' : method, path);
    return found && { route: found.stored.route, params: found.params };
  }

  /** `find`, or which miss it is: a path some method has is a 405 with those methods, else a 404. */
  match(method: string, path: string): RouteMatch<T> {
    const found = this.find(method, path);
    if (found) return { kind: 'found', ...found };
    const allowed = METHODS.flatMap((m) => this.lookup(m, path)?.stored ?? [])
      .sort((a, b) => a.order - b.order)
      .map((s) => s.method);
    return allowed.length ? { kind: 'method_not_allowed', allowed } : { kind: 'not_found' };
  }

  /** Every registered `METHOD path`, in registration order. */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  private lookup(method: string, path: string): { stored: Stored<T>; params: Record<string, string> } | null {
    // No segment of a route holds `%`, `;`, `?` or `#`: such a path names nothing here (find-my-way
    // would decode or cut it, matching a path the caller did not send).
    if (!path.startsWith('/') || /[%;?#]/.test(path)) return null;
    if (!(METHODS as readonly string[]).includes(method)) return null;
    const found = this.matcher.find(method as Method, path);
    if (!found) return null;
    return { stored: found.store as Stored<T>, params: { ...(found.params as Record<string, string>) } };
  }
}
