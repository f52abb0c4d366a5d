/**
 * Every error path of the CLI, in real processes: exactly one line on stderr,
 * `agentmsg: <code>: <message>`, nothing on stdout, no stack trace, and the documented exit code
 * (2: usage or input error, nothing done; 1: the command failed). Files a user names are read as
 * regular files only, up to a cap, never quoted; an introduction token stays off argv (`ps`).
 */

import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fsStorage } from '@agentmsg/storage-fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliBuilt, freePort, oneErrorLine, type RunResult, run } from './cli-helpers.js'

let dir: string
let didKey: string
let didKeyId: string
let notPem: string
let secrets: string
const missing = () => path.join(dir, 'missing.pem')

/** `agentmsg args` fails with `code` and `exit`, one stderr line; the line. */
async function fails(args: string[], code: string, exit: 1 | 2): Promise<string> {
  const r: RunResult = await run(args)
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(exit)
  return oneErrorLine(r, code)
}

beforeAll(async () => {
  if (!cliBuilt())
    throw new Error('the CLI is not built: run "npm run build" first (npm test does)')
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-errors-'))
  didKey = path.join(dir, 'alice')
  const r = await run(['init', '--dir', didKey])
  expect(r.code, r.stderr).toBe(0)
  didKeyId = JSON.parse(r.stdout).agent_id
  notPem = path.join(dir, 'not.pem')
  await writeFile(notPem, 'hello\n')
  secrets = path.join(dir, 'secrets.env')
  await writeFile(secrets, 'password=hunter2-very-secret\napi_key=sk-live-0123\n')
})

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('the agentmsg command', () => {
  it('an unknown command exits 2 and names it', async () => {
    expect(await fails(['frobnicate'], 'unknown_command', 2)).toContain('"frobnicate"')
    await fails(['--bogus'], 'unknown_command', 2)
  })
})

describe('usage errors exit 2', () => {
  const cases: Array<[string, string[]]> = [
    ['init without --dir', ['init']],
    ['init with an http URL', ['init', '--dir', 'x', '--url', 'http://127.0.0.1:8444']],
    ['identity without --dir', ['identity']],
    ['identity with an unknown flag', ['identity', '--dir', 'x', '--bogus']],
    ['send without --to', ['send', '--dir', 'x', '--text', 'hi']],
    [
      'send with --seal and --plaintext',
      ['send', '--dir', 'x', '--to', 'y', '--text', 'hi', '--seal', '--plaintext'],
    ],
    ['listen without --dir', ['listen']],
    ['inbox without TLS flags', ['inbox', '--dir', 'x', '--port', '8444']],
    ['inbox with a bad port', ['inbox', '--dir', 'x', '--port', 'abc', '--dev-tls']],
    ['inbox with --tls-cert alone', ['inbox', '--dir', 'x', '--tls-cert', 'c.pem']],
    ['contacts without an action', ['contacts', '--dir', 'x']],
    ['contacts with an unknown action', ['contacts', '--dir', 'x', 'befriend']],
    ['contacts pin with one argument', ['contacts', '--dir', 'x', 'pin', 'did:key:z6Mk']],
    ['rotate without --dir', ['rotate']],
    ['relay without --data', ['relay', '--dev-tls']],
    ['relay with a bad port', ['relay', '--data', 'x', '--port', '99999', '--dev-tls']],
    ['relay without TLS flags', ['relay', '--data', 'x']],
    [
      'relay with a bad --max-storage',
      ['relay', '--data', 'x', '--dev-tls', '--max-storage', 'lots'],
    ],
  ]
  for (const [name, args] of cases) {
    it(name, async () => {
      expect(await fails(args, 'usage', 2)).toMatch(/— see agentmsg \w+ --help$/)
    })
  }

  it('listen on a directory that remembers no relay says to pass --relay', async () => {
    expect(await fails(['listen', '--dir', didKey], 'usage', 2)).toContain('--relay URL')
  })

  it('inbox of a did:key without --port says to pass one', async () => {
    expect(await fails(['inbox', '--dir', didKey, '--dev-tls'], 'usage', 2)).toContain('--port')
  })
})

