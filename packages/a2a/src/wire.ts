/**
 * How A2A rides on agentmsg: the agent card's interface for it, and the one body shape every
 * A2A message has. A call is one agentmsg conversation: the request is its first message
 * (phase `request`), the answer a `response`, streamed events `update`s, the end of a stream (or
 * the caller hanging up) a `close`. Each body is one data part holding the A2A JSON-RPC binding's
 * own object, so the A2A payload is byte for byte what JSON-RPC over HTTP would carry.
 */
import type { AgentInterface } from '@a2a-js/sdk'
import { A2A_CONTENT_TYPE, A2A_PROTOCOL_VERSION } from '@a2a-js/sdk'
import type { ReceivedMessage } from '@agentmsg/client'
import { AgentMsgError, type JsonValue, normalizeAgentUrl } from '@agentmsg/core'

/** A JSON object (not an array, not null). */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** `AgentInterface.protocolBinding` of agentmsg interfaces. */
export const AGENTMSG_BINDING = 'AGENTMSG'

/** The JSON-RPC error code of a request agentmsg or the adapter refused (A2A leaves it free). */
export const AGENTMSG_REFUSED = -32060

/** Service parameters carried with a request (A2A-Version, A2A-Extensions): bounded. */
const MAX_SERVICE_PARAMETERS = 16
const MAX_SERVICE_PARAMETER_CHARS = 1024

/** Where an agentmsg A2A agent is: its id and the relays it listens on. */
export interface AgentmsgAddress {
  /** The agent id (a did:key or an https URL). */
  agent: string
  /** Relays that reach it (a URL agent's identity document may name more). */
  relays: string[]
}

/** The agent card entry for an agent reached over agentmsg: `agentmsg:<id>?relay=<url>…`. */
export function agentmsgInterface(agent: string, relays: string[] = []): AgentInterface {
  const query = relays.map((r) => `relay=${encodeURIComponent(normalizeAgentUrl(r))}`).join('&')
  return {
    url: `agentmsg:${agent}${query ? `?${query}` : ''}`,
    protocolBinding: AGENTMSG_BINDING,
    protocolVersion: A2A_PROTOCOL_VERSION,
    tenant: '',
  }
}

/** Read an `agentmsg:` interface URL; `invalid_format` when it is not one. */
export function parseAgentmsgUrl(url: string): AgentmsgAddress {
  const m = /^agentmsg:([^?#]+)(?:\?([^#]*))?$/.exec(url)
  if (!m) throw new AgentMsgError('invalid_format', `not an agentmsg interface URL: ${url}`)
  const relays = new URLSearchParams(m[2] ?? '').getAll('relay').map((r) => normalizeAgentUrl(r))
  return { agent: m[1] as string, relays }
}

/** The phases of a call (PROFILE §2's names). */
export type CallPhase = 'request' | 'response' | 'update' | 'close'

/** What travels beside the JSON-RPC object in its part. */
export interface A2AContentExtras {
  /** A request's A2A service parameters (A2A-Version, A2A-Extensions). */
  serviceParameters?: Record<string, string>
  /** An answer's place in its call: 0, 1, … (relays may deliver answers out of order). */
  index?: number
}

/** A body holding one JSON-RPC object. */
export function a2aContent(rpc: unknown, extras: A2AContentExtras = {}) {
  const part: { type: 'data'; data: JsonValue; [k: string]: JsonValue } = {
    type: 'data',
    data: rpc as JsonValue,
  }
  const { serviceParameters, index } = extras
  if (serviceParameters && Object.keys(serviceParameters).length > 0) {
    part.service_parameters = serviceParameters
  }
  if (index !== undefined) part.index = index
  return { parts: [part], contentType: A2A_CONTENT_TYPE }
}

/** The `close` body: a JSON-RPC notification naming the call (its conversation) that ends. */
export const closeContent = (id: string, index?: number) =>
  a2aContent({ jsonrpc: '2.0', method: 'agentmsg/close', params: { id } }, { index })

/** What an A2A message carries, or undefined for any other message. */
export interface A2APayload {
  phase: CallPhase
  rpc: Record<string, unknown>
  serviceParameters: Record<string, string>
  /** An answer's place in its call (see {@link A2AContentExtras}). */
  index: number | undefined
}

/** The A2A payload of a received message; undefined when it is not an A2A message. */
export function a2aPayload(m: ReceivedMessage): A2APayload | undefined {
  const { content_type, phase, body } = m.message
  if (content_type !== A2A_CONTENT_TYPE) return undefined
  if (phase !== 'request' && phase !== 'response' && phase !== 'update' && phase !== 'close') {
    return undefined
  }
  const [part, ...rest] = body.parts
  if (!part || rest.length > 0 || part.type !== 'data' || !isObject(part.data)) return undefined
  const index =
    Number.isSafeInteger(part.index) && (part.index as number) >= 0 ? part.index : undefined
  return {
    phase,
    rpc: part.data,
    serviceParameters: serviceParametersOf(part.service_parameters),
    index: index as number | undefined,
  }
}

function serviceParametersOf(value: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (!isObject(value)) return out
  for (const [k, v] of Object.entries(value).slice(0, MAX_SERVICE_PARAMETERS)) {
    if (typeof v === 'string' && v.length <= MAX_SERVICE_PARAMETER_CHARS) out[k] = v
  }
  return out
}
