/**
 * The control socket of a running `agentmsg inbox` or `listen`: `<dir>/control.sock`. The
 * directory's store has an exclusive lock, yet a URL agent must keep serving its identity
 * document (PROFILE §4) while it sends or rotates: so the running process takes `send`,
 * `identity`, `rotate`, `contacts` and topic (`subscribe`, `publish`, `group`) requests over
 * this socket, 0600 in the 0700 directory (only its owner, who can read the key files anyway,
 * connects). One JSON line each way.
 */

import { once } from 'node:events'
import { chmod, unlink } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import { PROFILE } from '@agentmsg/core'
import { CliError, describeError } from './command.js'

/** Largest request or answer line: a send carries at most a message's JSON value, escaped. */
const MAX_LINE_BYTES = 2 * PROFILE.maxBodyBytes
/** A client that has not sent its whole request by then is dropped. */
const REQUEST_TIMEOUT_MS = 30_000

export const controlPath = (dir: string) => path.join(path.resolve(dir), 'control.sock')

/** Read one LF-terminated line of at most {@link MAX_LINE_BYTES} from `socket`. */
function readLine(socket: net.Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const done = (error?: Error, line?: string) => {
      for (const [event, listener] of listeners) socket.off(event, listener)
      if (error) reject(error)
      else resolve(line!)
    }
    const onData = (chunk: Buffer) => {
      const end = chunk.indexOf(10)
      chunks.push(end === -1 ? chunk : chunk.subarray(0, end))
      size += end === -1 ? chunk.length : end
      if (size > MAX_LINE_BYTES) done(new Error('control line too long'))
      else if (end !== -1) done(undefined, Buffer.concat(chunks).toString('utf8'))
    }
    const listeners: Array<[string, (arg: Buffer & Error) => void]> = [
      ['data', onData],
      ['end', () => done(new Error('the control connection closed before a whole line'))],
      ['error', (error: Error) => done(error)],
    ]
    for (const [event, listener] of listeners) socket.on(event, listener)
  })
}

/**
 * Serve `handle` on `<dir>/control.sock`. The caller holds the directory's lock, so a socket
 * file already there is a dead process's and is replaced. `undefined` where Unix sockets are
 * not available (Windows) or the path is too long for one (`log` says so).
 */
export async function serveControl(
  dir: string,
  handle: (request: unknown) => Promise<unknown>,
  log: (text: string) => void,
): Promise<{ close(): Promise<void> } | undefined> {
  if (process.platform === 'win32') return undefined
  const file = controlPath(dir)
  await unlink(file).catch(() => {})
  const server = net.createServer((socket) => {
    socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy())
    socket.on('error', () => {})
    void readLine(socket).then(
      async (line) => {
        socket.setTimeout(0)
        let answer: unknown
        try {
          answer = { ok: true, result: await handle(JSON.parse(line)) }
        } catch (error) {
          const { code, message, exitCode } = describeError(error)
          answer = { ok: false, code, message, exitCode }
        }
        socket.end(`${JSON.stringify(answer)}\n`)
      },
      () => socket.destroy(),
    )
  })
  try {
    // The socket file is made in this call: made 0600, so no one else can connect even before
    // the chmod below (the directory may be more open than the 0700 fsStorage makes).
    const umask = process.umask(0o177)
    try {
      server.listen(file)
    } finally {
      process.umask(umask)
    }
    await once(server, 'listening')
    await chmod(file, 0o600)
  } catch (error) {
    server.close()
    log(
      `no control socket (${(error as Error).message}): other agentmsg commands cannot use ${dir} while this runs`,
    )
    return undefined
  }
  return {
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await unlink(file).catch(() => {})
    },
  }
}

/**
 * Ask the process serving `<dir>/control.sock` to run `request`. `undefined` when nobody
 * serves it; the running agent's failure is rethrown as a {@link CliError} with its code.
 */
export async function askRunning(
  dir: string,
  request: unknown,
): Promise<{ result: unknown } | undefined> {
  if (process.platform === 'win32') return undefined
  const socket = net.connect(controlPath(dir))
  try {
    await once(socket, 'connect')
  } catch (error) {
    socket.destroy()
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ECONNREFUSED') return undefined
    throw error
  }
  try {
    const answer = readLine(socket)
    socket.write(`${JSON.stringify(request)}\n`)
    const { ok, result, code, message, exitCode } = JSON.parse(await answer)
    if (ok) return { result }
    throw new CliError(
      code ?? 'failed',
      message ?? 'the running agent failed',
      exitCode === 2 ? 2 : 1,
    )
  } finally {
    socket.destroy()
  }
}
