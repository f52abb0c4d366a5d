/** The minimal capabilities document of PROFILE §10, served when an inbox is given none. */
import { type JsonValue, type Phase, PROFILE } from '@agentmsg/core'
import type { RateLimit } from '@agentmsg/core/server'

// SPEC §2.4's phases: all of them are understood.
const PHASES: Phase[] = ['greeting', 'request', 'response', 'update', 'close', 'error']

/** What {@link defaultCapabilities} describes. */
export interface CapabilitiesInput {
  agentId: string
  /** The per-sender limit the inbox enforces; its numbers are stated (PROFILE §6). */
  perSender: RateLimit
  /** Encryption schemes the receiver opens (PROFILE §8). */
  encryption: readonly string[]
  /** Relays, copied from the identity document when it names some. */
  relay?: { urls: string[]; preference: string } | undefined
}

/**
 * `{agentmsg:5, agent_id, content_types, phases, auth_levels, encryption, max_message_bytes,
 * rate_limit:{messages_per_minute, burst}, relay?}` (PROFILE §10).
 */
export function defaultCapabilities(input: CapabilitiesInput): Record<string, JsonValue> {
  const doc: Record<string, JsonValue> = {
    agentmsg: 5,
    agent_id: input.agentId,
    content_types: ['application/json'],
    phases: [...PHASES],
    auth_levels: [0, 1, 2, 3],
    // Only what the receiver opens is advertised: a sender told `sealed_box` would seal
    // messages to us (PROFILE §8) that a receiver without our seeds cannot read.
    encryption: [...input.encryption],
    max_message_bytes: PROFILE.maxMessageBytes,
    rate_limit: {
      // JSON has no Infinity: an unlimited inbox states no number it could be held to.
      messages_per_minute: Number.isFinite(input.perSender.perMinute)
        ? input.perSender.perMinute
        : null,
      burst: input.perSender.burst,
    },
  }
  if (input.relay) doc.relay = { urls: [...input.relay.urls], preference: input.relay.preference }
  return doc
}
