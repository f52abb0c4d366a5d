/**
 * Relay agent auth (PROFILE §9): RFC 9421 HTTP Message Signatures restricted to one shape.
 *
 * ```
 * Content-Digest: sha-256=:<base64 of SHA-256(body)>:          (only with a body, RFC 9530)
 * Signature-Input: sig1=("@method" "@target-uri" "content-digest");created=1700000000;nonce="…";keyid="…";alg="ed25519"
 * Signature: sig1=:<base64 of the 64-byte Ed25519 signature>:
 * ```
 *
 * The signature base is the RFC 9421 §2.5 one: a line `"<component>": <value>` per covered
 * component, then `"@signature-params": <the Signature-Input member value>`, joined by LF with
 * no trailing LF. The verifier copies the `@signature-params` value from the received header
 * text as is (never re-serialised), and takes `@target-uri` from the caller: the relay base URL
 * + the request target as received.
 *
 * Isomorphic: no Node built-ins.
 */
import {
  AgentMsgError,
  base64Decode,
  base64Encode,
  base64urlDecode,
  base64urlEncode,
  resolveEd25519Key,
  constantTimeEqual,
  didKeyFragment,
  getDefaultCryptoProvider,
  invalidFormat,
  isAgentId,
  isDidKey,
  levelForKeySource,
  randomBytes,
  utf8Encode,
} from '@agentmsg/core'
import type {
  AuthLevel,
  CryptoProvider,
  KeyResolver,
  KeySource,
  Signer,
} from '@agentmsg/core'

/** The only signature label this profile uses. */
export const SIGNATURE_LABEL = 'sig1'
/** How far `created` may be from the verifier's clock, either way (PROFILE §9). */
export const MAX_CREATED_SKEW_MS = 5 * 60_000
/** How long a (keyid, nonce) pair is remembered (PROFILE §9). */
export const NONCE_RETENTION_MS = 10 * 60_000

const NONCE_RE = /^[A-Za-z0-9_-]{22,64}$/
const ED25519_SIG_BYTES = 64
const COMPONENTS_WITH_BODY = ['@method', '@target-uri', 'content-digest'] as const
const COMPONENTS_WITHOUT_BODY = ['@method', '@target-uri'] as const
const PARAM_ORDER = ['created', 'nonce', 'keyid', 'alg'] as const

// ---------------------------------------------------------------------------------------------
// RFC 8941 structured fields: just enough of a parser for dictionaries, with the raw text of
// each member value kept so the signature base can use it as received.

/** A bare item (RFC 8941 §3.3). Byte sequences keep their base64 text; decoding is ours. */
type BareItem =
  | { type: 'integer'; value: number }
  | { type: 'decimal'; value: number }
  | { type: 'string'; value: string }
  | { type: 'token'; value: string }
  | { type: 'bytes'; value: string }
  | { type: 'boolean'; value: boolean }

/** Parameters in the order received; duplicates are kept so they can be refused. */
type Params = Array<[string, BareItem]>

interface SfItem {
  kind: 'item'
  item: BareItem
  params: Params
}
interface SfInnerList {
  kind: 'list'
  items: Array<{ item: BareItem; params: Params }>
  params: Params
}

/** One dictionary member, with `raw` = the member value's text exactly as received. */
interface DictMember {
  key: string
  value: SfItem | SfInnerList
  raw: string
}

