import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { createServer } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type Message,
  signMessage,
} from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'

// The CLI is tested as users run it: the built bin in a child process (`npm test` builds first).
// AGENTMSG_CLI_FROM_SOURCE=1 runs its TypeScript sources instead (tsx, the `@agentmsg/source`
// condition), for working on the CLI without a build.
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))
const FROM_SOURCE = process.env.AGENTMSG_CLI_FROM_SOURCE === '1'
export const CLI_ARGS = FROM_SOURCE
  ? [
      '--conditions=@agentmsg/source',
      '--import',
      'tsx',
      fileURLToPath(new URL('../src/cli.ts', import.meta.url)),
    ]
  : [CLI]
/** Whether the CLI under test is there (the built bin, unless run from source). */
export const cliBuilt = () => FROM_SOURCE || existsSync(CLI)

// The dev CA lives in $AGENTMSG_HOME: the test runners set a temporary one (test/setup/).
if (!process.env.AGENTMSG_HOME) throw new Error('AGENTMSG_HOME is not set (test/setup/ sets it)')

/** Spawn `agentmsg <args>` with `env` added to the environment (stdin piped with `stdin`). */
export function spawnCli(
  args: string[],
  env: Record<string, string> = {},
  stdin: 'ignore' | 'pipe' = 'ignore',
): ChildProcess {
  return spawn(process.execPath, [...CLI_ARGS, ...args], {
    stdio: [stdin, 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  })
}

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Run `agentmsg <args>` to its end; `input`, when given, is its stdin. */
export function run(
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env, input === undefined ? 'ignore' : 'pipe')
    child.stdin?.end(input)
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (d) => (stdout += d))
    child.stderr!.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** Wait until `stream` has printed a line matching `re`. */