describe('input errors exit 2', () => {
  it('a --ca file that is missing or not PEM, for every command that connects out', async () => {
    const relay = 'https://127.0.0.1:9'
    for (const ca of [missing(), notPem]) {
      const send = ['send', '--dir', didKey, '--to', didKeyId, '--relay', relay, '--text', 'x']
      expect(await fails([...send, '--ca', ca], 'invalid_input', 2)).toContain(ca)
      await fails(['listen', '--dir', didKey, '--relay', relay, '--ca', ca], 'invalid_input', 2)
      const inbox = ['inbox', '--dir', didKey, '--port', String(await freePort()), '--dev-tls']
      await fails([...inbox, '--ca', ca], 'invalid_input', 2)
      const relayCmd = ['relay', '--data', path.join(dir, 'relay'), '--port', '0', '--dev-tls']
      await fails([...relayCmd, '--ca', ca], 'invalid_input', 2)
    }
  })

  it('contacts pin with a bad key and introduce with a bad token (never echoed)', async () => {
    await fails(['contacts', '--dir', didKey, 'pin', didKeyId, 'not-a-key'], 'invalid_input', 2)
    const token = 'secret-token-that-is-too-short'
    const introduce = ['contacts', '--dir', didKey, 'introduce', token, '--token-on-argv']
    const line = await fails(introduce, 'invalid_input', 2)
    expect(line).not.toContain(token)
  })

  it('rotate on a did:key: cannot rotate, make a new identity', async () => {
    const line = await fails(['rotate', '--dir', didKey], 'not_rotatable', 2)
    expect(line).toMatch(/did:key.*agentmsg init/)
  })
})

describe('files the user names: regular files only, capped, never quoted', () => {
  const send = (...flags: string[]) => ['send', '--dir', didKey, '--to', didKeyId, ...flags]
  const relay = (...flags: string[]) => ['relay', '--data', path.join(dir, 'relay'), ...flags]

  it('send --json on a FIFO fails at once, never waiting for a writer', async () => {
    const fifo = path.join(dir, 'fifo')
    execFileSync('mkfifo', [fifo])
    expect(await fails(send('--json', fifo), 'invalid_input', 2)).toBe(
      `agentmsg: invalid_input: --json ${fifo}: not a regular file (a FIFO, device or directory) — pass a file`,
    )
  })

  it('/dev/zero as --config, --ca or --tls-key is refused before any read', async () => {
    const notFile = '/dev/zero: not a regular file'
    const refused = (args: string[]) => fails(args, 'invalid_input', 2)
    expect(await refused(relay('--dev-tls', '--config', '/dev/zero'))).toContain(
      `--config ${notFile}`,
    )
    expect(await refused(relay('--dev-tls', '--ca', '/dev/zero'))).toContain(`--ca ${notFile}`)
    expect(await refused(send('--text', 'x', '--ca', '/dev/zero'))).toContain(`--ca ${notFile}`)
    // The certificate is read first: one that passes, so the key is read next.
    const cert = path.join(dir, 'cert.pem')
    await writeFile(cert, '-----BEGIN CERTIFICATE-----\n')
    const tls = relay('--tls-cert', cert, '--tls-key', '/dev/zero')
    expect(await refused(tls)).toContain(`--tls-key ${notFile}`)
  })

  it('a file over the cap is refused after reading one byte past it, whatever its size', async () => {
    // Sparse: 4 GiB no one could read whole, and never read whole here.
    const huge = path.join(dir, 'huge.json')
    await writeFile(huge, '')
    await truncate(huge, 4 * 1024 ** 3)
    expect(await fails(relay('--dev-tls', '--config', huge), 'invalid_input', 2)).toBe(
      `agentmsg: invalid_input: --config ${huge}: larger than 65536 bytes`,
    )
    expect(await fails(send('--json', huge), 'invalid_input', 2)).toBe(
      `agentmsg: invalid_input: --json ${huge}: larger than 1048576 bytes`,
    )
  })

  it('a file that is not JSON (or PEM) is said to be so, its content never quoted', async () => {
    for (const args of [send('--json', secrets), relay('--dev-tls', '--config', secrets)]) {
      const line = await fails(args, 'invalid_input', 2)
      expect(line).toMatch(/: is not JSON( \(at position \d+\))?$/)
      for (const part of ['password', 'hunter2', 'api_key', 'sk-live', '"p', "'p'"])
        expect(line).not.toContain(part)
    }
    const ca = await fails(relay('--dev-tls', '--ca', secrets), 'invalid_input', 2)
    expect(ca).not.toContain('hunter2')
  })
})

