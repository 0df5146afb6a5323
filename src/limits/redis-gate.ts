// Re-export until the integrator rewrites the importers.
export * from './redis/gate.js';
