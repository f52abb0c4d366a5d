import { type ChildProcess, spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { request } from 'node:https'
import { createServer, type Server } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { afterEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain ESM module of the demo, no declarations
import { localNetwork } from '../../../demo/node/network.mjs'

// `npm start` is scripts/start.mjs: the incremental build, then a relay on SQLite serving the
// browser demo at /demo/ plus the terminal demo. Run it the same way, on the built packages
// (AGENTMSG_SKIP_BUILD: the build is test/tooling/build-incremental.test.ts's), with its own
// port and AGENTMSG_HOME (a fresh directory under the runner's temporary one).
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const START = path.join(ROOT, 'scripts/start.mjs')
const running: ChildProcess[] = []

afterEach(async () => {
  for (const child of running.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }
})

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port
      s.close(() => resolve(p))
    })
  })
}

let homes = 0
function start(env: Record<string, string>) {
  // The runners' AGENTMSG_HOME is a temporary directory (test/setup/agentmsg-home.ts).
  const base = process.env.AGENTMSG_HOME
  if (!base) throw new Error('AGENTMSG_HOME must be set by the test runner')
  const home = path.join(base, `start-${process.pid}-${homes++}`)
  const child = spawn(process.execPath, [START], {
    cwd: ROOT,
    env: { ...process.env, AGENTMSG_HOME: home, AGENTMSG_SKIP_BUILD: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(child)
  const out = { stdout: '', stderr: '' }
  child.stdout!.on('data', (d) => (out.stdout += d))
  child.stderr!.on('data', (d) => (out.stderr += d))
  const exit = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  /** Resolves once stdout matches `re`; rejects if the process exits first. */
  const waitFor = (re: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = re.exec(out.stdout)
        if (m) resolve(m)
      }
      child.stdout!.on('data', check)
      check()
      void exit.then((c) =>
        reject(new Error(`start.mjs exited (${c}): ${out.stdout}${out.stderr}`)),
      )
    })
  return { child, out, exit, waitFor, home }
}

describe('npm start errors: one line, no stack', () => {
  it('PORT=abc: invalid_port, exit 2', async () => {
    const s = start({ PORT: 'abc' })
    expect(await s.exit).toBe(2)
    expect(s.out.stdout).toBe('')
    expect(s.out.stderr).toBe(
      'agentmsg: invalid_port: PORT="abc" is not a port number: use 1-65535 (0 picks a free one), e.g. PORT=8443 npm start\n',
    )
  })

  it('PORT=70000 is refused the same way', async () => {
    const s = start({ PORT: '70000' })
    expect(await s.exit).toBe(2)
    expect(s.out.stderr).toMatch(
      /^agentmsg: invalid_port: PORT="70000" is not a port number[^\n]*\n$/,
    )
  })

  it('a busy port: port_unavailable naming it and what to do, exit 1, before any build', async () => {
    const holder: Server = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const port = (holder.address() as { port: number }).port
    try {
      // Without AGENTMSG_SKIP_BUILD: the port is checked first, so nothing is built.
      const s = start({ PORT: String(port), AGENTMSG_SKIP_BUILD: '' })
      expect(await s.exit).toBe(1)
      expect(s.out.stdout).toBe('')
      expect(s.out.stderr).toBe(
        `agentmsg: port_unavailable: 127.0.0.1:${port} is already in use (another npm start?): stop that process or pick another port, e.g. PORT=${port + 1} npm start\n`,
      )
    } finally {
      await new Promise((resolve) => holder.close(resolve))
    }
  })
})

it('npm start: relay on SQLite, SSE and WebSocket delivery between two Node agents', async () => {
  const port = await freePort()
  const s = start({ PORT: String(port), AGENTMSG_DEMO_EXIT: '1' })
  const code = await s.exit
  const out = s.out.stdout + s.out.stderr
  expect(out).toContain(`relay listening on https://127.0.0.1:${port}`)
  expect(out).toMatch(
    /alice got "Hi Alice, lunch on Tuesday\?" .*verified at level 3; trace relay:https:\/\/127\.0\.0\.1:\d+; sealed/,
  )
  expect(out).toMatch(/bob got "Tuesday works\." .*verified at level 3/)
  expect(s.out.stderr).toBe('')
  expect(code).toBe(0)
}, 60_000)

it('the authentication-level walk-through runs on its own', async () => {
  const child = spawn(process.execPath, [path.join(ROOT, 'scripts/demo-levels.mjs')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(child)
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (out += d))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  expect(out).toMatch(/refused: 401 insufficient_auth_level/)
  expect(code).toBe(0)
}, 60_000)

describe('the demo page on the relay origin', () => {
  /** A raw request (the path sent exactly as given), trusting `ca`. */
  function raw(port: number, ca: string, method: string, pathname: string) {
    return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
      (resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method, path: pathname, ca }, (res) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (d) => (body += d))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
        })
        req.on('error', reject)
        req.end()
      },
    )
  }

  it('serves a fixed set of files with their types and a CSP; every other path is the relay’s', async () => {
    const port = await freePort()
    const s = start({ PORT: String(port) })
    const [, pageUrl] = await s.waitFor(/open\s+(\S+)\n/)
    const [, caFile] = await s.waitFor(/trust once\s+(\S+)\n/)
    expect(pageUrl).toBe(`https://127.0.0.1:${port}/demo/`)
    // The one file to trust is the machine's development CA, and it verifies the relay.
    expect(caFile).toBe(path.join(s.home, 'dev-ca', 'ca.pem'))
    const ca = await readFile(caFile!, 'utf8')
    const get = (p: string, method = 'GET') => raw(port, ca, method, p)

    const page = await get('/demo/')
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.body).toContain('<script type="module" src="/demo/app.js">')
    const csp = String(page.headers['content-security-policy'])
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain(`connect-src 'self' https://127.0.0.1:${port} wss://127.0.0.1:${port}`)
    expect(page.headers['x-content-type-options']).toBe('nosniff')

    const script = await get('/demo/app.js')
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8')
    expect(script.body).toContain('agentmsg-demo-alice')
    expect((await get('/demo/style.css')).headers['content-type']).toBe('text/css; charset=utf-8')
    const config = JSON.parse((await get('/demo/config.json')).body)
    expect(config).toEqual({
      relay: `https://127.0.0.1:${port}`,
      echo: expect.stringMatching(/^did:key:z6Mk/),
    })

    for (const p of ['/', '/demo']) {
      const r = await get(p)
      expect([r.status, r.headers.location]).toEqual([308, '/demo/'])
    }
    // No file system behind the table: traversals, encoded or not, are unknown paths (a plain
    // `..` is resolved by URL parsing first and lands on the relay, which has no such path).
    for (const p of [
      '/demo/../package.json',
      '/demo/..%2f..%2fpackage.json',
      '/demo/%2e%2e/%2e%2e/package.json',
      '/demo/index.html',
      '/demo/app.ts',
      '/demo//etc/passwd',
    ]) {
      const r = await get(p)
      expect([p, r.status]).toEqual([p, 404])
      expect(r.body).not.toContain('agentmsg-monorepo')
    }
    const post = await get('/demo/', 'POST')
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD'])
    // The relay still answers its own paths: an unsigned read is refused (PROFILE §9).
    const relay = await get('/relay/messages')
    expect(relay.status).toBeGreaterThanOrEqual(400)
    expect(JSON.parse(relay.body)).toMatchObject({ status: 'error' })
  }, 60_000)
})

