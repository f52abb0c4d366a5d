/**
 * The running part of `agentmsg inbox` and `listen`: print each verified message (one human
 * line, or one JSON object per line with `--json`), take other commands' requests on the
 * control socket, stop cleanly on SIGINT/SIGTERM.
 */
import {
  type NodeAgent,
  type NodeAgentOptions,
  type ReceivedMessage,
  safeText,
} from '@agentmsg/client/node'
import { openAgentDir, rememberRelays, storedRelays } from './agent-dir.js'
import { type AgentRequest, perform } from './agent-ops.js'
import {
  CliError,
  describeError,
  info,
  networkFlags,
  relayFlags,
  safeJson,
  untilSignal,
  writeOut,
} from './command.js'
import { serveControl } from './control.js'
import { certificateCode, certificateFix } from './failure.js'

/** Report what the agent cannot tell anyone else (a relay down, a refused message); go on. */
export function reportError(error: unknown): void {
  const { code, message } = describeError(error)
  info(`${code}: ${message}`, 40)
}

/** The flags `inbox` and `listen` share. */
export const RUNNING_FLAGS = {
  dir: { type: 'string' },
  relay: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  ca: { type: 'string', multiple: true },
  'allow-private': { type: 'string', multiple: true },
} as const

type RunningFlags = Parameters<typeof networkFlags>[0] & { relay?: string[]; json?: boolean }

/**
 * Run the agent of `dir` until a signal (exit 0), printing each message: its relays are
 * `--relay` (then remembered) or the ones D remembers; `start` makes it from `base()` (called
 * once D may hold the dev CA its `--ca` names) and says what to print on stderr once it runs.
 */
export async function runAgentDir(
  command: string,
  dir: string,
  values: RunningFlags,
  start: (o: {
    agentId: string
    relays: string[]
    base: () => Promise<NodeAgentOptions>
  }) => Promise<{ agent: NodeAgent; started: string[] }>,
): Promise<number> {
  const given = relayFlags(command, values.relay)
  const { storage, agentId, identity } = await openAgentDir(dir)
  let running: { agent: NodeAgent; started: string[] }
  let relays: string[] = []
  try {
    relays = given.length ? given : await storedRelays(storage, identity)
    const base = async (): Promise<NodeAgentOptions> => ({
      storage,
      ...(relays.length ? { relays } : {}),
      ...(await networkFlags(values)),
      // A relay's certificate that does not verify ends the run (below), not reported forever.
      onError: (error) => certificateCode(error) || reportError(error),
    })
    running = await start({ agentId, relays, base })
    if (given.length) await rememberRelays(storage, relays)
  } catch (error) {
    await storage.close?.()
    throw error
  }
  // A message is printed inside the `message` listener, which resolves once the line is handed
  // to the OS: the client counts it as handled (acknowledged to its relay, or marked in the
  // inbox's store) only then (PROFILE §6 persist → process), so none is lost before its print.
  // A stdout that fails (`agentmsg listen | head -1`) ends the process at once, the listener
  // still pending (one that rejected would count as handled): the unprinted message stays in
  // the store or the mailbox and comes again next time.
  const { agent, started } = running
  let control: Awaited<ReturnType<typeof serveControl>>
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
      await writeOut(messageLine(m, values.json === true))
    } catch (error) {
      await stdoutFailed(error)
    }
  })
  // A relay's certificate that does not verify will not verify on the next try either: stop,
  // with the fix, instead of retrying. (One a sender's document came with is that sender's.)
  let untrusted: (line: string) => void = () => {}
  const failed = new Promise<string>((resolve) => (untrusted = resolve))
  agent.on('error', ({ error, transport, message }) => {
    const code = certificateCode(error)
    if (code && transport === 'relay' && !message) untrusted(certificateFix(relays.join(' '), code))
    else if (code) reportError(error)
  })
  const signal = untilSignal()
  control = await serveControl(
    dir,
    (request) => perform(agent, storage, request as AgentRequest),
    info,
  )
  for (const line of started) info(line)
  const end = await Promise.race([signal, failed.then((line) => new CliError('certificate', line))])
  if (typeof end === 'string') info(`${end}: stopping`)
  await control?.close()
  await agent.close().catch(reportError)
  await storage.close?.()
  if (typeof end !== 'string') throw end
  return 0
}

/**
 * One line per message. `--json`: the message (its body opened when it came sealed), the sender
 * (`sender` repeats `from`, as the first `inbox` lines named it), the conversation, the level
 * and where the key came from (PROFILE §5), known contact or not, the topic of a topic message,
 * sealed (PROFILE §8: true, false, or "not-for-me", sealed for other members), the transport.
 * Else: time received (UTC), sender, level, contact or new, sealed or plain, `[topic T]`, and
 * the text (escaped: peer text never drives the terminal), or the content type of a body without.
 */
function messageLine(m: ReceivedMessage, json: boolean): string {
  if (json) {
    const { message, from, conversationId: conversation, level, source, sealed, transport } = m
    const line = { message, from, sender: from, conversation, level, source }
    const fields = { known_contact: m.knownContact, topic: m.topic, sealed, transport }
    return `${safeJson({ ...line, ...fields })}\n`
  }
  const time = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
  const contact = m.knownContact ? 'contact' : 'new'
  const topic = m.topic === undefined ? '' : `[topic ${m.topic}]  `
  let text = m.text !== '' ? m.text : `[${m.message.content_type ?? 'no text'}]`
  // Sealed for the other members of its group: a subscriber outside it cannot open it (§8).
  if (m.sealed === 'not-for-me') text = 'not for me (sealed for other members)'
  return `${time}  ${safeText(m.from)}  level ${m.level} ${contact}  ${m.sealed ? 'sealed' : 'plain '}  ${safeText(topic + text)}\n`
}
