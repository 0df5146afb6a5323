// Re-export until the integrator rewrites the importers.
export * from './resilient/index.js';
