import type { AdminRoute } from './route-kit.js';

export const WEBHOOK_ROUTES: AdminRoute[] = [];
