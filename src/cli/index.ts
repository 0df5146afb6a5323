// Re-export until the integrator rewrites the importers.
export * from './program.js';
