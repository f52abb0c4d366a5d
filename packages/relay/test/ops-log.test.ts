/**
 * Issue 14: the relay's JSON logs (pino). A refused request is one line with its PROFILE code,
 * status, endpoint name and client-address bucket, and nothing of the request itself: no body,
 * no signature, no path (paths name agents). Levels filter; `onError` goes to the logger, and
 * a PostgreSQL error reaches it without the context PostgreSQL quotes values (ids) in.
 */
import { request as httpsRequest } from 'node:https'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { afterAll, describe, expect, it } from 'vitest'
import { createRelayLogger } from '../src/server/relay-log.js'
import { openPostgresRelayStore } from '../src/store/postgres.js'
import { relayPerTest, startRelay } from './helpers.js'
import {
  adminQuery,
  closeAdmin,
  dropPostgresSchema,
  freshPostgresSchema,
  POSTGRES_TEST_URL,
} from './postgres-helpers.js'

const { start, defer } = relayPerTest()

/** A logger whose JSON lines land in `lines`. */
function capture(level?: string) {
  const lines: Array<Record<string, unknown>> = []
  const raw: string[] = []
  const logger = createRelayLogger({
    ...(level !== undefined ? { level } : {}),
    destination: {
      write(line: string) {
        raw.push(line)
        lines.push(JSON.parse(line) as Record<string, unknown>)
      },
    },
  })
  return { logger, lines, raw }
}

const refusals = (lines: Array<Record<string, unknown>>) => lines.filter((l) => l.msg === 'refused')

describe('logs', () => {
  it('one line per refused request: code, status, route, bucket; no body, signature or path', async () => {
    const { logger, lines, raw } = capture()
    const r = await start({ logger })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await r.client.subscribe(bob)
    expect(lines).toEqual([])

    const secret = 'SECRET-BODY-7f3a'
    const forged = await signedMessage(alice, bob.id, { text: secret })
    const other = await signedMessage(alice, bob.id)
    forged.security!.signatures[0]!.sig = other.security!.signatures[0]!.sig
    expect((await r.client.publish(forged)).status).toBe(401)
    expect(refusals(lines)).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'refused',
        code: 'invalid_signature',
        status: 401,
        route: 'publish',
        method: 'POST',
        bucket: '127.0.0.1',
      }),
    ])
    // Alice's signed request for Bob's mailbox: 403, logged without the path or the headers.
    const path = `/relay/messages?agent=${encodeURIComponent(bob.id)}`
    expect((await r.client.request('GET', path, { as: alice })).status).toBe(403)
    const [, forbidden] = refusals(lines)
    expect(forbidden).toMatchObject({
      code: 'forbidden',
      status: 403,
      route: 'retrieve',
      method: 'GET',
    })
    expect(Object.keys(forbidden!).sort()).toEqual(
      [
        'bucket',
        'code',
        'level',
        'method',
        'msg',
        'name',
        'pid',
        'hostname',
        'route',
        'status',
        'time',
      ].sort(),
    )
    const text = raw.join('')
    for (const leak of [
      secret,
      forged.security!.signatures[0]!.sig,
      alice.id,
      bob.id,
      forged.message_id,
      'sig1=',
    ]) {
      expect(text).not.toContain(leak)
    }
    // A success is not logged.
    expect((await r.client.publish(other)).status).toBe(202)
    expect(refusals(lines)).toHaveLength(2)
  })

  it('logs an IPv6 client by its /64 bucket, never its address', async () => {
    const { logger, lines } = capture()
    const r = await startRelay({ host: '::1', logger })
    defer(() => r.stop())
    expect(r.url).toMatch(/^https:\/\/\[::1\]:/)
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(`${r.url}/relay/publish`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        ca: r.cert.ca,
      })
      req.on('response', (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      req.end('{}')
    })
    expect(status).toBe(400)
    expect(refusals(lines)).toEqual([
      expect.objectContaining({ code: 'invalid_format', bucket: '0:0:0:0::/64' }),
    ])
    expect(JSON.stringify(lines)).not.toContain('::1"')
  })

  it('filters by level; onError goes to the logger at error', async () => {
    const quiet = capture('warn')
    const r = await start({ logger: quiet.logger })
    expect((await r.client.publish({})).status).toBe(400)
    expect(quiet.lines).toEqual([])
    // A store that fails under the relay: 500, the error through onError, the refusal at warn.
    const loud = capture('info')
    const failing = await startRelay({ logger: loud.logger, onError: undefined })
    defer(() => failing.stop())
    const bob = await fixtureAgent()
    await failing.client.subscribe(bob)
    await failing.store.close()
    expect((await failing.client.publish(await signedMessage(bob, bob.id))).status).toBe(500)
    expect(loud.lines.map((l) => [l.level, l.msg, l.code])).toEqual([
      [50, 'relay error', undefined],
      [40, 'refused', 'internal_error'],
    ])
    expect((loud.lines[0]!.err as { message: string }).message).toBe('relay store is closed')
  })
})