class SfParser {
  pos = 0
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw new Error(`${what} at offset ${this.pos}`)
  }
  peek(): string {
    return this.text[this.pos] ?? ''
  }
  eof(): boolean {
    return this.pos >= this.text.length
  }
  skipSp(): void {
    while (this.peek() === ' ') this.pos++
  }
  skipOws(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.pos++
  }

  /** RFC 8941 §4.2.2, plus: duplicate keys are refused rather than overwritten. */
  dictionary(): DictMember[] {
    this.skipSp()
    const members: DictMember[] = []
    if (this.eof()) return members
    for (;;) {
      const key = this.key()
      let value: SfItem | SfInnerList
      const start = this.pos
      if (this.peek() === '=') {
        this.pos++
        const valueStart = this.pos
        value = this.itemOrInnerList()
        members.push({ key, value, raw: this.text.slice(valueStart, this.pos) })
      } else {
        value = { kind: 'item', item: { type: 'boolean', value: true }, params: this.params() }
        members.push({ key, value, raw: this.text.slice(start, this.pos) })
      }
      this.skipOws()
      if (this.eof()) break
      if (this.peek() !== ',') this.fail('expected "," between dictionary members')
      this.pos++
      this.skipOws()
      if (this.eof()) this.fail('trailing "," in dictionary')
    }
    const seen = new Set<string>()
    for (const m of members) {
      if (seen.has(m.key)) throw new Error(`dictionary key "${m.key}" appears twice`)
      seen.add(m.key)
    }
    return members
  }

  itemOrInnerList(): SfItem | SfInnerList {
    if (this.peek() === '(') return this.innerList()
    const item = this.bareItem()
    return { kind: 'item', item, params: this.params() }
  }

  innerList(): SfInnerList {
    this.pos++ // (
    const items: SfInnerList['items'] = []
    for (;;) {
      this.skipSp()
      if (this.peek() === ')') {
        this.pos++
        return { kind: 'list', items, params: this.params() }
      }
      const item = this.bareItem()
      items.push({ item, params: this.params() })
      const c = this.peek()
      if (c !== ' ' && c !== ')') this.fail('expected " " or ")" in inner list')
    }
  }

  params(): Params {
    const out: Params = []
    while (this.peek() === ';') {
      this.pos++
      this.skipSp()
      const key = this.key()
      let value: BareItem = { type: 'boolean', value: true }
      if (this.peek() === '=') {
        this.pos++
        value = this.bareItem()
      }
      out.push([key, value])
    }
    return out
  }

  key(): string {
    const start = this.pos
    if (!/^[a-z*]$/.test(this.peek())) this.fail('expected a key')
    this.pos++
    while (/^[a-z0-9_\-.*]$/.test(this.peek())) this.pos++
    return this.text.slice(start, this.pos)
  }

  bareItem(): BareItem {
    const c = this.peek()
    if (c === '-' || (c >= '0' && c <= '9')) return this.number()
    if (c === '"') return this.string()
    if (c === ':') return this.bytes()
    if (c === '?') return this.boolean()
    if (/^[A-Za-z*]$/.test(c)) return this.token()
    return this.fail('expected an item')
  }

  number(): BareItem {
    const m = /^-?(\d{1,15})(\.\d{1,3})?/.exec(this.text.slice(this.pos))
    if (!m) return this.fail('malformed number')
    const [all, intPart, frac] = m
    if (frac !== undefined && intPart!.length > 12) this.fail('decimal with too many digits')
    // A 16th digit or a 4th fractional digit is not a longer number but an error.
    const next = this.text[this.pos + all.length] ?? ''
    if (/^[0-9]$/.test(next) || (frac === undefined && next === '.')) this.fail('malformed number')
    this.pos += all.length
    return frac === undefined
      ? { type: 'integer', value: Number(all) }
      : { type: 'decimal', value: Number(all) }
  }

  string(): BareItem {
    this.pos++ // "
    let out = ''
    for (;;) {
      if (this.eof()) this.fail('unterminated string')
      const c = this.text[this.pos++]!
      if (c === '\\') {
        const n = this.text[this.pos++]
        if (n !== '"' && n !== '\\') this.fail('invalid escape in string')
        out += n
      } else if (c === '"') {
        return { type: 'string', value: out }
      } else {
        const code = c.charCodeAt(0)
        if (code < 0x20 || code > 0x7e) this.fail('invalid character in string')
        out += c
      }
    }
  }

  bytes(): BareItem {
    this.pos++ // :
    const end = this.text.indexOf(':', this.pos)
    if (end < 0) this.fail('unterminated byte sequence')
    const value = this.text.slice(this.pos, end)
    if (!/^[A-Za-z0-9+/=]*$/.test(value)) this.fail('invalid character in byte sequence')
    this.pos = end + 1
    return { type: 'bytes', value }
  }

  boolean(): BareItem {
    const v = this.text[this.pos + 1]
    if (v !== '0' && v !== '1') this.fail('invalid boolean')
    this.pos += 2
    return { type: 'boolean', value: v === '1' }
  }

  token(): BareItem {
    const start = this.pos
    this.pos++
    while (/^[!#$%&'*+\-.^_`|~0-9A-Za-z:/]$/.test(this.peek())) this.pos++
    return { type: 'token', value: this.text.slice(start, this.pos) }
  }
}

/** Parse a structured-field dictionary (RFC 8941 §4.2.2); throws a plain Error when malformed. */
function parseDictionary(text: string): DictMember[] {
  const p = new SfParser(text)
  const members = p.dictionary()
  p.skipSp()
  if (!p.eof()) p.fail('unexpected trailing characters')
  return members
}

/** An RFC 8941 sf-string, escaping `"` and `\`. Only printable ASCII can be written. */
function serializeString(value: string, field: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) {
    throw invalidFormat('must be printable ASCII to fit an RFC 8941 string', field)
  }
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`
}

// ---------------------------------------------------------------------------------------------
// Headers

type HeaderInput = Headers | Record<string, string>

/**
 * A header's field value with surrounding whitespace removed, several lines joined with
 * `", "` as RFC 9110 §5.3 combines them; `undefined` when absent.
 */
function getHeader(headers: HeaderInput, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as Headers).get(name)?.replace(/^[ \t]+|[ \t]+$/g, '') ?? undefined
  }
  const lower = name.toLowerCase()
  const values: string[] = []
  for (const [k, v] of Object.entries(headers as Record<string, string>)) {
    if (k.toLowerCase() === lower && typeof v === 'string')
      values.push(v.replace(/^[ \t]+|[ \t]+$/g, ''))
  }
  return values.length === 0 ? undefined : values.join(', ')
}

// ---------------------------------------------------------------------------------------------
// Signing

/**
 * The RFC 9530 `Content-Digest` value of `body`: `sha-256=:<padded base64>:`.
 *
 * @example
 * await contentDigest(utf8Encode('{"hello": "world"}'))
 * // 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:'
 */
export async function contentDigest(body: Uint8Array, provider?: CryptoProvider): Promise<string> {
  const p = provider ?? getDefaultCryptoProvider()
  return `sha-256=:${base64Encode(await p.sha256(body))}:`
}

/**
 * The RFC 9421 signature base for this profile's components. `signatureParams` is the
 * `Signature-Input` member value without the label (`("@method" …);created=…;…`), as sent or
 * received; `digest` is the `Content-Digest` field value, given exactly when it is covered.
 */
export function signatureBase(
  method: string,
  targetUri: string,
  digest: string | undefined,
  signatureParams: string,
): Uint8Array {
  const lines = [`"@method": ${method}`, `"@target-uri": ${targetUri}`]
  if (digest !== undefined) lines.push(`"content-digest": ${digest}`)
  lines.push(`"@signature-params": ${signatureParams}`)
  return utf8Encode(lines.join('\n'))
}

/** A fresh request nonce: base64url of 32 random bytes (43 characters). */
export function createRequestNonce(): string {
  return base64urlEncode(randomBytes(32))
}

/** Input of {@link signRequest}. */
export interface SignRequestInput {
  /** The HTTP method; written upper-case, as `fetch` sends the standard methods. */
  method: string
  /**
   * The full URL exactly as it will be sent: the relay base URL + path + query. It must be in
   * WHATWG serialised form (what `fetch` puts on the wire), without a fragment.
   */
  url: string
  /** The request body; a `Content-Digest` is added and covered when it is non-empty. */
  body?: Uint8Array
  /** An Ed25519 signer whose `keyId` names the agent the request acts for. */
  signer: Signer
  /** Creation time, integer seconds since the epoch. @default now */
  created?: number
  /** base64url, 22–64 characters. @default 32 random bytes */
  nonce?: string
  /** The crypto provider for the digest. @default the platform's */
  provider?: CryptoProvider
}

/**
 * Sign a relay request as an agent (PROFILE §9). Returns the headers to add:
 * `Signature-Input`, `Signature`, and `Content-Digest` when there is a body.
 *
 * An empty body counts as no body: it gets no `Content-Digest`, and the verifier, receiving
 * zero bytes, expects none.
 *
 * @throws AgentMsgError `invalid_format` for a non-Ed25519 signer, a URL not in serialised form,
 *   a malformed nonce, created or key id.
 *
 * @example
 * const headers = await signRequest({
 *   method: 'GET',
 *   url: 'https://relay.example/relay/messages?agent=did%3Akey%3Az6Mk…',
 *   signer: ed25519Signer(keys),
 * })
 */
export async function signRequest(input: SignRequestInput): Promise<Record<string, string>> {
  const { signer } = input
  if (signer.alg !== 'ed25519')
    throw invalidFormat('relay auth signs with ed25519 only', 'signer.alg')
  checkKeyId(signer.keyId, (m) => invalidFormat(m, 'signer.keyId'))
  const method = input.method.toUpperCase()
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Z]+$/.test(method))
    throw invalidFormat('not an HTTP method token', 'method')
  let parsed: URL
  try {
    parsed = new URL(input.url)
  } catch {
    throw invalidFormat('must be an absolute URL', 'url')
  }
  if (parsed.href !== input.url) {
    throw invalidFormat(`must be in serialised form, as it is sent (${parsed.href})`, 'url')
  }
  if (parsed.hash !== '' || input.url.includes('#'))
    throw invalidFormat('must not have a fragment', 'url')
  const created = input.created ?? Math.floor(Date.now() / 1000)
  if (!Number.isSafeInteger(created) || created < 0 || created > 999_999_999_999_999) {
    throw invalidFormat('must be a non-negative integer number of seconds', 'created')
  }
  const nonce = input.nonce ?? createRequestNonce()
  checkNonce(nonce, (m) => invalidFormat(m, 'nonce'))

  const hasBody = input.body !== undefined && input.body.length > 0
  const headers: Record<string, string> = {}
  let digest: string | undefined
  if (hasBody) {
    digest = await contentDigest(input.body!, input.provider)
    headers['Content-Digest'] = digest
  }
  const components = hasBody ? COMPONENTS_WITH_BODY : COMPONENTS_WITHOUT_BODY
  const params =
    `(${components.map((c) => `"${c}"`).join(' ')})` +
    `;created=${created}` +
    `;nonce=${serializeString(nonce, 'nonce')}` +
    `;keyid=${serializeString(signer.keyId, 'signer.keyId')}` +
    `;alg="ed25519"`
  const sig = await signer.sign(signatureBase(method, input.url, digest, params))
  headers['Signature-Input'] = `${SIGNATURE_LABEL}=${params}`
  headers['Signature'] = `${SIGNATURE_LABEL}=:${base64Encode(sig)}:`
  return headers
}

// ---------------------------------------------------------------------------------------------
// Nonce memory

/** Options for {@link NonceMemory}. */
export interface NonceMemoryOptions {
  /** The clock, epoch ms. @default Date.now */
  now?: () => number
  /** How long a pair is remembered after it was first accepted. @default 10 minutes */
  retentionMs?: number
  /**
   * Most pairs held at once. When full, expired pairs are dropped; if none has expired, new
   * requests are refused with 503 `unavailable` rather than forgetting a live nonce (which
   * would let its request be replayed). @default 500_000
   */
  maxEntries?: number
}

/**
 * Remembers (keyid, nonce) pairs of accepted relay requests for 10 minutes (PROFILE §9), in
 * memory. `created` may be up to 5 minutes off either way, so a signature is acceptable for at
 * most 10 minutes, and remembering each pair for 10 minutes after its first use covers that
 * whole window.
 *
 * Memory is bounded by `maxEntries`; see {@link NonceMemoryOptions.maxEntries}.
 */
export class NonceMemory {
  readonly #now: () => number
  readonly #retentionMs: number
  readonly #maxEntries: number
  // `${keyid}\n${nonce}` → expiry (epoch ms). Neither part can hold an LF.
  readonly #entries = new Map<string, number>()

  constructor(options: NonceMemoryOptions = {}) {
    this.#now = options.now ?? Date.now
    this.#retentionMs = options.retentionMs ?? NONCE_RETENTION_MS
    this.#maxEntries = options.maxEntries ?? 500_000
    if (!Number.isFinite(this.#retentionMs) || this.#retentionMs < 0) {
      throw new RangeError('retentionMs must be a finite number ≥ 0')
    }
    if (!Number.isSafeInteger(this.#maxEntries) || this.#maxEntries < 1) {
      throw new RangeError('maxEntries must be a positive integer')
    }
  }

  /** Pairs currently held (expired ones not yet pruned included). */
  get size(): number {
    return this.#entries.size
  }

  /**
   * Record the pair unless it was seen within the retention period. A pair stays remembered
   * while `now ≤ first use + retentionMs`.
   *
   * @param now - overrides the clock for this call (epoch ms).
   * @returns `'fresh'` (now remembered) or `'replay'`.
   * @throws AgentMsgError `unavailable` with `retryAfter` when the memory is full of live pairs.
   */
  checkAndRemember(keyId: string, nonce: string, now: number = this.#now()): 'fresh' | 'replay' {
    const name = `${keyId}\n${nonce}`
    const expiry = this.#entries.get(name)
    if (expiry !== undefined) {
      if (now <= expiry) return 'replay'
      this.#entries.delete(name)
    }
    if (this.#entries.size >= this.#maxEntries) this.prune(now)
    if (this.#entries.size >= this.#maxEntries) {
      let earliest = Infinity
      for (const e of this.#entries.values()) if (e < earliest) earliest = e
      throw new AgentMsgError(
        'unavailable',
        'too many recent relay requests to remember their nonces',
        {
          retryAfter: Math.max(1, Math.ceil((earliest - now) / 1000)),
        },
      )
    }
    this.#entries.set(name, now + this.#retentionMs)
    return 'fresh'
  }

  /** Drop expired pairs. Called when the memory is full; call it on a timer to keep it small. */
  prune(now: number = this.#now()): void {
    // Insertion order is expiry order while the clock runs forward: stop at the first live one.
    for (const [name, expiry] of this.#entries) {
      if (now <= expiry) break
      this.#entries.delete(name)
    }
    if (this.#entries.size < this.#maxEntries) return
    // A clock that stepped back leaves expired pairs behind live ones: sweep everything.
    for (const [name, expiry] of this.#entries) if (now > expiry) this.#entries.delete(name)
  }
}

// ---------------------------------------------------------------------------------------------
// Verification

/** Input of {@link verifyRequest}. */
export interface VerifyRequestInput {
  /** The method as received. */
  method: string
  /** The relay base URL + the request target as received (never built from `Host`). */
  targetUri: string
  headers: HeaderInput
  /** The body as received; absent or empty means no body. */
  body?: Uint8Array
  resolver: KeyResolver
  nonces: NonceMemory
  /** The agent named in the request (whose mailbox or subscription it touches). */
  expectedAgent?: string
  /** Epoch ms, for the `created` window, key usability and the nonce memory. @default Date.now() */
  now?: number
  /** Transition period for retired keys (PROFILE §4). @default core's 14 days */
  transitionMs?: number
  provider?: CryptoProvider
}

/** An authenticated relay request. */
export interface VerifiedRequest {
  /** The agent the key belongs to. */
  agent: string
  /** The full key id. */
  keyId: string
  /** Where the key came from. */
  source: KeySource
  /** The authentication level of that key source (PROFILE §5). */
  level: AuthLevel
}

const invalid = (message: string) => new AgentMsgError('invalid_signature', message)

function checkNonce(nonce: string, fail: (m: string) => Error): void {
  if (typeof nonce !== 'string' || !NONCE_RE.test(nonce)) {
    throw fail('nonce must be 22–64 base64url characters')
  }
  try {
    base64urlDecode(nonce)
  } catch {
    throw fail('nonce must be canonical base64url')
  }
}

/** A key id as PROFILE §3: `<agent>#<fragment>` split at the last `#`, agent in normal form. */
function checkKeyId(
  keyId: string,
  fail: (m: string) => Error,
): { agent: string; fragment: string } {
  if (typeof keyId !== 'string') throw fail('keyid must be a string')
  const hash = keyId.lastIndexOf('#')
  const agent = keyId.slice(0, hash)
  const fragment = keyId.slice(hash + 1)
  if (hash <= 0 || fragment === '') throw fail('keyid must be <agent_id>#<fragment>')
  if (!isAgentId(agent))
    throw fail(`keyid's agent ${JSON.stringify(agent)} is not an agent id in normal form`)
  if (isDidKey(agent) && fragment !== didKeyFragment(agent)) {
    throw fail("a did:key keyid's fragment is the DID's method-specific id")
  }
  return { agent, fragment }
}

function sameList(got: string[], want: readonly string[]): boolean {
  return got.length === want.length && got.every((v, i) => v === want[i])
}

/**
 * Authenticate a relay request signed with {@link signRequest} (PROFILE §9).
 *
 * Order of checks: headers present → both headers parse and have exactly this profile's shape
 * → `created` within ±5 minutes → `Content-Digest` matches the body → key lookup → key usable
 * (identity-document keys: PROFILE §4 retired/revoked rules, with `created`) → signature
 * verifies → the nonce is fresh (then remembered) → the key's agent is `expectedAgent`.
 * Nonces are remembered only for verified signatures, so strangers cannot fill the memory or
 * burn someone else's nonce; ownership comes last, so 403 is only ever told to a caller who
 * proved who they are.
 *
 * @throws AgentMsgError
 * - `unauthorized` (401): `Signature` or `Signature-Input` absent.
 * - `invalid_signature` (401): anything malformed or off-profile, stale `created`, digest
 *   missing or wrong, signature not verifying, reused nonce.
 * - `unknown_sender` (401): the key does not resolve (PROFILE §3/§11, as at publish).
 * - `key_revoked` (401): revoked, or retired outside its bounds.
 * - `unavailable` (503, `retryAfter`): the key lookup failed for now, or the nonce memory is full.
 * - `forbidden` (403): a valid signature by another agent than `expectedAgent`.
 */
export async function verifyRequest(input: VerifyRequestInput): Promise<VerifiedRequest> {
  const now = input.now ?? Date.now()
  const provider = input.provider ?? getDefaultCryptoProvider()
  const sigInputText = getHeader(input.headers, 'signature-input')
  const sigText = getHeader(input.headers, 'signature')
  if (sigInputText === undefined || sigText === undefined) {
    throw new AgentMsgError(
      'unauthorized',
      'agent auth required: Signature and Signature-Input headers (RFC 9421)',
    )
  }

  // Signature-Input: exactly sig1=(components);created=…;nonce="…";keyid="…";alg="ed25519"
  let inputMembers: DictMember[]
  try {
    inputMembers = parseDictionary(sigInputText)
  } catch (e) {
    throw invalid(`Signature-Input is not a structured-field dictionary: ${(e as Error).message}`)
  }
  if (inputMembers.length !== 1) throw invalid('exactly one signature is allowed')
  const member = inputMembers[0]!
  if (member.key !== SIGNATURE_LABEL)
    throw invalid(`the signature label must be ${SIGNATURE_LABEL}`)
  if (member.value.kind !== 'list') throw invalid('the Signature-Input value must be an inner list')
  const list = member.value
  const hasBody = input.body !== undefined && input.body.length > 0
  const want = hasBody ? COMPONENTS_WITH_BODY : COMPONENTS_WITHOUT_BODY
  if (list.items.some((c) => c.item.type !== 'string' || c.params.length > 0)) {
    throw invalid('covered components must be plain strings')
  }
  const components = list.items.map((c) => c.item.value as string)
  if (!sameList(components, want)) {
    throw invalid(
      `covered components must be (${want.map((c) => `"${c}"`).join(' ')})${hasBody ? '' : ' for a request without a body'}`,
    )
  }
  if (
    !sameList(
      list.params.map(([k]) => k),
      PARAM_ORDER,
    )
  ) {
    throw invalid('signature parameters must be created, nonce, keyid, alg in that order')
  }
  const [created, nonce, keyid, alg] = list.params.map(([, v]) => v) as [
    BareItem,
    BareItem,
    BareItem,
    BareItem,
  ]
  if (created.type !== 'integer' || created.value < 0)
    throw invalid('created must be a non-negative integer')
  if (nonce.type !== 'string') throw invalid('nonce must be a string')
  checkNonce(nonce.value, invalid)
  if (keyid.type !== 'string') throw invalid('keyid must be a string')
  const { agent, fragment } = checkKeyId(keyid.value, invalid)
  if (alg.type !== 'string' || alg.value !== 'ed25519') throw invalid('alg must be "ed25519"')

  // Signature: exactly sig1=:<base64>:
  let sigMembers: DictMember[]
  try {
    sigMembers = parseDictionary(sigText)
  } catch (e) {
    throw invalid(`Signature is not a structured-field dictionary: ${(e as Error).message}`)
  }
  if (sigMembers.length !== 1) throw invalid('exactly one signature is allowed')
  const sigMember = sigMembers[0]!
  if (sigMember.key !== SIGNATURE_LABEL)
    throw invalid(`the signature label must be ${SIGNATURE_LABEL}`)
  const sigValue = sigMember.value
  if (sigValue.kind !== 'item' || sigValue.item.type !== 'bytes' || sigValue.params.length > 0) {
    throw invalid('Signature must be a byte sequence without parameters')
  }
  let sigBytes: Uint8Array
  try {
    sigBytes = base64Decode(sigValue.item.value)
  } catch {
    throw invalid('Signature must be canonical padded base64')
  }
  if (sigBytes.length !== ED25519_SIG_BYTES)
    throw invalid(`an ed25519 signature is ${ED25519_SIG_BYTES} bytes`)

  const createdMs = created.value * 1000
  if (Math.abs(createdMs - now) > MAX_CREATED_SKEW_MS) {
    throw invalid('created is more than 5 minutes away from the relay clock')
  }

  // Content-Digest: covered exactly when there is a body, and must match it.
  let digest: string | undefined
  if (hasBody) {
    digest = getHeader(input.headers, 'content-digest')
    if (digest === undefined) throw invalid('a request with a body needs a Content-Digest')
    let digestMembers: DictMember[]
    try {
      digestMembers = parseDictionary(digest)
    } catch (e) {
      throw invalid(`Content-Digest is not a structured-field dictionary: ${(e as Error).message}`)
    }
    const sha = digestMembers.length === 1 ? digestMembers[0]! : undefined
    if (
      !sha ||
      sha.key !== 'sha-256' ||
      sha.value.kind !== 'item' ||
      sha.value.item.type !== 'bytes' ||
      sha.value.params.length > 0
    ) {
      throw invalid('Content-Digest must be sha-256=:<base64>:')
    }
    let claimed: Uint8Array
    try {
      claimed = base64Decode(sha.value.item.value)
    } catch {
      throw invalid('Content-Digest must be canonical padded base64')
    }
    if (!constantTimeEqual(claimed, await provider.sha256(input.body!))) {
      throw invalid('Content-Digest does not match the body')
    }
  }

  const key = await resolveEd25519Key(
    input.resolver,
    { keyId: keyid.value, agent, fragment },
    {
      created: createdMs,
      now,
      ...(input.transitionMs === undefined ? {} : { transitionMs: input.transitionMs }),
    },
  )

  const base = signatureBase(input.method, input.targetUri, digest, member.raw)
  if (!(await provider.ed25519Verify(key.publicKey, base, sigBytes))) {
    throw invalid(`signature by ${keyid.value} does not verify`)
  }

  if (input.nonces.checkAndRemember(keyid.value, nonce.value, input.now) === 'replay') {
    throw invalid('this nonce was already used with this key')
  }
  if (input.expectedAgent !== undefined && agent !== input.expectedAgent) {
    throw new AgentMsgError('forbidden', `${agent} may not act for ${input.expectedAgent}`)
  }
  return { agent, keyId: keyid.value, source: key.source, level: levelForKeySource(key.source) }
}
