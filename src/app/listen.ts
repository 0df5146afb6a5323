// Listening for startApp's servers: the URL each is reached at, and a failure that names its setting.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenError } from '../config/errors.js';

export type PortSetting =
  'PORT' | 'ADMIN_PORT' | 'BACKEND_PORT' | 'ADMIN_API_PORT' | 'DECISION_PORT' | 'DECISION_GRPC_PORT';

/** Listen on `port` at `host`. A port in use names its setting; an address this machine does not have names HOST. */
export function listenOn(srv: http.Server, port: number, host: string, setting: PortSetting): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    srv.once('error', (err) => reject(listenError(setting, host, port, err)));
    srv.listen(port, host, () =>
      resolve(`http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${(srv.address() as AddressInfo).port}`),
    );
  });
}

/** A worker's private loopback listener: its gateway's (the connections its primary hands over) and its admin server's. */
export function listenPrivately(srv: http.Server): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    // exclusive: a handle of this worker's own, not one node:cluster shares through the primary.
    srv.once('error', reject);
    srv.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () =>
      resolve(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`),
    );
  });
}
