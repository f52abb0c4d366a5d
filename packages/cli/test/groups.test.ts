/**
 * Groups in the CLI, in real processes: `agentmsg relay` on SQLite and four did:key agents made
 * by `agentmsg init`. B and D subscribe to a topic before they listen; C subscribes while its
 * `agentmsg listen` holds its directory (over the control socket). A publishes sealed for B and
 * C: their listens print the text with its topic, D's (subscribed, not a member) prints "not for
 * me" (PROFILE §8). A's group (`agentmsg group`) seals for its stored members, also while A's
 * own listen holds A's directory. Without members a publish is refused (exit 2); --plaintext
 * goes unsealed to every subscriber.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CLI,
  cliBuilt,
  eventually,
  type ListenProcess,
  oneErrorLine,
  type RelayProcess,
  run,
  startListen,
  startRelay,
} from './cli-helpers.js'

const TOPIC = 'team/room-1'
let dir: string
let relay: RelayProcess
const ids: Record<string, string> = {}
const dirs: Record<string, string> = {}
const listens: Record<string, ListenProcess> = {}
const trust = () => ['--ca', relay.certFile, '--allow-private', '127.0.0.1']

/** Run `agentmsg …`, expecting exit 0 and nothing on stderr; its stdout. */
async function ok(args: string[]): Promise<string> {
  const r = await run(args)
  expect(r.code, r.stderr).toBe(0)
  expect(r.stderr).toBe('')
  return r.stdout
}

/** The line of `name`'s listen (human format) that includes `text`. */
const printed = (name: string, text: string) =>
  eventually(() =>
    listens[name]!.stdout()
      .split('\n')
      .find((l) => l.includes(text)),
  )

beforeAll(async () => {
  if (!cliBuilt()) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-groups-'))
  relay = await startRelay(path.join(dir, 'relay'))
  for (const name of ['a', 'b', 'c', 'd']) {
    dirs[name] = path.join(dir, name)
    // D remembers no relay: its subscribe --relay remembers it, as listen does.
    const relays = name === 'd' ? [] : ['--relay', relay.url]
    ids[name] = JSON.parse(await ok(['init', '--dir', dirs[name]!, ...relays])).agent_id
  }
  expect(await ok(['subscribe', '--dir', dirs.b!, TOPIC, ...trust()])).toBe(
    `subscribed to ${TOPIC} on ${relay.url}; topics of this agent: ${TOPIC}\n`,
  )
  const d = JSON.parse(
    await ok(['subscribe', '--dir', dirs.d!, TOPIC, '--relay', relay.url, '--json', ...trust()]),
  )
  expect(d).toEqual({ topic: TOPIC, was_subscribed: false, relays: [relay.url], topics: [TOPIC] })
  listens.b = await startListen(dirs.b!, ['--json', ...trust()])
  listens.c = await startListen(dirs.c!, trust())
  listens.d = await startListen(dirs.d!, trust())
  // C's listen holds C's directory: it takes the subscribe over its control socket.
  expect(await ok(['subscribe', '--dir', dirs.c!, TOPIC, ...trust()])).toContain(
    `subscribed to ${TOPIC} on ${relay.url}`,
  )
}, 90_000)

