// Starts the shop's two services on loopback: orders on ORDERS_PORT (4101), catalog on CATALOG_PORT (4102),
// the targets examples/shop/profile.yaml names. `node examples/shop/services.mjs`; Ctrl-C stops both.
import { ordersServer } from './orders.mjs';
import { catalogServer } from './catalog.mjs';

const host = '127.0.0.1';
const started = [
  ['orders', ordersServer(), Number(process.env.ORDERS_PORT ?? 4101)],
  ['catalog', catalogServer(), Number(process.env.CATALOG_PORT ?? 4102)],
];
for (const [name, server, port] of started) {
  server.on('error', (err) => {
    process.stderr.write(`shop ${name}: ${err.message}\n`);
    process.exit(1);
  });
  server.listen(port, host, () => process.stdout.write(`shop ${name} listening on http://${host}:${port}\n`));
}
const stop = () => {
  for (const [, server] of started) server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
