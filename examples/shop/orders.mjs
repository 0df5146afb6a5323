// The shop's orders service: a plain node:http server keeping each consumer's orders in memory. keygate
// fronts it (examples/shop/profile.yaml): it has already checked the key, its scope and every limit, and
// strips the /api prefix, so this service sees /orders and the caller's identity. Each answer echoes
// that identity as `calledBy`, to show what the service is told.
import http from 'node:http';
import { forwardedOnly, reply } from './identity.mjs';

export function ordersServer() {
  const byConsumer = new Map(); // consumer id -> [{ id, sku, quantity, status, createdByKey }]
  let nextId = 1;
  const ordersOf = (consumer) => {
    let list = byConsumer.get(consumer);
    if (!list) byConsumer.set(consumer, (list = []));
    return list;
  };
  const place = (caller, o) => {
    const order = {
      id: nextId++,
      sku: String(o.sku),
      quantity: o.quantity ?? 1,
      status: 'placed',
      createdByKey: caller.keyId,
    };
    ordersOf(caller.consumer).push(order);
    return order;
  };
  const valid = (o) => o && typeof o.sku === 'string' && (o.quantity === undefined || Number.isInteger(o.quantity));

  return http.createServer(
    forwardedOnly(async (req, res, { path, body, caller }) => {
      let input = {};
      try {
        if (body.length) input = JSON.parse(body.toString('utf8'));
      } catch {
        return reply(res, 400, { error: 'invalid_json', calledBy: caller });
      }
      const list = ordersOf(caller.consumer);
      if (path === '/orders' && req.method === 'GET') return reply(res, 200, { data: list, calledBy: caller });
      if (path === '/orders' && req.method === 'POST') {
        if (!valid(input)) return reply(res, 400, { error: 'sku (a string) is required', calledBy: caller });
        return reply(res, 201, { data: place(caller, input), calledBy: caller });
      }
      if (path === '/orders/import' && req.method === 'POST') {
        if (!Array.isArray(input.orders) || !input.orders.every(valid))
          return reply(res, 400, { error: 'orders: an array of { sku, quantity }', calledBy: caller });
        return reply(res, 201, { data: input.orders.map((o) => place(caller, o)), calledBy: caller });
      }
      const one = /^\/orders\/(\d+)(\/cancel)?$/.exec(path);
      const order = one && list.find((o) => o.id === Number(one[1]));
      if (one && !one[2] && req.method === 'GET' && order) return reply(res, 200, { data: order, calledBy: caller });
      if (one && one[2] && req.method === 'POST' && order) {
        order.status = 'cancelled';
        return reply(res, 200, { data: order, calledBy: caller });
      }
      reply(res, 404, { error: 'not_found', calledBy: caller });
    }),
  );
}
