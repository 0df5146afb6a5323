import type { AdminRoute } from './route-kit.js';

export const USAGE_ROUTES: AdminRoute[] = [];
