/**
 * "Echo", the Node agent of the demo page: a relay-only did:key agent kept on disk (so the page
 * finds the same id after a restart) that answers every message with its text, in the same
 * conversation, through the demo's own relay, sealed as any send through an untrusted relay is
 * (PROFILE §8). Anyone who knows its id may write to it: it never dials what a sender names
 * (./network.mjs), and the start script escapes what it logs.
 *
 * It is also subscribed to the page's room (a topic, PROFILE §9): a room message it can open
 * it answers the same way, to its poster only; one sealed for the other members (Echo was
 * removed from the poster's list) it cannot read, and says so in the log.
 */
import path from 'node:path'
import { createNodeAgent } from '@agentmsg/client/node'
import { fsStorage } from '@agentmsg/storage-fs'
import { localNetwork } from './network.mjs'

/** Longest text echoed back: messages come from anyone who knows the id. */
const MAX_ECHO = 2000

/**
 * @param {{ home: string, relayUrl: string, ca: string, room: string,
 *   log: (line: string) => void }} o
 */
export async function startEchoAgent(o) {
  const storage = await fsStorage({ dir: path.join(o.home, 'demo', 'echo-agent') })
  let agent
  try {
    agent = await createNodeAgent({
      storage,
      relays: [o.relayUrl],
      ...localNetwork(o.relayUrl, o.ca),
      onError: (e) => o.log(`echo: ${e?.message ?? e}`),
    })
  } catch (error) {
    await storage.close?.()
    throw error
  }
  agent.on('error', (e) => o.log(`echo: refused a message: ${e.error?.message ?? e.error}`))
  agent.on('message', async (m) => {
    const where = m.topic ? `in ${m.topic} ` : ''
    if (m.sealed === 'not-for-me') {
      o.log(`echo: ${where}from ${m.from.slice(0, 24)}…: sealed for others — not for me`)
      return
    }
    const text = m.text.length > MAX_ECHO ? `${m.text.slice(0, MAX_ECHO)}…` : m.text
    try {
      const r = await agent.reply(m, `echo: ${text}`, { route: 'relay', relays: [o.relayUrl] })
      o.log(
        `echo: ${where}"${text.slice(0, 60)}" from ${m.from.slice(0, 24)}… (level ${m.level}, ${m.sealed ? 'sealed' : 'plaintext'}) → answered via ${r.relayUrl ?? r.route}`,
      )
    } catch (error) {
      // Not rethrown: the message was handled (shown); a failed answer is not redelivered.
      o.log(`echo: could not answer ${m.from.slice(0, 24)}…: ${error?.message ?? error}`)
    }
  })
  // Subscribed once: the subscription is kept in its storage across restarts.
  try {
    if (!agent.topics().includes(o.room)) await agent.subscribe(o.room)
  } catch (error) {
    await agent.close()
    await storage.close?.()
    throw error
  }
  return {
    id: agent.id,
    async close() {
      await agent.close()
      await storage.close?.()
    },
  }
}
