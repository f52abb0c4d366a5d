/**
 * The runtime's agents in the matrix, web APIs only: `createAgent` of @agentmsg/client with its
 * default memory storage, in three roles.
 *
 * - `inbox`: a URL agent (this runtime's server is its origin) that receives over the
 *   web-standard inbox handler of @agentmsg/transport-https, mounted in the runtime's own HTTP
 *   server, and replies through that package's sender (the isomorphic `httpsTransport`) to the
 *   Node agent's inbox.
 * - `relay-sse`, `relay-ws`: did:key agents that stream their mailbox on a relay (transport-relay's
 *   client) over SSE or a WebSocket, the one transport-relay's `#relay-ws` picks by the runtime's
 *   conditions (the `ws` package under `node`: Deno, Bun; else the global one: workerd), and
 *   reply through the relay. Failures reach `report` through `onError` (which also sees what the
 *   agents' `error` events carry).
 *
 * Each answers the first message it is handed with `re: <text>` and reports what it saw.
 */
import { createAgent } from '@agentmsg/client'
import { httpsTransport } from '@agentmsg/transport-https'

/**
 * Start the agents of one session: `mount(handler)` receives the inbox agent's handler;
 * `report(event)` gets one `received` event per agent once it replied, and `error` events.
 * Resolves with `{ ids, settled, close }`: the agents' ids by leg, a promise that resolves when
 * every agent replied, and `close()`.
 */
export async function startAgents({ agentId, relayUrl, modes, mount, report }) {
  const legs = {}
  const onError = (leg) => (error) =>
    report({ type: 'error', leg, error: error?.stack ?? String(error) })
  legs.inbox = await createAgent({
    identity: { agentId },
    // The inbox handler goes to the runtime's own server (`webInbox.mount`).
    transports: [httpsTransport({ webInbox: { mount } })],
    onError: onError('inbox'),
  })
  for (const mode of modes) {
    const leg = `relay-${mode}`
    legs[leg] = await createAgent({ relays: [relayUrl], mode, onError: onError(leg) })
  }
  const replied = Object.entries(legs).map(([leg, agent]) => answerOnce(leg, agent, report))
  return {
    ids: Object.fromEntries(Object.entries(legs).map(([leg, agent]) => [leg, agent.id])),
    settled: Promise.all(replied),
    close: () => Promise.all(Object.values(legs).map((agent) => agent.close())),
  }
}

/** Reply to the first message `agent` is handed, then report what it received and sent. */
function answerOnce(leg, agent, report) {
  return new Promise((resolve) => {
    const off = agent.on('message', async (m) => {
      off()
      const seen = {
        type: 'received',
        leg,
        from: m.from,
        text: m.text,
        level: m.level,
        transport: m.transport,
        sealed: m.sealed,
      }
      try {
        // An inbox agent answers on the direct route (the Node agent's inbox); relay agents
        // through the relay, although the Node agent also has an inbox.
        const sent = await agent.reply(
          m,
          `re: ${m.text}`,
          leg === 'inbox' ? {} : { route: 'relay' },
        )
        report({
          ...seen,
          reply: { route: sent.route, transport: sent.transport, sealed: sent.sealed },
        })
      } catch (e) {
        report({ ...seen, reply: { error: String(e?.stack ?? e) } })
      }
      resolve()
    })
  })
}
