import type { Router } from '../router.js';
import type { BackendServices } from '../services.js';

export function register(_router: Router, _svc: BackendServices): void {}
