// Agent ids (SPEC §2.1, PROFILE §2) and key ids (PROFILE §3): compared byte for byte, so the wire
// takes only the normal form; `normalizeAgentUrl` is the lenient entry for typed ids.
import { cachedPublicKey } from './did-key.js'
import { invalidFormat, isAgentMsgError } from './errors.js'

/** The three agent id formats of SPEC §2.1. */
export type AgentIdKind = 'name' | 'url' | 'did:key'

/** A checked agent id and its format. */
export interface AgentId {
  kind: AgentIdKind
  id: string
}

const SIMPLE_NAME = /^[A-Za-z0-9._-]{1,64}$/
// An `@` in the authority as typed: the URL parser silently drops an empty userinfo.
const TYPED_USERINFO = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*[^/\\?#]*@/
const WELL_KNOWN = '/.well-known/agentmsg/'

/** The WHATWG serialisation of `url` with one trailing `/` removed (PROFILE §2 normal form). */
function normalForm(url: URL): string {
  const href = url.href
  return href.endsWith('/') ? href.slice(0, -1) : href
}

/** Why `text` is not a normal-form https URL (agent ids and relay URLs, PROFILE §2). */
function urlProblem(text: string): string | undefined {
  if (!text.startsWith('https://')) {
    return text.startsWith('http://')
      ? 'must use https, also in development (use a development certificate)'
      : 'must be an https URL'
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'is not a valid URL'
  }
  if (url.username !== '' || url.password !== '' || TYPED_USERINFO.test(text)) {
    return 'must not contain userinfo (user@)'
  }
  // A `?` or `#` in the id can only be a delimiter: paths escape neither.
  if (text.includes('?')) return 'must not contain a query'
  if (text.includes('#')) return 'must not contain a fragment'
  const normal = normalForm(url)
  if (normal !== text) {
    return `is not in normal form (lower-case punycode host, no default port, no dot segments, no trailing '/'); expected ${normal}`
  }
  return undefined
}

/** The kind of `id`, or the reason it is not an agent id. */
function classify(id: unknown): AgentIdKind | string {
  if (typeof id !== 'string') return 'must be a string'
  if (id.startsWith('did:')) {
    if (!id.startsWith('did:key:')) return 'only the did:key DID method is supported'
    try {
      cachedPublicKey(id)
    } catch (error) {
      if (!isAgentMsgError(error)) throw error
      return `is not a valid Ed25519 did:key (${error.message})`
    }
    return 'did:key'
  }
  if (id.startsWith('https:') || id.startsWith('http:')) return urlProblem(id) ?? 'url'
  // A name cannot hold ':', so it never takes PROFILE §2's `did:` or `https:` prefixes.
  if (SIMPLE_NAME.test(id)) return 'name'
  if (id === '') return 'must not be empty'
  return 'must be a simple name (1–64 of A–Z a–z 0–9 . _ -), an https URL or a did:key'
}

const KINDS: ReadonlySet<string> = new Set<AgentIdKind>(['name', 'url', 'did:key'])

/** Check that `id` is an agent id in wire normal form (PROFILE §2) and say which kind it is. */
export function parseAgentId(id: unknown, field = 'agent'): AgentId {
  const result = classify(id)
  if (!KINDS.has(result)) throw invalidFormat(result, field)
  return { kind: result as AgentIdKind, id: id as string }
}

/** True when `x` is an agent id in wire normal form. */
export function isAgentId(x: unknown): x is string {
  return KINDS.has(classify(x))
}

/** Check a relay base URL: PROFILE §2 holds it to the normal form of a URL agent id. */
export function assertRelayUrl(url: unknown, field = 'relay'): string {
  if (typeof url !== 'string') throw invalidFormat('must be a string', field)
  const problem = urlProblem(url)
  if (problem !== undefined) throw invalidFormat(problem, field)
  return url
}

/** A URL as a person types it, in normal form: it passes {@link parseAgentId}, stably. */
export function normalizeAgentUrl(input: string): string {
  const field = 'url'
  if (typeof input !== 'string') throw invalidFormat('must be a string', field)
  const text = input.trim()
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw invalidFormat(
      `${JSON.stringify(text)} is not an absolute URL; write it as https://…`,
      field,
    )
  }
  if (url.protocol === 'http:') {
    throw invalidFormat('use https, also in development (with a development certificate)', field)
  }
  if (url.protocol !== 'https:') throw invalidFormat(`must be https, not ${url.protocol}`, field)
  if (url.username !== '' || url.password !== '' || TYPED_USERINFO.test(text)) {
    throw invalidFormat('must not contain userinfo (user@)', field)
  }
  // `href` keeps an empty `?` or `#`, which `search` and `hash` report as ''.
  if (url.href.includes('?')) throw invalidFormat('must not contain a query', field)
  if (url.href.includes('#')) throw invalidFormat('must not contain a fragment', field)
  const normal = normalForm(url)
  // A path ending in `//` keeps a `/` after the one strip: such a URL has no normal form.
  if (urlProblem(normal) !== undefined) {
    throw invalidFormat(
      `${url.href} has no normal form: its path ends with an empty segment`,
      field,
    )
  }
  return normal
}

/** The well-known endpoints of a URL agent (SPEC §4.1, PROFILE §4). */
export function agentEndpoints(urlAgentId: string): {
  /** `{agent_id}/.well-known/agentmsg/inbox` */
  inbox: string
  /** `{agent_id}/.well-known/agentmsg/identity` */
  identity: string
  /** `{agent_id}/.well-known/agentmsg/capabilities` */
  capabilities: string
} {
  if (parseAgentId(urlAgentId, 'agent_id').kind !== 'url') {
    throw invalidFormat('only URL agents have well-known endpoints', 'agent_id')
  }
  const base = urlAgentId + WELL_KNOWN
  return { inbox: `${base}inbox`, identity: `${base}identity`, capabilities: `${base}capabilities` }
}

/** A key id split at the last `#` (PROFILE §3), or undefined when either part is empty. */
export function keyIdParts(keyId: string): { agent: string; fragment: string } | undefined {
  const at = keyId.lastIndexOf('#')
  if (at <= 0 || at === keyId.length - 1) return undefined
  return { agent: keyId.slice(0, at), fragment: keyId.slice(at + 1) }
}

/** {@link keyIdParts}, or `invalid_format` naming `field`. */
export function splitKeyId(keyId: string, field = 'key_id'): { agent: string; fragment: string } {
  if (typeof keyId !== 'string') throw invalidFormat('must be a string', field)
  const parts = keyIdParts(keyId)
  if (!parts) throw invalidFormat('must be <agent_id>#<fragment> with both parts non-empty', field)
  return parts
}

export function formatKeyId(agent: string, fragment: string): string {
  if (typeof agent !== 'string' || agent === '') {
    throw invalidFormat('must be a non-empty string', 'agent')
  }
  if (typeof fragment !== 'string' || fragment === '' || fragment.includes('#')) {
    throw invalidFormat('must be a non-empty string without #', 'fragment')
  }
  return `${agent}#${fragment}`
}
