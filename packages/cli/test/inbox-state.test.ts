import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  CLI,
  cliBuilt,
  freePort,
  type InboxProcess,
  post,
  run,
  signedMessage,
  startInbox,
  waitFor,
} from './cli-helpers.js'

let dir: string
const running = new Set<InboxProcess>()
beforeAll(async () => {
  if (!cliBuilt()) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-cli-state-'))
})
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true })
})
afterEach(() => {
  for (const p of running) p.child.kill('SIGKILL')
  running.clear()
})

async function start(d: string, port: number): Promise<InboxProcess> {
  const p = await startInbox(d, port)
  running.add(p)
  return p
}

async function stop(p: InboxProcess): Promise<void> {
  expect(await p.stop()).toBe(0)
  running.delete(p)
}

/** The messages an inbox printed, by id. */
const printedIds = (p: InboxProcess) =>
  p
    .stdout()
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { message: { message_id: string } }).message.message_id)

describe('agentmsg inbox keeps replay state in the agent directory', () => {
  it('a message delivered again after a restart is a duplicate (202) and is not printed again', async () => {
    const d = path.join(dir, 'dana')
    const init = await run(['init', '--dir', d])
    expect(init.code).toBe(0)
    const agentId = JSON.parse(init.stdout).agent_id as string

    const first = await start(d, await freePort())
    const message = await signedMessage(agentId, 'before restart')
    const printed = waitFor(first.child, 'stdout', /before restart/)
    expect((await post(first, message)).status).toBe(202)
    await printed
    await stop(first)
    expect(printedIds(first)).toEqual([message.message_id])

    // A new process on the same directory: the id is remembered in the store.
    const second = await start(d, await freePort())
    expect(await post(second, message)).toEqual({
      status: 202,
      body: { status: 'accepted', message_id: message.message_id },
    })
    // A later new message is printed; the duplicate, answered first, never is.
    const later = await signedMessage(agentId, 'after restart')
    const printedLater = waitFor(second.child, 'stdout', /after restart/)
    expect((await post(second, later)).status).toBe(202)
    await printedLater
    await stop(second)
    expect(printedIds(second)).toEqual([later.message_id])
  })
})
