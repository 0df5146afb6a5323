// The internal interface: what other domains use from it (their internal routes' guard).
export { requireInternal } from './auth.js';
