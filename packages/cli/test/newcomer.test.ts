/**
 * What stops a newcomer in the first hour, each through the real CLI (a child process) against a
 * real relay on loopback TLS: the exit code and the one line that says what to do.
 */
import { spawn } from 'node:child_process'
import { mkdtemp } from 'node:fs/promises'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadDevCa } from '@agentmsg/dev-tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  cliBuilt,
  freePort,
  oneErrorLine,
  type RelayProcess,
  run,
  spawnCli,
  startRelay,
  waitFor,
} from './cli-helpers.js'

const LOCAL = ['--allow-private', '127.0.0.1']
const home = process.env.AGENTMSG_HOME!
const devCa = path.join(home, 'dev-ca', 'ca.pem')
const repo = fileURLToPath(new URL('../../..', import.meta.url))
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

describe.runIf(cliBuilt())('the first hour, where it stopped newcomers', () => {
  let tmp: string
  let relay: RelayProcess
  let alice: string
  let bob: string
  let aliceId: string

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(tmpdir(), 'agentmsg-newcomer-'))
    relay = await startRelay(path.join(tmp, 'relay'), LOCAL)
    ;[alice, bob] = [path.join(tmp, 'alice'), path.join(tmp, 'bob')]
    aliceId = JSON.parse((await run(['init', '--dir', alice])).stdout).agent_id
    await run(['init', '--dir', bob])
  }, 60_000)
  afterAll(() => relay?.stop())

  const send = (to: string, relayUrl: string, ...flags: string[]) =>
    run(['send', '--dir', bob, '--to', to, '--relay', relayUrl, '--text', 'hi', ...LOCAL, ...flags])

  it('dev-ca path prints the CA in use; trust prints the commands, and how to undo them', async () => {
    expect(await run(['dev-ca', 'path'])).toMatchObject({ code: 0, stdout: `${devCa}\n` })
    expect(devCa).toBe(relay.certFile)
    const trust = await run(['dev-ca', 'trust'], { HOME: tmp })
    expect(trust.code).toBe(0)
    const nss = `sql:${tmp}/.pki/nssdb`
    expect(trust.stdout).toContain(`certutil -d ${nss} -A -t C,, -n agentmsg-dev-ca -i ${devCa}\n`)
    expect(trust.stdout).toContain(`certutil -d ${nss} -D -n agentmsg-dev-ca`)
    expect(trust.stdout).toMatch(/cp \S+ \/usr\/local\/share\/ca-certificates\/agentmsg-dev-ca.crt/)
    expect(trust.stdout).toContain('update-ca-certificates\n')
    const usage = await run(['dev-ca', 'trust', '--only', 'browser'])
    expect(oneErrorLine(usage, 'usage')).toContain('--only browser: use system or nss')
  })

  it('listen exits 1 with the fix when the relay certificate does not verify (no or the wrong --ca)', async () => {
    // Another machine's development CA.
    const other = (await loadDevCa({ home: path.join(tmp, 'elsewhere') })).certFile
    const fix = new RegExp(
      `^agentmsg: certificate: ${esc(relay.url)}: its certificate does not verify \\([A-Z_]+\\) — pass its CA with --ca FILE; a --dev-tls server's is --ca ${esc(devCa)} \\(agentmsg dev-ca path\\)$`,
    )
    for (const ca of [[], ['--ca', other]]) {
      const r = await run(['listen', '--dir', alice, '--relay', relay.url, ...LOCAL, ...ca])
      expect(r.code, r.stderr).toBe(1)
      expect(r.stderr.trim().split('\n').at(-1)).toMatch(fix)
    }
    const url = `https://127.0.0.1:${await freePort()}`
    const inboxDir = path.join(tmp, 'carol')
    await run(['init', '--dir', inboxDir, '--url', url])
    const r = await run(['inbox', '--dir', inboxDir, '--dev-tls', '--relay', relay.url, ...LOCAL])
    expect(r.code, r.stderr).toBe(1)
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(fix)
  })

  it('a send through a relay that is down is pending, says why and what next; the relay is not remembered', async () => {
    const down = `https://127.0.0.1:${await freePort()}`
    const r = await send(aliceId, down, '--ca', devCa)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(
      new RegExp(
        `^pending \\S+ via relays, sealed, conversation \\S+: ${esc(down)}: nothing answered \\(ECONNREFUSED\\) — is the relay running\\? check with \`agentmsg doctor ${esc(down)}\`; kept in `,
      ),
    )
    // Bob remembers no relay for alice: a later send names none rather than blame this one.
    expect((await run(['contacts', '--dir', bob, 'list'])).stdout).not.toContain(down)
  })

  it('a send to a relay without the --ca names the real CA file to pass', async () => {
    const r = await send(aliceId, relay.url)
    expect(r.stdout).toContain(
      `${relay.url}: its certificate does not verify (UNABLE_TO_VERIFY_LEAF_SIGNATURE) — pass its CA with --ca FILE; a --dev-tls server's is --ca ${devCa} `,
    )
  })

  it('a send to a mailbox nobody opened is one line; --verbose adds the chain', async () => {
    const r = await send(aliceId, relay.url, '--ca', devCa)
    expect(r.code).toBe(1)
    expect(oneErrorLine(r, 'not_found')).toBe(
      `agentmsg: not_found: ${relay.url}: no mailbox for ${aliceId} — the recipient has not listened on this relay yet: they run agentmsg listen --relay ${relay.url} (or tell you their relay)`,
    )
    const verbose = await send(aliceId, relay.url, '--ca', devCa, '--verbose')
    const [detail, line] = verbose.stderr.trim().split('\n')
    expect(JSON.parse(detail!).msg).toContain(`detail: publish to ${relay.url}: 404 not_found`)
    expect(line).toMatch(/^agentmsg: not_found: .* no mailbox for /)
  })

  it('a send to a relay that never answers says so; Ctrl-C during a send says nothing is kept', {
    // The send waits out the client's request timeout (PROFILE), twice: then it is pending.
    timeout: 150_000,
  }, async () => {
    const held: Socket[] = []
    const silent = createServer((s) => held.push(s)).listen(0, '127.0.0.1')
    await new Promise((r) => silent.once('listening', r))
    const url = `https://127.0.0.1:${(silent.address() as { port: number }).port}`
    try {
      const r = await send(aliceId, url, '--ca', devCa)
      expect(r.stdout).toContain(`${url}: no answer in time (overloaded, or a firewall drops`)
      const child = spawnCli([
        'send',
        '--dir',
        bob,
        '--to',
        aliceId,
        '--relay',
        url,
        '--text',
        'x',
        ...LOCAL,
      ])
      const before = held.length
      let err = ''
      child.stderr!.on('data', (d) => (err += d))
      while (held.length === before) await new Promise((r) => setTimeout(r, 50))
      child.kill('SIGINT')
      const code = await new Promise((r) => child.on('exit', r))
      expect(code).toBe(1)
      expect(err).toBe(
        `agentmsg: interrupted: stopped before a target took it: nothing is kept in ${bob}'s outbox — send it again\n`,
      )
    } finally {
      for (const s of held) s.destroy()
      silent.close()
    }
  })

  it('through npx, Ctrl-C of the process group stops listen with exit 0', {
    timeout: 60_000,
  }, async () => {
    const args = [
      'agentmsg',
      'listen',
      '--dir',
      alice,
      '--relay',
      relay.url,
      '--ca',
      devCa,
      ...LOCAL,
    ]
    // npm forwards the Ctrl-C its group already got: listen gets it twice. Debian's sh (dash)
    // dies of it itself, and npm then reports 130 (README): bash, as elsewhere, waits.
    const env = { ...process.env, npm_config_script_shell: '/bin/bash' }
    const npx = spawn('npx', args, {
      cwd: repo,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    await waitFor(npx, 'stderr', /listening on/, 45_000)
    process.kill(-npx.pid!, 'SIGINT')
    expect(await new Promise((r) => npx.on('exit', r))).toBe(0)
  })

  it('on a terminal, listen, inbox and relay report in human lines (JSON otherwise)', {
    timeout: 120_000,
  }, async () => {
    const cli = `node ${path.join(repo, 'packages/cli/bin/agentmsg.js')}`
    const port = await freePort()
    const inboxDir = path.join(tmp, 'dave')
    await run(['init', '--dir', inboxDir, '--url', `https://127.0.0.1:${await freePort()}`])
    const commands: Array<[string, RegExp]> = [
      [
        `listen --dir ${alice} --relay ${relay.url} --ca ${devCa} ${LOCAL.join(' ')}`,
        /^agentmsg: did:key:\S+ listening on /,
      ],
      [
        `inbox --dir ${inboxDir} --dev-tls --ca ${devCa} ${LOCAL.join(' ')}`,
        /^agentmsg: https:\S+ listening on /,
      ],
      [
        `relay --data ${path.join(tmp, 'relay2')} --port ${port} --dev-tls`,
        /^agentmsg: listening on /,
      ],
    ]
    for (const [command, human] of commands) {
      const tty = spawn('script', ['-qec', `${cli} ${command}`, '/dev/null'], { detached: true })
      expect(await waitFor(tty, 'stdout', /listening on/, 45_000)).toMatch(human)
      process.kill(-tty.pid!, 'SIGINT')
      expect(await new Promise((r) => tty.on('exit', r))).toBe(0)
    }
  })
})
