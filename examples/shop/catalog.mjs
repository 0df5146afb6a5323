// The shop's catalog service: products in memory, read-only. Like the orders service it sees the paths
// without /api and echoes the identity keygate sent as `calledBy`.
import http from 'node:http';
import { forwardedOnly, reply } from './identity.mjs';

const PRODUCTS = [
  { sku: 'mug-01', name: 'Mug', priceCents: 1200 },
  { sku: 'tee-02', name: 'T-shirt', priceCents: 2500 },
  { sku: 'cap-03', name: 'Cap', priceCents: 1800 },
];

export function catalogServer() {
  return http.createServer(
    forwardedOnly(async (req, res, { path, caller }) => {
      if (req.method !== 'GET') return reply(res, 404, { error: 'not_found', calledBy: caller });
      if (path === '/products') return reply(res, 200, { data: PRODUCTS, calledBy: caller });
      const one = /^\/products\/([A-Za-z0-9_-]+)$/.exec(path);
      const product = one && PRODUCTS.find((p) => p.sku === one[1]);
      if (product) return reply(res, 200, { data: product, calledBy: caller });
      reply(res, 404, { error: 'not_found', calledBy: caller });
    }),
  );
}
