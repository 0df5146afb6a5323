import pino, { type Logger } from 'pino';

/**
 * pino JSON lines. Request logs are allow-listed by the callers (method, route, status, request id,
 * duration); `redact` is the second line of defence for anything that slips through.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { svc: 'keygate' },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers.cookie',
          'headers.authorization',
          'headers["x-api-key"]',
          'headers.cookie',
          'authorization',
          'secret',
          '*.secret',
          'token',
          '*.token',
          'gatewaySecret',
          'internalToken',
          'GATEWAY_SECRET',
          'INTERNAL_TOKEN',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
