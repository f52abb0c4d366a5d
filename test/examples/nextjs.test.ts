/**
 * examples/nextjs as a Next.js user runs it: `npm install` there when Next is missing (Next is
 * that example's dependency, not the repository's), `next build`, then its HTTPS server
 * (server.mjs: `node:https` and `next({ dev: false })`, a certificate from the development CA
 * of this run's AGENTMSG_HOME). A real agent's message reaches Bob's route handler
 * (app/agents/bob/[...agentmsg]/route.ts) and is printed verified; a tampered one is refused
 * 401 through Next. The example runs the packages' built `dist/` (`npm test` builds first).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deliverTampered, type ExampleEnv, exampleEnv, freePort, sender } from './helpers.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const dir = path.join(root, 'examples/nextjs')
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' }

/** Run a command in the example's directory; rejects with its output when it fails. */
async function run(command: string, args: string[]): Promise<void> {
  const child = spawn(command, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d))
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve))
  if (status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${status}:\n${output}`)
}

let examples: ExampleEnv
let server: ChildProcess | undefined
let bob: string
let printed = ''

/** Resolves once the server printed `line`. */
function printedLine(line: string, timeoutMs = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!printed.split('\n').includes(line)) return
      clearInterval(poll)
      clearTimeout(timer)
      resolve()
    }
    const poll = setInterval(check, 50)
    const timer = setTimeout(() => {
      clearInterval(poll)
      reject(new Error(`the server did not print ${JSON.stringify(line)}:\n${printed}`))
    }, timeoutMs)
    check()
  })
}

beforeAll(async () => {
  for (const pkg of ['client', 'transport-https', 'dev-tls']) {
    if (!existsSync(path.join(root, 'packages', pkg, 'dist/index.js'))) {
      throw new Error(`packages/${pkg}/dist is missing: run \`npm run build\` first`)
    }
  }
  if (!existsSync(path.join(dir, 'node_modules/next/package.json'))) {
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'])
  }
  await run(process.execPath, ['node_modules/next/dist/bin/next', 'build'])
  examples = await exampleEnv()
  const port = await freePort()
  bob = `https://127.0.0.1:${port}/agents/bob`
  server = spawn(process.execPath, ['server.mjs'], {
    cwd: dir,
    env: { ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  server.stdout!.setEncoding('utf8').on('data', (d: string) => (printed += d))
  server.stderr!.setEncoding('utf8').on('data', (d: string) => (printed += d))
  await printedLine(`${bob} is listening`, 60_000)
}, 600_000)

afterAll(async () => {
  if (!server || server.exitCode !== null) return
  const exited = new Promise((resolve) => server!.once('exit', resolve))
  server.kill('SIGTERM')
  await exited
})

describe('examples/nextjs: an agent inbox as an App Router route handler', () => {
  it('receives a signed message from a real agent, verified at level 3', async () => {
    const alice = await sender(examples)
    try {
      const sent = await alice.send(bob, 'hello from alice')
      expect(sent).toMatchObject({ route: 'direct', transport: 'https' })
      expect(sent.pending).toBeUndefined()
      await printedLine(`message 3 ${alice.id}: hello from alice`)
    } finally {
      await alice.close()
    }
  })

  it('serves the identity document and refuses a tampered message 401 through Next', async () => {
    const doc = await examples.fetch(`${bob}/.well-known/agentmsg/identity`)
    expect(doc.status).toBe(200)
    expect(((await doc.json()) as { agent_id: string }).agent_id).toBe(bob)
    expect(await deliverTampered(examples, bob)).toEqual({
      status: 401,
      code: 'invalid_signature',
    })
    expect(printed).not.toContain('pay 1000')
  })
})
