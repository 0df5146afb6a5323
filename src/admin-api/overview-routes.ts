import type { AdminRoute } from './route-kit.js';

export const OVERVIEW_ROUTES: AdminRoute[] = [];
