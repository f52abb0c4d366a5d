/**
 * `agentmsg doctor` in real processes: a relay and a URL agent's inbox (`agentmsg relay`,
 * `agentmsg inbox`, development TLS from the machine's dev CA), checked by the built CLI. It
 * passes while they run, and names the real fault — the certificate, a stopped relay, a stopped
 * inbox — on the failing line, with the fix and exit 1.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CLI,
  cliBuilt,
  freePort,
  type InboxProcess,
  type RelayProcess,
  run,
  startInbox,
  startRelay,
} from './cli-helpers.js'

const LOOPBACK = ['--allow-private', '127.0.0.1']

let dir: string
let relay: RelayProcess
let inbox: InboxProcess
let bobId: string
/** This machine's development CA (what every dev server's certificate chains to). */
let caFile: string

beforeAll(async () => {
  if (!cliBuilt()) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-doctor-'))
  caFile = (await loadDevCertificate(path.join(dir, 'warm-up'))).caFile
  relay = await startRelay(path.join(dir, 'relay'), LOOPBACK, { NODE_EXTRA_CA_CERTS: caFile })
  const port = await freePort()
  bobId = `https://127.0.0.1:${port}`
  const bob = path.join(dir, 'bob')
  const init = await run(['init', '--dir', bob, '--url', bobId, '--relay', relay.url])
  expect(init.code, init.stderr).toBe(0)
  inbox = await startInbox(bob, port, ['--ca', caFile, ...LOOPBACK])
}, 60_000)

afterAll(async () => {
  inbox?.child.kill('SIGKILL')
  await relay?.stop()
})

/** The report's line for `check` (its first word after the mark). */
function line(stdout: string, check: string): string {
  const found = stdout.split('\n').find((l) => l.slice(2).startsWith(`${check} `))
  expect(found, stdout).toBeDefined()
  return found!
}

describe('agentmsg doctor', () => {
  it('passes against a running URL agent with a relay in its document', async () => {
    expect(inbox.certFile).toBe(caFile) // the inbox printed the one file to trust
    const r = await run(['doctor', bobId, '--ca', caFile, ...LOOPBACK])
    expect(r.code, r.stdout + r.stderr).toBe(0)
    expect(r.stderr).toBe('')
    expect(line(r.stdout, 'tls')).toMatch(/^✓ .*certificate verified/)
    expect(line(r.stdout, 'identity')).toMatch(/^✓ .*valid, 1 active key\(s\), 1 relay\(s\)/)
    expect(line(r.stdout, 'clock')).toMatch(/^✓ .*within ±5 min/)
    expect(line(r.stdout, 'inbox')).toMatch(/^✓ .*405, Allow: .*POST/)
    expect(line(r.stdout, 'capabilities')).toMatch(/^✓ .*encryption: sealed_box/)
    expect(line(r.stdout, 'relay')).toMatch(/^✓ /)
    expect(line(r.stdout, 'relay')).toContain(`${relay.url}: answers`)
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('all checks passed')
  })

  it('--json: one object with every check', async () => {
    const r = await run(['doctor', bobId, '--ca', caFile, ...LOOPBACK, '--json'])
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report).toMatchObject({ target: bobId, ok: true })
    expect(report.checks.map((c: { check: string }) => c.check)).toEqual([
      'tls',
      'identity',
      'clock',
      'inbox',
      'capabilities',
      'relay',
    ])
    expect(report.checks.at(-1).url).toBe(relay.url)
    expect(new Set(report.checks.map((c: { status: string }) => c.status))).toEqual(new Set(['ok']))
  })

  it("checks a relay's own URL as a relay", async () => {
    const r = await run(['doctor', relay.url, '--ca', relay.certFile, ...LOOPBACK])
    expect(r.code, r.stdout).toBe(0)
    expect(line(r.stdout, 'tls')).toMatch(/^✓ /)
    expect(line(r.stdout, 'relay')).toMatch(/^✓ .*GET \/relay\/publish → 405/)
  })

  it('a did:key: the relays given with --relay; without one, a usage error (exit 2)', async () => {
    const alice = await run(['init', '--dir', path.join(dir, 'alice')])
    const aliceId = JSON.parse(alice.stdout).agent_id as string
    const none = await run(['doctor', aliceId, '--ca', caFile, ...LOOPBACK])
    expect(none.code).toBe(2)
    expect(none.stdout).toBe('')
    expect(none.stderr).toMatch(/^agentmsg: usage: .*pass --relay URL.*\n$/)
    const r = await run(['doctor', aliceId, '--relay', relay.url, '--ca', caFile, ...LOOPBACK])
    expect(r.code, r.stdout).toBe(0)
    expect(line(r.stdout, 'identity')).toMatch(/^✓ .*did:key: no document/)
    expect(line(r.stdout, 'relay')).toMatch(/^✓ /)
  })

  it('without --ca: the certificate is the cause, and the fix names the dev CA file', async () => {
    const r = await run(['doctor', bobId, ...LOOPBACK])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe('')
    expect(r.stdout).not.toMatch(/fetch failed/)
    expect(line(r.stdout, 'tls')).toMatch(
      new RegExp(`^✗ .*certificate signed by an unknown authority .*— pass --ca .*--ca ${caFile}`),
    )
    expect(line(r.stdout, 'identity')).toMatch(/^- .*not checked: tls failed/)
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('1 check(s) failed')
  })

  it("with another machine's CA as --ca: the certificate is still the cause", async () => {
    const other = await loadDevCertificate(path.join(dir, 'other', 'dev-tls'), {
      home: path.join(dir, 'other-machine'),
    })
    const r = await run(['doctor', bobId, '--ca', other.caFile, ...LOOPBACK])
    expect(r.code).toBe(1)
    expect(line(r.stdout, 'tls')).toMatch(
      /^✗ .*certificate signed by an unknown authority .*the --ca given did not issue it/,
    )
  })

  it('without --allow-private: says which host to allow', async () => {
    const r = await run(['doctor', bobId, '--ca', caFile])
    expect(r.code).toBe(1)
    expect(line(r.stdout, 'tls')).toMatch(
      /^✗ .*127\.0\.0\.1 is a private or loopback address.*— pass --allow-private 127\.0\.0\.1$/,
    )
  })

  it('names a stopped relay, then a stopped inbox (connection refused), exit 1', async () => {
    expect(await relay.stop()).toBe(0)
    const relayDown = await run(['doctor', bobId, '--ca', caFile, ...LOOPBACK])
    expect(relayDown.code).toBe(1)
    expect(line(relayDown.stdout, 'inbox')).toMatch(/^✓ /)
    const port = new URL(relay.url).port
    expect(line(relayDown.stdout, 'relay')).toMatch(
      new RegExp(
        `^✗ .*connection refused by 127\\.0\\.0\\.1:${port} — is the relay running there\\?`,
      ),
    )

    expect(await inbox.stop()).toBe(0)
    const r = await run(['doctor', bobId, '--ca', caFile, ...LOOPBACK])
    expect(r.code).toBe(1)
    expect(line(r.stdout, 'tls')).toMatch(
      new RegExp(
        `^✗ .*connection refused by 127\\.0\\.0\\.1:${new URL(bobId).port} — is the inbox running there\\?`,
      ),
    )
    expect(r.stdout).not.toMatch(/fetch failed/)
  })
})
