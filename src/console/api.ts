/// <reference lib="dom" />
// The admin API as the console's pages read it: the signed-in token, one fetch with the admin API's
// errors, the hash route and a hook that loads (and reloads) an answer.
import { useCallback, useEffect, useState } from 'preact/hooks';

// The admin API's answers, read by field where they are shown (their shapes are in config/openapi/admin.json).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;
export const TOKEN_KEY = 'keygate.adminToken';

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let signOutHook: () => void = () => {};

/** What an answer 401 does: the shell signs out (the token was revoked or is wrong). */
export function onUnauthorized(signOut: () => void): void {
  signOutHook = signOut;
}

export async function api(path: string, init: { method?: string; body?: unknown } = {}): Promise<Json> {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? '';
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    cache: 'no-store',
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    if (res.status === 401) signOutHook();
    throw new ApiError(res.status, data?.error?.code ?? 'error', data?.error?.message ?? `HTTP ${res.status}`);
  }
  return data;
}

export function useRoute(): string {
  const [hash, setHash] = useState(location.hash || '#/');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.slice(1);
}

/** Load `path` (again whenever `deps` change or `reload` is called); every `everyMs` when given. */
export function useApi(path: string | null, deps: unknown[] = [], everyMs?: number) {
  const [state, setState] = useState<{ data: Json; error: string | null; loading: boolean }>({
    data: null,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!path) return;
    let live = true;
    api(path)
      .then((data) => live && setState({ data, error: null, loading: false }))
      .catch((err: Error) => live && setState((s) => ({ data: s.data, error: err.message, loading: false })));
    const timer = everyMs ? setTimeout(() => setTick((t) => t + 1), everyMs) : undefined;
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [path, tick, ...deps]);
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) };
}
