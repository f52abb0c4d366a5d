/**
 * Bob, the agent this app is: created on the first request to his route, once per server
 * process. His https transport hands its inbox handler to `mount` instead of serving it on a
 * server of its own; the route handler answers with it.
 */
import { createNodeAgent, safeText } from '@agentmsg/client/node'
import { httpsTransport, type InboxHandler } from '@agentmsg/transport-https/node'

/** Where app/agents/bob/[...agentmsg]/route.ts serves him. */
const BASE_PATH = '/agents/bob'
const { PUBLIC_ORIGIN, HOST = '127.0.0.1', PORT = '8453' } = process.env
const origin = PUBLIC_ORIGIN ?? `https://${HOST}:${PORT}`

async function start(): Promise<InboxHandler> {
  let inbox: InboxHandler | undefined
  const agent = await createNodeAgent({
    // A URL agent: his id is his public URL, his identity document is served by his inbox.
    identity: { agentId: `${origin}${BASE_PATH}` },
    transports: [httpsTransport({ webInbox: { basePath: BASE_PATH, mount: (h) => (inbox = h) } })],
  })
  // Only verified messages get here: signature, replay and authentication level checked.
  agent.on('message', (m) => {
    console.log(`message ${m.level} ${safeText(m.from)}: ${safeText(m.text)}`)
  })
  console.log(`agent ${agent.id} started`)
  return inbox!
}

// On globalThis: Next may evaluate this module more than once in one process.
const shared = globalThis as { agentmsgBob?: Promise<InboxHandler> }

/** Bob's inbox handler, starting Bob on first use. */
export function agentInbox(): Promise<InboxHandler> {
  shared.agentmsgBob ??= start().catch((error: unknown) => {
    shared.agentmsgBob = undefined // the next request tries again
    throw error
  })
  return shared.agentmsgBob
}