describe('contacts introduce keeps the token off the command line', () => {
  const introduce = (...flags: string[]) => ['contacts', '--dir', didKey, 'introduce', ...flags]
  // A token passed on argv must not start with '-' (it would be read as a flag: one in 64 do).
  const token = (): string => {
    const t = randomBytes(32).toString('base64url')
    return t.startsWith('-') ? token() : t
  }
  const holding = /^holding introduction intro-\S+ for the first sender/

  it('a token on argv is refused (usage) and never echoed; --token-on-argv takes it', async () => {
    const secret = token()
    const line = await fails(introduce(secret), 'usage', 2)
    expect(line).toContain('visible to other users (ps)')
    expect(line).toContain('--token-file')
    expect(line).not.toContain(secret)
    expect(await fails(introduce(), 'usage', 2)).toContain('needs --token-file F')
    const r = await run(introduce(secret, '--token-on-argv'))
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(holding)
    expect(r.stdout).not.toContain(secret)
  })

  it('reads the token from --token-file F, or from stdin with --token-file -', async () => {
    const file = path.join(dir, 'token')
    await writeFile(file, `${token()}\n`, { mode: 0o600 })
    const agent = 'https://127.0.0.1:8444'
    const fromFile = await run(introduce('--token-file', file, '--agent', agent))
    expect(fromFile.code, fromFile.stderr).toBe(0)
    expect(fromFile.stdout).toMatch(new RegExp(`^holding introduction intro-\\S+ for ${agent}\\n$`))
    const fromStdin = await run(introduce('--token-file', '-'), {}, `${token()}\n`)
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(fromStdin.stdout).toMatch(holding)
    // A file that holds no token is refused, and not echoed.
    const line = await fails(introduce('--token-file', secrets), 'invalid_input', 2)
    expect(line).not.toContain('hunter2')
  })
})

describe('runtime failures exit 1', () => {
  it('a directory without an identity, for every command that opens one', async () => {
    const empty = path.join(dir, 'nobody')
    for (const args of [
      ['identity', '--dir', empty],
      ['rotate', '--dir', empty],
      ['contacts', '--dir', empty, 'list'],
      ['send', '--dir', empty, '--to', didKeyId, '--text', 'x'],
      ['listen', '--dir', empty, '--relay', 'https://127.0.0.1:9'],
      ['inbox', '--dir', empty, '--port', String(await freePort()), '--dev-tls'],
    ]) {
      expect(await fails(args, 'no_identity', 1)).toContain(`agentmsg init --dir ${empty}`)
    }
  })

  it('init on a directory that holds an identity', async () => {
    expect(await fails(['init', '--dir', didKey], 'identity_exists', 1)).toContain('--force')
  })

  it('a directory another process holds, which takes no requests (no control socket)', async () => {
    const held = path.join(dir, 'held')
    expect((await run(['init', '--dir', held])).code).toBe(0)
    const storage = await fsStorage({ dir: held })
    try {
      for (const args of [
        ['identity', '--dir', held],
        ['init', '--dir', held, '--force'],
      ]) {
        const line = await fails(args, 'in_use', 1)
        expect(line).toContain(`process ${process.pid}`)
      }
    } finally {
      await storage.close?.()
    }
  })

  it('contacts remove of an agent that is not a contact', async () => {
    await fails(
      [
        'contacts',
        '--dir',
        didKey,
        'remove',
        'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
      ],
      'not_found',
      1,
    )
  })

  it('a relay refused by the address policy names the relay and the flag', async () => {
    const closed = `https://127.0.0.1:${await freePort()}`
    const send = ['send', '--dir', didKey, '--to', didKeyId, '--relay', closed, '--text', 'x']
    const line = await fails(send, 'forbidden', 1)
    expect(line).toContain('127.0.0.1')
    expect(line).toContain('--allow-private')
  })

  describe('a port in use', () => {
    let server: Server
    let port: number
    beforeAll(async () => {
      port = await freePort()
      server = createServer()
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    })
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

    it('inbox and relay say which and what to do', async () => {
      const inbox = ['inbox', '--dir', didKey, '--port', String(port), '--dev-tls']
      expect(await fails(inbox, 'port_in_use', 1)).toContain('--port')
      const relay = [
        'relay',
        '--data',
        path.join(dir, 'relay'),
        '--port',
        String(port),
        '--dev-tls',
      ]
      expect(await fails(relay, 'port_in_use', 1)).toContain(String(port))
    })
  })
})