export function waitFor(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  re: RegExp,
  ms = 20_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${re} on ${stream}: ${buf}`)),
      ms,
    )
    child[stream]!.on('data', (d) => {
      buf += d
      const line = buf.split('\n').find((l) => re.test(l))
      if (line) {
        clearTimeout(timer)
        resolve(line)
      }
    })
  })
}

/** A running `agentmsg inbox` with everything it printed so far. */
export interface InboxProcess {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  /** A fetch that trusts the inbox's development CA. */
  fetch: typeof fetch
  inboxUrl: string
  /** The development CA's file (what clients pass as `--ca`). */
  certFile: string
  /** SIGTERM, resolving with the exit code. */
  stop: () => Promise<number | null>
}

/** Start `agentmsg inbox --dev-tls --json` (and `flags`) on `dir` and wait until it listens. */
export async function startInbox(
  dir: string,
  port: number,
  flags: string[] = [],
): Promise<InboxProcess> {
  const child = spawnCli([
    'inbox',
    '--dir',
    dir,
    '--port',
    String(port),
    '--dev-tls',
    '--json',
    ...flags,
  ])
  let out = ''
  let err = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (err += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const certLine = waitFor(child, 'stderr', /development CA: /)
  const listening = await Promise.race([
    waitFor(child, 'stderr', /listening on/),
    exited.then((code) => {
      throw new Error(`agentmsg inbox exited (${code}): ${err}`)
    }),
  ])
  const certFile = (await certLine).split('development CA: ')[1]!.split(' (')[0]!
  const ca = await readFile(certFile, 'utf8')
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    fetch: createNodeFetch({ ca, addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }) }),
    inboxUrl: listening.split('listening on ')[1]!.split(/[ ;]/)[0]!,
    certFile,
    stop: () => {
      child.kill('SIGTERM')
      return exited
    },
  }
}

/** A running `agentmsg relay` on SQLite in its data directory. */
export interface RelayProcess {
  url: string
  /** The development CA's file (what clients pass as `--ca`). */
  certFile: string
  dataDir: string
  /** SIGTERM, resolving with the exit code. */
  stop: () => Promise<number | null>
}

/**
 * Start `agentmsg relay --dev-tls` (and `flags`) on `port` (default: a free one), data in
 * `dataDir`, with `env` added to the environment; wait until it listens.
 */
export async function startRelay(
  dataDir: string,
  flags: string[] = [],
  env: Record<string, string> = {},
  port?: number,
): Promise<RelayProcess> {
  port ??= await freePort()
  const child = spawnCli(
    ['relay', '--data', dataDir, '--port', String(port), '--dev-tls', ...flags],
    env,
  )
  let err = ''
  child.stderr!.on('data', (d) => (err += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const certLine = waitFor(child, 'stderr', /development CA: /)
  const listening = await Promise.race([
    waitFor(child, 'stderr', /listening on/),
    exited.then((code) => {
      throw new Error(`agentmsg relay exited (${code}): ${err}`)
    }),
  ])
  return {
    url: listening.split('listening on ')[1]!.split(' ')[0]!,
    certFile: (await certLine).split('development CA: ')[1]!.split(' (')[0]!,
    dataDir,
    stop: () => {
      child.kill('SIGTERM')
      return exited
    },
  }
}

/** A running `agentmsg listen`, with everything it printed so far. */
export interface ListenProcess {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  /** The JSON lines printed so far (with `--json`). */
  messages: () => Array<Record<string, any>>
  /** SIGTERM (or `signal`), resolving with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>
  /** Resolves with the exit code once the process ended. */
  exited: Promise<number | null>
}

/** Start `agentmsg listen --dir dir` (and `flags`) and wait until it listens. */
export async function startListen(dir: string, flags: string[] = []): Promise<ListenProcess> {
  const child = spawnCli(['listen', '--dir', dir, ...flags])
  let out = ''
  let err = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (err += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  await Promise.race([
    waitFor(child, 'stderr', /listening on/),
    exited.then((code) => {
      throw new Error(`agentmsg listen exited (${code}): ${err}`)
    }),
  ])
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    messages: () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    stop: (signal = 'SIGTERM') => {
      child.kill(signal)
      return exited
    },
    exited,
  }
}

/** A failed run printed exactly one line, `agentmsg: <code>: …`, on stderr and nothing on stdout. */
export function oneErrorLine(r: RunResult, code: string): string {
  if (r.stdout !== '') throw new Error(`stdout is not empty: ${r.stdout}`)
  const lines = r.stderr.split('\n')
  if (lines.length !== 2 || lines[1] !== '')
    throw new Error(`not one stderr line: ${JSON.stringify(r.stderr)}`)
  if (!new RegExp(`^agentmsg: ${code}: \\S`).test(lines[0]!))
    throw new Error(`not "agentmsg: ${code}: …": ${lines[0]}`)
  if (/\bat .+:\d+:\d+\)?$/.test(lines[0]!)) throw new Error(`a stack trace: ${lines[0]}`)
  return lines[0]!
}

/** Resolves once `found` returns something (no deadline of its own: the test timeout is it). */
export async function eventually<T>(found: () => T | undefined): Promise<T> {
  for (;;) {
    const value = found()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A message from a new did:key sender to `to`, signed. */
export async function signedMessage(to: string, text: string): Promise<Message> {
  const keys = await generateKeyPair()
  const from = didKeyFromPublicKey(keys.publicKey)
  return signMessage(
    createMessage({
      from,
      to,
      conversationId: `c-${text.replace(/\W/g, '-')}`,
      sequence: 0,
      phase: 'greeting',
      text,
    }),
    ed25519Signer(keys),
  )
}

/** POST `message` to the inbox as JSON; the status and parsed body. */
export async function post(
  inbox: InboxProcess,
  message: Message,
): Promise<{ status: number; body: unknown }> {
  const res = await inbox.fetch(inbox.inboxUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': message.message_id },
    body: JSON.stringify(message),
  })
  return { status: res.status, body: await res.json() }
}

/** Every file under `dir` (recursively) whose content contains `needle`, with its mode. */
export async function filesContaining(
  dir: string,
  needle: string,
): Promise<Array<{ file: string; mode: number }>> {
  const found: Array<{ file: string; mode: number }> = []
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const file = path.join(entry.parentPath, entry.name)
    if ((await readFile(file, 'utf8')).includes(needle))
      found.push({ file, mode: (await stat(file)).mode & 0o777 })
  }
  return found
}
