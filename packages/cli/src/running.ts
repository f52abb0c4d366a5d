/**
 * The running part of `agentmsg inbox` and `listen`: print each verified message, take other
 * commands' requests on the control socket, stop cleanly on SIGINT/SIGTERM.
 */
import type { NodeAgent } from '@agentmsg/client/node'
import type { AgentStore } from './agent-dir.js'
import { type AgentRequest, perform } from './agent-ops.js'
import { describeError, info, untilSignal, writeOut } from './command.js'
import { type ControlServer, serveControl } from './control.js'
import { messageLine } from './print.js'

/**
 * Report what the agent cannot tell anyone else (a relay down and retried, a refused message):
 * one line each, `agentmsg: <code>: <message>`; the process goes on.
 */
export function reportError(error: unknown): void {
  const { code, message } = describeError(error)
  info(`${code}: ${message}`)
}

/**
 * Print messages until a signal (exit 0). A message is printed inside the `message` listener,
 * and the listener resolves once the line is handed to the OS: the client counts a message as
 * handled (and acknowledges it to its relay, or marks it in its inbox's store) only then
 * (PROFILE §6 persist → process), so a message is never lost between receipt and print.
 *
 * A stdout that fails (a closed pipe: `agentmsg listen | head -1`) ends the process at once,
 * with the listener still pending: the client counts a listener that rejects as handled too,
 * so the unprinted message must not get that far. It stays in the store (or the relay's
 * mailbox) and comes again next time; the lock a dead process leaves is taken over then.
 */
export async function runUntilStopped(o: {
  dir: string
  storage: AgentStore
  agent: NodeAgent
  json: boolean
  /** Printed on stderr once everything runs (where it listens, what to trust). */
  started: string[]
}): Promise<number> {
  const { agent, storage } = o
  let control: ControlServer | undefined
  const stdoutFailed = async (error: unknown): Promise<never> => {
    await control?.close().catch(() => {})
    // A closed pipe is how a reader says it has enough; anything else is a failure.
    const epipe = (error as NodeJS.ErrnoException | null)?.code === 'EPIPE'
    if (!epipe) reportError(error)
    process.exit(epipe ? 0 : 1)
  }
  process.stdout.on('error', (error) => void stdoutFailed(error))
  agent.on('message', async (m) => {
    try {
      await writeOut(messageLine(m, o.json))
    } catch (error) {
      await stdoutFailed(error)
    }
  })
  const signal = untilSignal()
  control = await serveControl(
    o.dir,
    (request) => perform(agent, storage, request as AgentRequest),
    info,
  )
  for (const line of o.started) info(line)
  info(`${await signal.done}: stopping`)
  await control?.close()
  await agent.close().catch(reportError)
  await storage.close?.()
  return 0
}