/** A plain TCP listener on loopback that counts the connections it gets. */
async function countingListener() {
  let connections = 0
  const server = createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    connections: () => connections,
    close: () => new Promise((resolve) => server.close(resolve)),
  }
}

describe('Echo and strangers', () => {
  it('a stranger’s escape sequences are logged escaped; its from.relays are never dialled, the answer goes through the demo relay', async () => {
    const port = await freePort()
    const s = start({ PORT: String(port) })
    const [, echoId] = await s.waitFor(/Echo answers every message: (\S+)\n/)
    const [, caFile] = await s.waitFor(/trust once\s+(\S+)\n/)
    const ca = await readFile(caFile!, 'utf8')
    const relayUrl = `https://127.0.0.1:${port}`
    // The stranger names a loopback port of its choosing first as where it can be reached. It
    // listens on the demo relay as a twin with the same key, which never connects to the trap.
    const trap = await countingListener()
    const network = { ca, addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }) }
    const identity = { seed: crypto.getRandomValues(new Uint8Array(32)) }
    const inbox = await createNodeAgent({ identity, relays: [relayUrl], ...network })
    const stranger = await createNodeAgent({
      identity,
      relays: [trap.url, relayUrl],
      sendOnly: true,
      ...network,
    })
    const answers = inbox.messages()[Symbol.asyncIterator]()
    try {
      const text = 'hi \x1b]0;pwned\x07 \x1b[2J\x9b31m there'
      await stranger.send(echoId!, text, { relays: [relayUrl] })
      const [line, via] = await s.waitFor(/echo: (?:"hi .*answered via (\S+)|could not answer.*)\n/)
      expect(via, line).toBe(relayUrl)
      expect(trap.connections()).toBe(0)
      expect(line).toContain('hi \\u001b]0;pwned\\u0007 \\u001b[2J\\u009b31m there')
      for (const raw of ['\x1b', '\x07', '\x9b']) expect(s.out.stdout).not.toContain(raw)
      const { value: answer } = await answers.next()
      expect([answer.from, answer.text, answer.transport]).toEqual([
        echoId,
        `echo: ${text}`,
        'relay',
      ])
    } finally {
      await stranger.close()
      await inbox.close()
      await trap.close()
    }
  }, 60_000)

  it('the demo agents’ network connects to the demo relay only, whatever else is on loopback', async () => {
    const trap = await countingListener()
    try {
      const network = localNetwork('https://127.0.0.1:9', '')
      for (const f of [network.fetch, network.streamFetch]) {
        await expect(f(`${trap.url}/relay/publish`, { method: 'POST' })).rejects.toThrow(
          /connect to https:\/\/127\.0\.0\.1:9 only, not https:\/\/127\.0\.0\.1:\d+/,
        )
      }
      expect(await network.resolveIdentity(`${trap.url}/agents/x`)).toMatchObject({
        status: 'unavailable',
      })
      expect(() => new network.WebSocket(`${trap.url.replace('https', 'wss')}/relay/ws`)).toThrow(
        /connect to https:\/\/127\.0\.0\.1:9 only/,
      )
      expect(trap.connections()).toBe(0)
    } finally {
      await trap.close()
    }
  })
})
