/**
 * Sealing on send (PROFILE §8, SPEC §5.7): which copies of a message get a sealed body, and for
 * which key. A copy is sealed by default unless its target is confidential (TLS to the peer
 * itself, or relays the agent trusts with bodies, SPEC §5.7.2): the transport says so for each
 * target, a custom transport's targets are not unless it declares them so. The sealed-box
 * cryptography is imported only when something is sealed, so a bundle whose agent never seals
 * does not load it.
 */

import {
  AgentMsgError,
  type DeliveryTarget,
  didKeyFragment,
  isDidKey,
  type Message,
  normalizeAgentUrl,
  publicKeyFromDidKey,
} from '@agentmsg/core'
import { base64urlDecode } from '@agentmsg/core/http'
import type { KeyStore } from '@agentmsg/core/receive'
import type { SealRecipient } from '@agentmsg/core/sealed-box'
import type { Documents } from './documents.js'
import type { PlannedTarget } from './route.js'
import type { RelayTrust, SendOptions } from './types.js'

const TRUST_LEVELS: ReadonlySet<string> = new Set<RelayTrust>([
  'untrusted',
  'trusted',
  'self-operated',
])

/** How a send seals: the targets left to try, and whether the copy for each is sealed. */
export interface SealPlan {
  targets: PlannedTarget[]
  /** The recipient's key, when some copy is sealed. */
  recipient?: SealRecipient
  seals(target: DeliveryTarget): boolean
}

const NOTHING_SEALED = (targets: PlannedTarget[]): SealPlan => ({ targets, seals: () => false })

export class Sealing {
  readonly #documents: Pick<Documents, 'document'>
  readonly #keyStore: () => Promise<KeyStore>

  constructor(o: {
    documents: Pick<Documents, 'document'>
    /** The key store loads with the receive side (./receive.ts). */
    keyStore: () => Promise<KeyStore>
  }) {
    this.#documents = o.documents
    this.#keyStore = o.keyStore
  }

  /**
   * The sealing of a send to `to` over `targets`. `seal: true` seals every copy and fails when
   * the key is unknown; `seal: false` seals none. By default, copies for targets that are not
   * confidential are sealed; when the key is unknown they are dropped from the route (plaintext is sent only
   * with `allowPlaintext`), and the send fails when nothing is left.
   *
   * @throws AgentMsgError `not_found` when a copy must be sealed and `to`'s key is unknown.
   */
  async plan(
    targets: PlannedTarget[],
    to: string,
    options: Pick<SendOptions, 'seal' | 'allowPlaintext'>,
  ): Promise<SealPlan> {
    if (options.seal === false) return NOTHING_SEALED(targets)
    const wants = (t: DeliveryTarget) => options.seal === true || t.confidential !== true
    if (!targets.some((t) => wants(t.target))) return NOTHING_SEALED(targets)
    const recipient = await this.recipientKey(to)
    if (recipient) return { targets, recipient, seals: wants }
    if (options.seal === true) throw cannotSeal(to, 'seal: false')
    if (options.allowPlaintext) return NOTHING_SEALED(targets)
    const unsealed = targets.filter((t) => !wants(t.target))
    if (unsealed.length === 0) throw cannotSeal(to, 'allowPlaintext: true')
    return NOTHING_SEALED(unsealed)
  }

  /**
   * The key to seal to (PROFILE §8): a did:key's own; a URL agent's active Ed25519 key from its
   * identity document (the newest when several are active); failing that, its one pinned key.
   */
  async recipientKey(agent: string): Promise<SealRecipient | undefined> {
    if (isDidKey(agent)) {
      const publicKey = publicKeyFromDidKey(agent)
      return { agent, keyId: `${agent}#${didKeyFragment(agent)}`, publicKey }
    }
    const doc = await this.#documents.document(agent).catch(() => undefined)
    if (doc && !('status' in doc)) {
      const active = doc.keys
        .filter((k) => k.type === 'ed25519' && k.status === 'active')
        .sort((a, b) => Date.parse(b.created) - Date.parse(a.created))[0]
      if (active) {
        const publicKey = base64urlDecode(active.public_key, 'public_key')
        return { agent, keyId: `${agent}#${active.key_id}`, publicKey }
      }
      return undefined
    }
    const keyStore = await this.#keyStore()
    const pinned = (await keyStore.keysOf(agent)).filter((k) => k.source === 'pinned')
    if (pinned.length !== 1) return undefined
    const { fragment, publicKey } = pinned[0]!
    return { agent, keyId: `${agent}#${fragment}`, publicKey: base64urlDecode(publicKey) }
  }
}

/** `unsigned` with its body sealed for `recipient` and `security.encryption` set; sign it next. */
export async function sealMessage(unsigned: Message, recipient: SealRecipient): Promise<Message> {
  const { sealBody } = await import('@agentmsg/core/sealed-box')
  const { body, encryption } = sealBody(unsigned, [recipient])
  const security = { ...unsigned.security, signatures: unsigned.security?.signatures ?? [] }
  return { ...unsigned, body, security: { ...security, encryption } }
}

/**
 * Whether the agent trusts the relay at a URL with bodies (SPEC §5.7.2): `trusted` or
 * `self-operated` in `relayTrust`; every other relay is `untrusted`.
 */
export function relayTrusts(given: Record<string, RelayTrust>): (url: string) => boolean {
  const trusted = new Set<string>()
  for (const [url, trust] of Object.entries(given)) {
    if (!TRUST_LEVELS.has(trust)) {
      throw new TypeError(
        `relayTrust[${JSON.stringify(url)}] must be 'untrusted', 'trusted' or 'self-operated'`,
      )
    }
    if (trust !== 'untrusted') trusted.add(normalizeAgentUrl(url))
  }
  return (url) => {
    try {
      return trusted.has(normalizeAgentUrl(url))
    } catch {
      return false
    }
  }
}

function cannotSeal(to: string, way: string): AgentMsgError {
  return new AgentMsgError(
    'not_found',
    `cannot seal for ${to}: its key is unknown (no identity document could be fetched and no ` +
      `key is pinned); pin its key, mark the relay trusted in relayTrust, or pass ${way}`,
  )
}
