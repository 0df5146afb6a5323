// The workspace API's recorded answers (issue 38's must-show): the corpus of corpus.ts replayed in order
// through the real gateway in front of the reference backend, each answer's status, headers and body
// compared with answers.json. What varies run to run for no client-visible reason (request ids, dates,
// timestamps the database stamps, the ports) is replaced by a placeholder that keeps its presence;
// everything else must stay as it is, whatever moves inside the gateway.
// `RECORD_ANSWERS=1 npx vitest run --project main test/vectors/answers` rewrites the fixture.
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../helpers/stack.js';
import { answersClock, answersStackOptions, FIXTURE, readFixture, replay } from './replay.js';

const RECORD = process.env.RECORD_ANSWERS === '1';

let s: Stack;
const clock = answersClock();
let volatile: string[] = [];

beforeAll(async () => {
  s = await startStack(answersStackOptions(clock));
  // The ports are the run's own: an answer naming one names it as a placeholder.
  volatile = [new URL(s.gatewayUrl).host, new URL(s.backendUrl).host].filter(Boolean);
});
afterAll(async () => s?.close());

describe('the workspace API: recorded answers', () => {
  it('every answer of the corpus equals the recorded one', async () => {
    const entries = await replay(s.gatewayUrl, clock, volatile);
    if (RECORD) {
      writeFileSync(FIXTURE, JSON.stringify(entries, null, 2) + '\n');
      return;
    }
    const recorded = readFixture();
    expect(entries.map((e) => e.name)).toEqual(recorded.map((e) => e.name));
    for (let i = 0; i < entries.length; i++) expect(entries[i], entries[i]!.name).toEqual(recorded[i]);
  });
});
