// A test's own server (an upstream, a fake provider, a proxy) on a loopback port the system picks.
import type { AddressInfo, Server } from 'node:net';

export interface Listening {
  port: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
}

/** Listen on 127.0.0.1, port 0; resolves with the port it got, or rejects with the listen error. */
export async function listenLocal(server: Server): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return { port, url: `http://127.0.0.1:${port}` };
}