/** Whether `text` holds 8 characters in a row of `id`'s random part (PROFILE §9: no ids). */
const holdsPartOf = (text: string, id: string) =>
  [...id.slice('did:key:'.length)].some((_, i, all) => {
    const window = all.slice(i, i + 8).join('')
    return window.length === 8 && text.includes(window)
  })

/** A trigger that fails every new mailbox entry with PostgreSQL quoting its ids. */
const FORCED: Array<[string, string]> = [
  // The JSON parser's context (`where`) quotes the text before the bad escape: the mailbox id.
  ['where', `PERFORM ('{"m":"' || NEW.mailbox || '\\u0000"}')::jsonb;`],
  [
    'detail and hint',
    `RAISE EXCEPTION 'forced for "%"', NEW.mailbox USING DETAIL = NEW.mailbox, HINT = NEW.from_agent;`,
  ],
]

describe.runIf(POSTGRES_TEST_URL !== undefined)('logs of a PostgreSQL error', () => {
  afterAll(closeAdmin)

  it.each(FORCED)('carry no id quoted in its %s', async (_, statement) => {
    const { logger, lines, raw } = capture()
    const schema = freshPostgresSchema()
    const store = await openPostgresRelayStore({ connectionString: POSTGRES_TEST_URL!, schema })
    const r = await startRelay({ store, logger, onError: undefined })
    defer(() => dropPostgresSchema(POSTGRES_TEST_URL!, schema))
    defer(() => r.stop())
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await r.client.subscribe(bob)
    await adminQuery(
      `CREATE FUNCTION "${schema}".forced() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${statement} RETURN NEW; END $$;
       CREATE TRIGGER forced BEFORE INSERT ON "${schema}".entries FOR EACH ROW EXECUTE FUNCTION "${schema}".forced()`,
    )
    // The control: PostgreSQL itself does quote the id in that error.
    const direct = await adminQuery(
      `INSERT INTO "${schema}".entries SELECT 0, $1, 0, $2, 'm', 0, 0`,
      [bob.id, alice.id],
    ).catch((e: Record<string, unknown>) => JSON.stringify({ ...e, message: e.message }))
    expect(holdsPartOf(String(direct), bob.id)).toBe(true)

    expect((await r.client.publish(await signedMessage(alice, bob.id))).status).toBe(500)
    expect(lines.map((l) => [l.level, l.msg, l.code])).toEqual([
      [50, 'relay error', undefined],
      [40, 'refused', 'internal_error'],
    ])
    expect(holdsPartOf(raw.join(''), bob.id)).toBe(false)
    expect(holdsPartOf(raw.join(''), alice.id)).toBe(false)
    const err = lines[0]!.err as Record<string, unknown>
    expect(err.message).toMatch(/^PostgreSQL ERROR (22P05|P0001): /)
    for (const key of ['where', 'detail', 'hint', 'internalQuery'])
      expect(err).not.toHaveProperty(key)
  })
})
