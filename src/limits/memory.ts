// Re-export until the integrator rewrites the importers.
export * from './memory/index.js';
