/**
 * The message legs of one runtime session, judged from both ends: the Node agent sends one
 * message to each of the runtime's agents once they are `ready`, the runtime reports what its
 * agent received and how it replied, and the Node agent must get that reply.
 *
 * | leg       | Node → runtime                       | runtime → Node                   |
 * |-----------|--------------------------------------|----------------------------------|
 * | inbox     | its inbox on the runtime's server    | the sender, to the Node inbox    |
 * |           | (level 2: the Node agent's document) | (level 2: the runtime's document)|
 * | relay-sse | the relay, body sealed, SSE stream   | the relay, sealed (level 3)      |
 * | relay-ws  | the same over a WebSocket stream     | the same                         |
 */

/** What each leg must show, beside the text and the reply arriving. */
const EXPECT = {
  inbox: { level: 2, transport: 'https', sealed: false, route: 'direct', replyLevel: 2 },
  'relay-sse': { level: 2, transport: 'relay', sealed: true, route: 'relay', replyLevel: 3 },
  'relay-ws': { level: 2, transport: 'relay', sealed: true, route: 'relay', replyLevel: 3 },
}

const NAMES = {
  inbox: (server) =>
    `inbox: a message from Node over ${server} (https), the reply through the sender`,
  'relay-sse': () => 'relay (SSE): a sealed message from Node, the reply through the relay',
  'relay-ws': () => 'relay (WebSocket): a sealed message from Node, the reply through the relay',
}

/** The legs a session runs: the inbox, and a relay agent per stream mode. */
export const LEGS = Object.keys(EXPECT)
export const MODES = ['sse', 'ws']

/**
 * Send the Node agent's message to each leg's agent (`ids` from the `ready` event). Resolves with
 * `{ leg: { text, conversationId } | { error } }`.
 */
export async function sendToLegs(node, ids) {
  const sent = {}
  await Promise.all(
    LEGS.map(async (leg) => {
      const text = `hello ${leg} from node`
      try {
        const options = leg === 'inbox' ? {} : { relays: [node.relayUrl] }
        const r = await node.agent.send(ids[leg], text, options)
        sent[leg] = { text, conversationId: r.conversationId, route: r.route, sealed: r.sealed }
      } catch (e) {
        sent[leg] = { error: String(e?.stack ?? e) }
      }
    }),
  )
  return sent
}

/**
 * One check per leg: `received` is the runtime's event for it, `reply` the message the Node
 * agent got back (or undefined), `errors` the runtime's error events for it.
 */
export function judgeLeg(leg, { server, id, sent, received, reply, errors }) {
  const e = EXPECT[leg]
  const problems = []
  const want = (what, got, expected) => {
    if (got !== expected)
      problems.push(`${what} ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`)
  }
  if (!sent || sent.error) problems.push(`Node could not send: ${sent?.error ?? 'not sent'}`)
  else {
    want('Node send route', sent.route, e.route)
    want('Node send sealed', sent.sealed, e.sealed)
  }
  if (!received) problems.push('the runtime agent received nothing')
  else {
    want('received text', received.text, sent?.text)
    want('received level', received.level, e.level)
    want('received transport', received.transport, e.transport)
    want('received sealed', received.sealed, e.sealed)
    if (received.reply?.error) problems.push(`reply failed: ${received.reply.error}`)
    else {
      want('reply route', received.reply?.route, e.route)
      want('reply sealed', received.reply?.sealed, e.sealed)
    }
  }
  if (!reply) problems.push('the Node agent got no reply')
  else {
    want('reply from', reply.from, id)
    want('reply text', reply.text, `re: ${sent?.text}`)
    want('reply level at Node', reply.level, e.replyLevel)
    want('reply transport at Node', reply.transport, e.transport)
  }
  for (const error of errors) problems.push(`runtime error: ${error}`)
  const detail = problems.length
    ? problems.join('; ')
    : `level ${received.level} → runtime, level ${reply.level} → Node, via ${e.transport}${e.sealed ? ', sealed both ways' : ''}`
  return { name: NAMES[leg](server), ok: problems.length === 0, detail }
}
