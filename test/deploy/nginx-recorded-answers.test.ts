// The workspace API's recorded answers (test/vectors/answers) replayed through Debian's nginx running
// deploy/forward-auth/nginx.conf, keygate deciding every request from its decision service
// (DECISION_PORT): the same corpus, clock, seed and normalization as keygate's own proxy, compared with
// the same fixture. What nginx legitimately answers differently is the explicit table below, each
// entry with its reason; everything else must equal the recording.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveNginx, startForwardAuthNginx, type RunningNginx } from '../helpers/nginx.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { answersClock, answersStackOptions, readFixture, replay } from '../vectors/answers/replay.js';

/** Fields nginx puts on every answer, whoever made it; removed after their check, before the comparison. */
const NGINX_FIELDS: Record<string, { value: RegExp; why: string }> = {
  server: {
    value: /^nginx(\/[\d.]+)?$/,
    why: "nginx's own Server field (the shipped file keeps server_tokens' default); keygate's proxy sends none",
  },
};

const LONG_TARGET = "the 9 KB target exceeds nginx's large_client_header_buffers (4 8k): it refuses the request line";

/** Entries nginx answers itself, with its own HTML page, before any location (so auth_request) runs. */
const NGINX_ANSWERS: Record<string, { status: number; why: string }> = {
  'v2 target too long': { status: 414, why: LONG_TARGET },
  'v1 target too long': { status: 414, why: LONG_TARGET },
  'v2 method outside the API': { status: 405, why: 'nginx refuses TRACE itself, whatever the configuration' },
};

// Needs nginx, the program under test (CI installs it); skipped without it. Neither PostgreSQL nor Redis:
// one stack is one process, on PGlite and the memory stores when DATABASE_URL/REDIS_URL are unset.
describe.skipIf(!haveNginx())('the recorded workspace-API answers through nginx + the decision service', () => {
  const clock = answersClock();
  let s: Stack;
  let nginx: RunningNginx | undefined;
  let volatile: string[] = [];

  beforeAll(async () => {
    // The backend takes a body under a decision's signature, made without it (nginx sends it on).
    s = await startStack(answersStackOptions(clock, { DECISION_PORT: '0', BACKEND_UNSIGNED_BODY: 'accept' }));
    const decision = Number(new URL(s.app.decisionUrl ?? 'http://x:0').port);
    // The file's two decision instances are this stack's one decision service, named twice.
    nginx = await startForwardAuthNginx({ decision: [decision, decision], app: Number(new URL(s.backendUrl).port) });
    volatile = [new URL(nginx.url).host, new URL(s.gatewayUrl).host, new URL(s.backendUrl).host];
  }, 60_000);

  afterAll(async () => {
    await nginx?.stop();
    await s?.close();
  });

  it('every answer equals the recorded one, but for the listed exceptions', async () => {
    const entries = await replay(nginx!.url, clock, volatile);
    const recorded = readFixture();
    expect(entries.map((e) => e.name)).toEqual(recorded.map((e) => e.name));
    const names = recorded.map((e) => e.name);
    for (const name of Object.keys(NGINX_ANSWERS)) expect(names, name).toContain(name);
    for (let i = 0; i < entries.length; i++) {
      const got = entries[i]!;
      const want = recorded[i]!;
      const own = NGINX_ANSWERS[got.name];
      if (own) {
        // The recording is keygate's answer (its request id); through nginx keygate is never asked.
        expect(want.answer.headers['x-request-id'], got.name).toBeDefined();
        expect(got.answer.status, `${got.name}: ${own.why}`).toBe(own.status);
        expect(got.answer.headers['content-type'], got.name).toBe('text/html');
        expect(got.answer.headers['x-request-id'], got.name).toBeUndefined();
        expect(String(got.answer.body), got.name).toContain(`<h1>${own.status} `);
        continue;
      }
      const headers = { ...got.answer.headers };
      for (const [field, { value, why }] of Object.entries(NGINX_FIELDS)) {
        expect(headers[field], `${got.name}: ${why}`).toMatch(value);
        delete headers[field];
      }
      expect({ ...got, answer: { ...got.answer, headers } }, got.name).toEqual(want);
    }
  }, 60_000);
});
