/**
 * The relay as users run it, in a child process: the built `agentmsg` CLI (`npm run build`
 * first; `npm test` does). Shared by the crash test and the multi-node PostgreSQL test.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'

export const CLI = fileURLToPath(new URL('../../cli/dist/cli.js', import.meta.url))

/** Throw a clear error when the CLI was not built. */
export function requireBuiltCli(): void {
  if (!existsSync(CLI))
    throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
}

export interface RelayProcess {
  child: ChildProcess
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** What it printed so far (stdout and stderr). */
  output: () => string
  /** The development CA file it printed (with `--dev-tls`). */
  certFile: string
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/**
 * Start `agentmsg relay --data DIR --host 127.0.0.1 --port PORT --dev-tls --allow-private
 * 127.0.0.1 …extra`; resolves once it printed "listening on" and its development CA.
 */
export function startRelayProcess(
  dataDir: string,
  port: number,
  extra: string[] = [],
  startTimeoutMs = 20_000,
): Promise<RelayProcess> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'relay',
      '--data',
      dataDir,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--dev-tls',
      '--allow-private',
      '127.0.0.1',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  return new Promise((resolve, reject) => {
    let certFile: string | undefined
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`relay did not listen within ${startTimeoutMs} ms:\n${out}`))
    }, startTimeoutMs)
    const onData = (d: Buffer) => {
      out += d
      const cert = /development CA: (.+?) \(/.exec(out)
      if (cert) certFile = cert[1]
      if (/listening on /.test(out) && certFile !== undefined) {
        clearTimeout(timer)
        resolve({ child, exited, output: () => out, certFile })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
    void exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`relay exited (code ${code}, signal ${signal}) before listening:\n${out}`))
    })
  })
}

/** True while the process has not exited. */
export function isRunning(relay: RelayProcess): boolean {
  return relay.child.exitCode === null && relay.child.signalCode === null
}

/** SIGKILL the relay; throws when it had exited by itself before. */
export async function killHard(relay: RelayProcess): Promise<void> {
  if (isRunning(relay)) relay.child.kill('SIGKILL')
  const { signal, code } = await relay.exited
  if (signal !== 'SIGKILL')
    throw new Error(`relay exited with code ${code} before the SIGKILL:\n${relay.output()}`)
}
