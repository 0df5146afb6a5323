// A webhook receiver for the tests (node:http): it verifies each request with the `standardwebhooks`
// package from npm and the endpoint's secret, records it, then answers as its `mode` says.
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { listenLocal } from '../helpers/listen.js';

export interface Received {
  mode: Mode;
  id: string;
  type: string;
  verified: boolean;
  body: Record<string, any>;
}
export type Mode = 'fail' | 'hang' | 'ok';

/** A Standard Webhooks receiver: verifies each request with the endpoint's secret, then answers as `mode` says. */
export async function startReceiver() {
  const r = { mode: 'ok' as Mode, secret: '', got: [] as Received[], url: '', server: null as http.Server | null };
  r.server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let verified = false;
      try {
        new Webhook(r.secret).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      const parsed = JSON.parse(body);
      r.got.push({ mode: r.mode, id: String(req.headers['webhook-id']), type: parsed.type, verified, body: parsed });
      if (r.mode === 'hang') return; // never answers: the sender's timeout ends it
      res.writeHead(r.mode === 'fail' ? 500 : verified ? 204 : 401).end();
    });
  });
  r.url = (await listenLocal(r.server)).url + '/hooks/keygate';
  return r;
}
