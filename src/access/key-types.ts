// The key types a service context makes keys of: its profile's (docs/profiles.md, `key.types`), each with
// the model of its interface, which says what a key of it is bound to. The workspace API's three keep
// their rules (a workspace key: its workspace and role; a personal key: its user; a partner key: its
// organization, no scopes); a key of a consumer interface belongs to an organization (the consumer) and
// holds scopes among the profile's.
import type { InterfaceModel, KeyTypeDef, Profile } from '../config/profile/types.js';
import { WORKSPACE_INTERFACES } from '../config/profile/workspace.js';

/** What the service layer reads of a profile: its name and kind for the refusals, its interfaces' key types. */
export type KeyProfile = Pick<Profile, 'name' | 'kind' | 'interfaces'>;

/** The workspace API's own, when a context names no profile. */
export const WORKSPACE_KEY_PROFILE: KeyProfile = {
  name: 'workspace',
  kind: 'workspace',
  interfaces: [...WORKSPACE_INTERFACES],
};

export interface KeyTypeRule extends KeyTypeDef {
  model: InterfaceModel;
}

/** A key type's name as stored (migration 120_profile_keys.sql). */
export const KEY_TYPE_NAME = /^[a-z][a-z0-9_]{0,31}$/;

/** Every key type of the profile's interfaces, in their order. */
export function keyTypesOf(profile: KeyProfile): KeyTypeRule[] {
  return profile.interfaces.flatMap((i) => i.keyTypes.map((t) => ({ name: t.name, prefix: t.prefix, model: i.model })));
}

/** The rule of a key type of the profile, or undefined. */
export function keyTypeRule(profile: KeyProfile, name: string): KeyTypeRule | undefined {
  return keyTypesOf(profile).find((t) => t.name === name);
}

/**
 * What a key of the type is made for: a workspace (the workspace API's workspace keys), a user (its
 * personal keys), or an organization (its partner keys; a rest profile's consumer).
 */
export function bindingOf(t: KeyTypeRule): 'workspace' | 'user' | 'organization' {
  if (t.model !== 'workspace-v2') return 'organization';
  return t.name === 'workspace' ? 'workspace' : 'user';
}

/** Whether its keys hold scopes: every type but the partner interface's (/v1: one layer per key, no scopes). */
export const holdsScopes = (t: KeyTypeRule): boolean => t.model !== 'workspace-v1';
