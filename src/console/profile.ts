/// <reference lib="dom" />
// The profile the admin API serves (GET /api/profile): its kind and the key types keys are made of. An
// admin API without that route is the workspace API's, and its three types are assumed.
import { useApi, type Json } from './api.js';

export interface KeyTypeInfo {
  name: string;
  prefix: string;
  /** What a key of the type is made for: its workspace, its user, or its organization (a consumer). */
  binding: 'workspace' | 'user' | 'organization';
  scopes: boolean;
}

export interface ProfileInfo {
  name: string;
  kind: 'workspace' | 'rest';
  keyTypes: KeyTypeInfo[];
}

const WORKSPACE: ProfileInfo = {
  name: 'workspace',
  kind: 'workspace',
  keyTypes: [
    { name: 'workspace', prefix: 'svc_ws_', binding: 'workspace', scopes: true },
    { name: 'personal', prefix: 'svc_pk_', binding: 'user', scopes: true },
    { name: 'partner', prefix: 'svc_v1_', binding: 'organization', scopes: false },
  ],
};

export function useProfile(): ProfileInfo {
  const { data } = useApi('/api/profile');
  return (data as Json as ProfileInfo | null) ?? WORKSPACE;
}

/** How a key type is named in a list: the partner interface's with its path, any other by its name. */
export function typeLabel(t: Pick<KeyTypeInfo, 'name'>): string {
  return t.name === 'partner' ? 'partner (/v1)' : t.name;
}

/** What the profile calls an organization: a rest profile's are its consumers. */
export function orgWord(p: ProfileInfo): 'consumer' | 'organization' {
  return p.kind === 'rest' ? 'consumer' : 'organization';
}
