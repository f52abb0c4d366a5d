/**
 * The terminal part of `npm start`, short: two relay-only Node agents (did:key, in memory) talk
 * through the local relay, Alice receiving over Server-Sent Events and Bob over WebSocket; every
 * message is verified by the receive pipeline before it is printed. (The authentication-level
 * walk-through of core is `node scripts/demo-levels.mjs`.)
 */
import { createNodeAgent } from '@agentmsg/client/node'
import { localNetwork } from './network.mjs'

/** @param {{ relayUrl: string, ca: string, log: (line: string) => void }} o */
export async function runTerminalDemo(o) {
  const agent = async (name, mode) => {
    const a = await createNodeAgent({
      relays: [o.relayUrl],
      mode,
      ...localNetwork(o.relayUrl, o.ca),
      onError: (e) => o.log(`  ${name}: ${e?.message ?? e}`),
    })
    a.on('error', (e) => o.log(`  ${name} error: ${e.error?.message ?? e.error}`))
    const inbox = a.messages()[Symbol.asyncIterator]()
    const next = async () => {
      const { value: m } = await inbox.next()
      const hop = m.message.trace?.received?.[0]?.by
      o.log(
        `  ${name} got "${m.text}" from ${m.from.slice(0, 24)}… (verified at level ${m.level}; trace ${hop}; ${m.sealed ? 'sealed' : 'plaintext'})`,
      )
      return m
    }
    return { agent: a, next }
  }
  const alice = await agent('alice', 'sse')
  const bob = await agent('bob', 'ws')
  try {
    o.log(
      `  alice ${alice.agent.id.slice(0, 24)}… receives over SSE, bob ${bob.agent.id.slice(0, 24)}… over WebSocket`,
    )
    await bob.agent.send(alice.agent.id, 'Hi Alice, lunch on Tuesday?', { relays: [o.relayUrl] })
    const got = await alice.next()
    await alice.agent.reply(got, 'Tuesday works.')
    await bob.next()
  } finally {
    await alice.agent.close()
    await bob.agent.close()
  }
}