afterAll(async () => {
  for (const l of Object.values(listens)) expect(await l.stop()).toBe(0)
  if (relay) expect(await relay.stop()).toBe(0)
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('agentmsg subscribe, publish and listen', () => {
  it('members print the text with its topic; a subscriber outside them prints "not for me"', async () => {
    const out = await ok([
      'publish',
      '--dir',
      dirs.a!,
      TOPIC,
      '--text',
      'standup at 10',
      '--member',
      ids.b!,
      '--member',
      ids.c!,
      ...trust(),
    ])
    expect(out).toMatch(
      new RegExp(
        `^accepted \\S+ to topic ${TOPIC} via relay ${relay.url}, sealed for 2 members, conversation \\S+\\n$`,
      ),
    )
    const messageId = out.split(' ')[1]
    const atB = await eventually(() => listens.b!.messages().find((m) => m.topic === TOPIC))
    expect(atB).toMatchObject({ from: ids.a, topic: TOPIC, sealed: true })
    expect(atB.message.message_id).toBe(messageId)
    expect(JSON.stringify(atB.message.body)).toContain('standup at 10')
    expect(await printed('c', 'standup at 10')).toContain(
      `${ids.a}  level 3 new  sealed  [topic ${TOPIC}]  standup at 10`,
    )
    expect(await printed('d', `[topic ${TOPIC}]`)).toContain(
      `sealed  [topic ${TOPIC}]  not for me (sealed for other members)`,
    )
  }, 60_000)

  it('without members a publish is refused (exit 2); --plaintext reaches every subscriber unsealed', async () => {
    const bare = ['publish', '--dir', dirs.a!, TOPIC, '--text', 'open notice', ...trust()]
    const refused = await run(bare)
    expect(refused.code).toBe(2)
    expect(oneErrorLine(refused, 'usage')).toContain('--plaintext')
    // An empty stored group is the directory's state: exit 1.
    const empty = await run([...bare, '--group'])
    expect(empty.code).toBe(1)
    expect(oneErrorLine(empty, 'not_found')).toContain(`agentmsg group --dir D ${TOPIC} add ID`)
    const both = await run([...bare, '--plaintext', '--member', ids.b!])
    expect(both.code).toBe(2)
    const badTopic = await run(['publish', '--dir', dirs.a!, 'Team Room', '--text', 'x'])
    expect(badTopic.code).toBe(2)
    oneErrorLine(badTopic, 'invalid_input')

    const json = JSON.parse(await ok([...bare, '--plaintext', '--format', 'json']))
    expect(json).toMatchObject({ status: 'accepted', topic: TOPIC, sealed: false, sealed_for: [] })
    const atB = await eventually(() =>
      listens.b!.messages().find((m) => m.message.message_id === json.message_id),
    )
    expect(atB).toMatchObject({ topic: TOPIC, sealed: false })
    expect(await printed('d', 'open notice')).toContain(`plain   [topic ${TOPIC}]  open notice`)
    expect(await printed('c', 'open notice')).toContain(`[topic ${TOPIC}]  open notice`)
  }, 60_000)

  it("agentmsg group keeps A's member list; publish --group seals for it while A's listen holds A", async () => {
    expect(await ok(['group', '--dir', dirs.a!, TOPIC, 'add', ids.b!, ids.d!])).toBe(
      `group ${TOPIC}: ${ids.b} ${ids.d}\n`,
    )
    listens.a = await startListen(dirs.a!, trust())
    // From here on A's listen does what A's commands ask, over its control socket.
    expect(await ok(['group', '--dir', dirs.a!, TOPIC, 'remove', ids.d!])).toBe(
      `group ${TOPIC}: ${ids.b}\n`,
    )
    const list = JSON.parse(await ok(['group', '--dir', dirs.a!, TOPIC, 'list', '--json']))
    expect(list).toEqual({ topic: TOPIC, members: [ids.b] })
    const args = ['publish', '--dir', dirs.a!, TOPIC, '--group', '--format', 'json', ...trust()]
    const r = JSON.parse(await ok([...args, '--text', 'for the group']))
    expect(r).toMatchObject({ status: 'accepted', topic: TOPIC, sealed: true })
    expect([...r.sealed_for].sort()).toEqual([ids.a, ids.b].sort())
    const atB = await eventually(() =>
      listens.b!.messages().find((m) => m.message.message_id === r.message_id),
    )
    expect(atB).toMatchObject({ sealed: true, topic: TOPIC })
    expect(JSON.stringify(atB.message.body)).toContain('for the group')
    // C and D are subscribed, not in the group.
    for (const name of ['c', 'd']) {
      const line = await eventually(() =>
        listens[name]!.stdout()
          .split('\n')
          .filter((l) => l.includes('not for me'))
          .at(name === 'd' ? 1 : 0),
      )
      expect(line).toContain(`[topic ${TOPIC}]  not for me`)
    }
  }, 60_000)

  it('unsubscribe through a running listen; a --relay the running agent is not on is refused', async () => {
    const other = await run([
      'subscribe',
      '--dir',
      dirs.c!,
      'elsewhere',
      '--relay',
      'https://127.0.0.1:1',
      ...trust(),
    ])
    expect(other.code).toBe(1)
    expect(oneErrorLine(other, 'in_use')).toContain('leave out --relay')
    const r = JSON.parse(await ok(['unsubscribe', '--dir', dirs.c!, TOPIC, '--json', ...trust()]))
    expect(r).toEqual({ topic: TOPIC, was_subscribed: true, relays: [relay.url], topics: [] })
    expect(await ok(['unsubscribe', '--dir', dirs.c!, TOPIC, ...trust()])).toBe(
      `${TOPIC} was not subscribed; topics of this agent: none\n`,
    )
  }, 60_000)
})
