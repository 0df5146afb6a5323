// Re-export until the integrator rewrites the importers.
export * from './ops-server.js';
