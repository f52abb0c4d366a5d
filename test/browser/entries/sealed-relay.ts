/**
 * In-page side of `../sealed-relay.spec.ts`: a relay-only did:key agent as an app makes one,
 * `createAgent` with its relays and IndexedDB storage and no sealing options at all, so what
 * the spec sees is the default (PROFILE §8, SPEC §5.7.2: relays are untrusted unless the agent
 * says otherwise). It records what its `message` listener is handed, `sealed` included, and
 * sends through the relay when asked (`_relay-only-agent.ts`).
 */
import { type RelayOnlyAgent, relayOnlyAgent } from './_relay-only-agent.js'

/** One message handed to the page's `message` listener. */
export interface SealedSeen {
  messageId: string
  from: string
  text: string
  sealed: boolean
  transport: string
  level: number
  /** The body parts as the agent handed them (opened, when it came sealed). */
  parts: unknown
}

export interface SealedStart {
  id: string
  isSecureContext: boolean
  origin: string
}

declare global {
  // eslint-disable-next-line no-var
  var __sealedRelay: Omit<RelayOnlyAgent<SealedSeen>, 'start'> & {
    start(relayUrl: string, dbName: string): Promise<SealedStart>
  }
}

const agent = relayOnlyAgent<SealedSeen>((m) => ({
  messageId: m.message.message_id,
  from: m.from,
  text: m.text,
  sealed: m.sealed === true,
  transport: m.transport,
  level: m.level,
  parts: m.message.body.parts,
}))

globalThis.__sealedRelay = {
  ...agent,
  async start(relayUrl, dbName) {
    const a = await agent.start(relayUrl, dbName)
    return { id: a.id, isSecureContext: globalThis.isSecureContext, origin: location.origin }
  },
}
