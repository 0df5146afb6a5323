// Everything the backend talks to besides its database, faked on 127.0.0.1 port 0: DNS, the Google and
// Microsoft directories, and the token profile lookup. `env` points a stack at them (startStack's env).
import http from 'node:http';
import { startDnsServer, type DnsServer } from './dns-server.js';
import { startFakeProviders, type FakeProviders } from './fake-providers.js';
import { listenLocal } from './listen.js';

export interface OutsideWorld {
  dns: DnsServer;
  providers: FakeProviders;
  env: Record<string, string>;
  close(): Promise<void>;
}

/** `profile` is the JSON the token profile lookup answers (status 200), or a status to refuse with. */
export async function startOutsideWorld(profile: { emailAddress: string } | number): Promise<OutsideWorld> {
  const dns = await startDnsServer({});
  const providers = await startFakeProviders();
  const lookup = http.createServer((_req, res) => {
    const [status, body] = typeof profile === 'number' ? [profile, {}] : [200, profile];
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  const { url: profileUrl } = await listenLocal(lookup);
  return {
    dns,
    providers,
    env: {
      DNS_RESOLVER: dns.address,
      GOOGLE_ADMIN_URL: providers.url,
      MICROSOFT_GRAPH_URL: providers.url,
      GOOGLE_PROFILE_URL: `${profileUrl}/gmail`,
      MICROSOFT_PROFILE_URL: `${profileUrl}/me`,
      GOOGLE_OAUTH_CLIENT_ID: 'test-google-client',
      MICROSOFT_OAUTH_CLIENT_ID: 'test-microsoft-client',
      OAUTH_REDIRECT_URI: 'https://app.acme.test/callback',
    },
    async close() {
      await dns.close();
      await providers.close();
      await new Promise((r) => lookup.close(r));
    },
  };
}
