import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createIdentityDocument,
  didKeyFragment,
  didKeyFromPublicKey,
  generateKeyPair,
} from '@agentmsg/core'
import { base64urlEncode } from '@agentmsg/core/encoding'
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

/** What earlier versions of `agentmsg init` wrote: `agent-key.json` (+ `identity.json`). */
async function writeLegacyDir(d: string, url?: string) {
  const keys = await generateKeyPair()
  await mkdir(d, { recursive: true, mode: 0o700 })
  let agentId: string
  let keyId: string
  if (url) {
    const document = createIdentityDocument({
      agentId: url,
      publicKey: keys.publicKey,
      display: 'Legacy',
    })
    agentId = url
    keyId = `${url}#${document.keys[0]!.key_id}`
    await writeFile(path.join(d, 'identity.json'), JSON.stringify(document, null, 2) + '\n', {
      mode: 0o644,
    })
  } else {
    agentId = didKeyFromPublicKey(keys.publicKey)
    keyId = `${agentId}#${didKeyFragment(agentId)}`
  }
  const secret = base64urlEncode(keys.secretKey)
  await writeFile(
    path.join(d, 'agent-key.json'),
    JSON.stringify({ agent_id: agentId, key_id: keyId, secret_key: secret }, null, 2) + '\n',
    { mode: 0o600 },
  )
  return { agentId, keyId, secret }
}

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

describe('agent-key.json directories of earlier versions', () => {
  it('a URL agent is migrated on first use (one line on stderr) and keeps its identity', async () => {
    const port = await freePort()
    const d = path.join(dir, 'legacy-url')
    const legacy = await writeLegacyDir(d, `https://127.0.0.1:${port}`)

    const first = await start(d, port)
    const notes = first
      .stderr()
      .split('\n')
      .filter((l) => /migrated/.test(l))
    expect(notes).toHaveLength(1)
    expect(notes[0]).toContain(path.join(d, 'agent-key.json'))
    expect(existsSync(path.join(d, 'agent-key.json'))).toBe(false)
    expect(existsSync(path.join(d, 'identity.json'))).toBe(false)
    expect((await readdir(d)).filter((f) => f.includes(legacy.secret))).toEqual([])

    // The document served is the legacy one (same key, same display).
    const doc = await (
      await first.fetch(`https://127.0.0.1:${port}/.well-known/agentmsg/identity`)
    ).json()
    expect(doc).toMatchObject({ agent_id: legacy.agentId, display: 'Legacy' })
    expect(`${legacy.agentId}#${doc.keys[0].key_id}`).toBe(legacy.keyId)
    const message = await signedMessage(legacy.agentId, 'to a migrated agent')
    const printed = waitFor(first.child, 'stdout', /to a migrated agent/)
    expect((await post(first, message)).status).toBe(202)
    await printed
    await stop(first)

    // Second start: nothing left to migrate; init still refuses to overwrite.
    const second = await start(d, port)
    expect(second.stderr()).not.toMatch(/migrated/)
    await stop(second)
    const init = await run(['init', '--dir', d])
    expect(init.stderr).toMatch(/refusing to overwrite/)
  })

  it('a did:key agent is migrated; a key file whose seed does not match its agent id is refused', async () => {
    const d = path.join(dir, 'legacy-did')
    const legacy = await writeLegacyDir(d)
    const p = await start(d, await freePort())
    expect(p.stderr()).toMatch(/migrated .*agent-key\.json/)
    expect(p.stderr()).toContain(`${legacy.agentId} listening on`)
    await stop(p)

    // init on a legacy directory refuses too (without --force).
    const other = path.join(dir, 'legacy-did-2')
    await writeLegacyDir(other)
    expect((await run(['init', '--dir', other])).stderr).toMatch(/refusing to overwrite/)

    const bad = path.join(dir, 'legacy-bad')
    const wrong = await writeLegacyDir(bad)
    const stranger = await writeLegacyDir(path.join(dir, 'legacy-stranger'))
    await writeFile(
      path.join(bad, 'agent-key.json'),
      JSON.stringify({
        agent_id: stranger.agentId,
        key_id: stranger.keyId,
        secret_key: wrong.secret,
      }),
      { mode: 0o600 },
    )
    const r = await run(['inbox', '--dir', bad, '--port', String(await freePort()), '--dev-tls'])
    expect(r.code).not.toBe(0)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toMatch(/does not match/)
    // Nothing was migrated: the key file stays, the store holds no identity.
    expect(existsSync(path.join(bad, 'agent-key.json'))).toBe(true)
    expect((await run(['inbox', '--dir', bad, '--port', '1', '--dev-tls'])).stderr).toMatch(
      /does not match/,
    )
  })
})
