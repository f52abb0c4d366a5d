import { type ChildProcess, spawn } from 'node:child_process'
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
import { createAddressPolicy, createNodeFetch } from '@agentmsg/transport-https/node'

// The CLI is tested as users run it: the built bin in a child process (`npm test` builds first).
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))

export function run(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
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
  /** A fetch that trusts the inbox's development certificate. */
  fetch: typeof fetch
  inboxUrl: string
  /** The development certificate's file (what clients pass as `--ca`). */
  certFile: string
  /** SIGTERM, resolving with the exit code. */
  stop: () => Promise<number | null>
}

/** Start `agentmsg inbox --dev-tls` (and `flags`) on `dir` and wait until it listens. */
export async function startInbox(
  dir: string,
  port: number,
  flags: string[] = [],
): Promise<InboxProcess> {
  const child = spawn(
    process.execPath,
    [CLI, 'inbox', '--dir', dir, '--port', String(port), '--dev-tls', ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (err += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const certLine = waitFor(child, 'stderr', /development certificate: /)
  const listening = await Promise.race([
    waitFor(child, 'stderr', /listening on/),
    exited.then((code) => {
      throw new Error(`agentmsg inbox exited (${code}): ${err}`)
    }),
  ])
  const certFile = (await certLine).split('development certificate: ')[1]!.split(' (')[0]!
  const ca = await readFile(certFile, 'utf8')
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    fetch: createNodeFetch({ ca, addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }) }),
    inboxUrl: listening.split('listening on ')[1]!.trim(),
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
  /** Its development certificate's file (what clients pass as `--ca`). */
  certFile: string
  dataDir: string
  /** SIGTERM, resolving with the exit code. */
  stop: () => Promise<number | null>
}

/**
 * Start `agentmsg relay --dev-tls` (and `flags`) on a free port, data in `dataDir`, with `env`
 * added to the environment; wait until it listens.
 */
export async function startRelay(
  dataDir: string,
  flags: string[] = [],
  env: Record<string, string> = {},
): Promise<RelayProcess> {
  const port = await freePort()
  const child = spawn(
    process.execPath,
    [CLI, 'relay', '--data', dataDir, '--port', String(port), '--dev-tls', ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  )
  let err = ''
  child.stderr!.on('data', (d) => (err += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const certLine = waitFor(child, 'stderr', /development certificate: /)
  const listening = await Promise.race([
    waitFor(child, 'stderr', /listening on/),
    exited.then((code) => {
      throw new Error(`agentmsg relay exited (${code}): ${err}`)
    }),
  ])
  return {
    url: listening.split('listening on ')[1]!.split(' ')[0]!,
    certFile: (await certLine).split('development certificate: ')[1]!.split(' (')[0]!,
    dataDir,
    stop: () => {
      child.kill('SIGTERM')
      return exited
    },
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
