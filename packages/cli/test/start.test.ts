import { spawn } from 'node:child_process'
import { mkdtemp } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

// `npm start` runs scripts/start.mjs after the build: a relay on SQLite plus the demo. Run it
// the same way (built packages), with its own data dir and port, in the mode that exits.
const START = fileURLToPath(new URL('../../../scripts/start.mjs', import.meta.url))

it('npm start: relay on SQLite, SSE and WebSocket delivery, the levels walk-through', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port
      s.close(() => resolve(p))
    })
  })
  const data = await mkdtemp(path.join(tmpdir(), 'agentmsg-start-'))
  const child = spawn(process.execPath, [START], {
    env: { ...process.env, PORT: String(port), AGENTMSG_DATA: data, AGENTMSG_DEMO_EXIT: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (out += d))
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('exit', (c) => {
      clearTimeout(timer)
      resolve(c)
    })
  })
  expect(out).toContain(`relay listening on https://127.0.0.1:${port}`)
  expect(out).toMatch(
    /alice got "Hi Alice, lunch on Tuesday\?" .*verified at level 3; trace relay:https:\/\/127\.0\.0\.1/,
  )
  expect(out).toMatch(/bob got "Tuesday works\." .*verified at level 3/)
  expect(out).toMatch(/refused: 401 insufficient_auth_level/)
  expect(code).toBe(0)
}, 120_000)
