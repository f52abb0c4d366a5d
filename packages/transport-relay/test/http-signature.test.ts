import {
  AgentMsgError,
  base64Encode,
  createIdentityDocument,
  createKeyResolver,
  didKeyFragment,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  getDefaultCryptoProvider,
  keyPairFromSeed,
  KeyStore,
  revokeKey,
  rotateKey,
  utf8Encode,
  type KeyPair,
  type KeyResolver,
  type Signer,
} from '@agentmsg/core'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  contentDigest,
  NonceMemory,
  signatureBase,
  signRequest,
  verifyRequest,
  type VerifyRequestInput,
} from '../src/http-signature.js'

const BASE = 'https://relay.example'
const T = 1_700_000_000 // seconds
const NOW = T * 1000
const NONCE = 'AAAAAAAAAAAAAAAAAAAAAA' // 22 chars, 16 zero bytes
const provider = getDefaultCryptoProvider()
const enc = encodeURIComponent

interface Agent {
  id: string
  keys: KeyPair
  signer: Signer
}

async function didKeyAgent(): Promise<Agent> {
  const keys = await generateKeyPair()
  const id = didKeyFromPublicKey(keys.publicKey)
  return { id, keys, signer: ed25519Signer(keys) }
}

let alice: Agent
let bob: Agent
const resolver = createKeyResolver()

beforeAll(async () => {
  alice = await didKeyAgent()
  bob = await didKeyAgent()
})

async function rejects(p: Promise<unknown>, code: string): Promise<AgentMsgError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  )
  expect(e, `expected ${code}`).toBeInstanceOf(AgentMsgError)
  expect((e as AgentMsgError).code).toBe(code)
  return e as AgentMsgError
}

function messagesUrl(agent: string): string {
  return `${BASE}/relay/messages?agent=${enc(agent)}&limit=10`
}

function verifyInput(
  over: Partial<VerifyRequestInput> & Pick<VerifyRequestInput, 'headers'>,
): VerifyRequestInput {
  return {
    method: 'GET',
    targetUri: messagesUrl(alice.id),
    resolver,
    nonces: new NonceMemory(),
    now: NOW,
    ...over,
  }
}

/**
 * Sign whatever Signature-Input value the test wants, so the checks that do not depend on the
 * signature (label, order, components…) are exercised with signatures that do verify.
 */
async function manualHeaders(opts: {
  signer?: Signer
  method?: string
  targetUri?: string
  label?: string
  params: string
  digest?: string
}): Promise<Record<string, string>> {
  const signer = opts.signer ?? alice.signer
  const base = signatureBase(
    opts.method ?? 'GET',
    opts.targetUri ?? messagesUrl(alice.id),
    opts.digest,
    opts.params,
  )
  const sig = await signer.sign(base)
  const label = opts.label ?? 'sig1'
  const h: Record<string, string> = {
    'Signature-Input': `${label}=${opts.params}`,
    Signature: `${label}=:${base64Encode(sig)}:`,
  }
  if (opts.digest !== undefined) h['Content-Digest'] = opts.digest
  return h
}

const kid = () => alice.signer.keyId
const getParams = (extra = '') =>
  `("@method" "@target-uri");created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"${extra}`

describe('contentDigest', () => {
  it('is the RFC 9530 sha-256 value', async () => {
    expect(await contentDigest(utf8Encode('{"hello": "world"}'))).toBe(
      'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
    )
    expect(await contentDigest(new Uint8Array())).toBe(
      'sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:',
    )
  })
})

describe('signRequest header values', () => {
  it('writes Signature-Input exactly (no body)', async () => {
    const keys = await keyPairFromSeed(new Uint8Array(32).fill(7))
    const signer = ed25519Signer(keys, 'https://alice.example#k1')
    const h = await signRequest({
      method: 'GET',
      url: 'https://relay.example/relay/messages?agent=https%3A%2F%2Falice.example',
      signer,
      created: 1700000000,
      nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
    })
    expect(Object.keys(h).sort()).toEqual(['Signature', 'Signature-Input'])
    expect(h['Signature-Input']).toBe(
      'sig1=("@method" "@target-uri");created=1700000000;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="https://alice.example#k1";alg="ed25519"',
    )
    expect(h['Signature']).toMatch(/^sig1=:[A-Za-z0-9+/]{86}==:$/)
  })

  it('writes Signature-Input and Content-Digest exactly (with body)', async () => {
    const keys = await keyPairFromSeed(new Uint8Array(32).fill(7))
    const signer = ed25519Signer(keys, 'https://alice.example#k1')
    const h = await signRequest({
      method: 'post',
      url: 'https://relay.example/relay/subscribe',
      body: utf8Encode('{"hello": "world"}'),
      signer,
      created: 1700000000,
      nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
    })
    expect(h['Content-Digest']).toBe('sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:')
    expect(h['Signature-Input']).toBe(
      'sig1=("@method" "@target-uri" "content-digest");created=1700000000;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="https://alice.example#k1";alg="ed25519"',
    )
  })

  it('signs exactly the RFC 9421 signature base (hand-written)', async () => {
    const keys = await keyPairFromSeed(new Uint8Array(32).fill(7))
    const signer = ed25519Signer(keys, 'https://alice.example#k1')
    const h = await signRequest({
      method: 'POST',
      url: 'https://relay.example/relay/subscribe',
      body: utf8Encode('{"hello": "world"}'),
      signer,
      created: 1700000000,
      nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
    })
    const base = [
      '"@method": POST',
      '"@target-uri": https://relay.example/relay/subscribe',
      '"content-digest": sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
      '"@signature-params": ("@method" "@target-uri" "content-digest");created=1700000000;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="https://alice.example#k1";alg="ed25519"',
    ].join('\n')
    const sigB64 = h['Signature']!.slice('sig1=:'.length, -1)
    const sig = Uint8Array.from(atob(sigB64), (c) => c.charCodeAt(0))
    expect(await provider.ed25519Verify(keys.publicKey, utf8Encode(base), sig)).toBe(true)
    // And not with a trailing LF.
    expect(await provider.ed25519Verify(keys.publicKey, utf8Encode(`${base}\n`), sig)).toBe(false)
  })

  it('generates a fresh base64url nonce and current created by default', async () => {
    const a = await signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: alice.signer })
    const b = await signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: alice.signer })
    const nonceOf = (h: Record<string, string>) =>
      /;nonce="([^"]+)"/.exec(h['Signature-Input']!)![1]!
    expect(nonceOf(a)).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(nonceOf(a)).not.toBe(nonceOf(b))
    const created = Number(/;created=(\d+);/.exec(a['Signature-Input']!)![1])
    expect(Math.abs(created * 1000 - Date.now())).toBeLessThan(10_000)
  })

  it('refuses URLs not in serialised form, bad nonces and non-ed25519 signers', async () => {
    const s = alice.signer
    await rejects(
      signRequest({ method: 'GET', url: 'https://relay.example:443/relay/messages', signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: 'https://relay.example', signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: '/relay/messages', signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: `${BASE}/relay/messages#x`, signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: s, nonce: 'short' }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: s, created: 1.5 }),
      'invalid_format',
    )
    const hmac: Signer = { alg: 'hmac-sha256', keyId: s.keyId, sign: s.sign }
    await rejects(
      signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: hmac }),
      'invalid_format',
    )
  })
})

describe('verifyRequest round trips', () => {
  it('GET without body, did:key resolved by createKeyResolver()', async () => {
    const url = messagesUrl(alice.id)
    const headers = await signRequest({
      method: 'GET',
      url,
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    expect(headers['Content-Digest']).toBeUndefined()
    expect(headers['Signature-Input']).not.toContain('content-digest')
    const r = await verifyRequest(verifyInput({ headers, expectedAgent: alice.id }))
    expect(r).toEqual({ agent: alice.id, keyId: alice.signer.keyId, source: 'did-key', level: 3 })
    expect(alice.signer.keyId).toBe(`${alice.id}#${didKeyFragment(alice.id)}`)
  })

  it('POST with body, using a Headers object', async () => {
    const url = `${BASE}/relay/subscribe`
    const body = utf8Encode(JSON.stringify({ subscribe: { agent: alice.id } }))
    const h = await signRequest({
      method: 'POST',
      url,
      body,
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    expect(h['Content-Digest']).toBe(await contentDigest(body))
    const r = await verifyRequest(
      verifyInput({
        method: 'POST',
        targetUri: url,
        headers: new Headers(h),
        body,
        expectedAgent: alice.id,
      }),
    )
    expect(r.agent).toBe(alice.id)
  })

  it('DELETE, lower-case header names, default clock', async () => {
    const url = `${BASE}/relay/messages/01JD3V8Q6X5K2M9N4P7R0S1T2U?agent=${enc(alice.id)}&from=${enc(bob.id)}`
    const h = await signRequest({ method: 'delete', url, signer: alice.signer })
    const lower = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]))
    const r = await verifyRequest({
      method: 'DELETE',
      targetUri: url,
      headers: lower,
      resolver,
      nonces: new NonceMemory(),
    })
    expect(r.keyId).toBe(alice.signer.keyId)
  })

  it('an empty body counts as no body', async () => {
    const url = `${BASE}/relay/subscribe`
    const h = await signRequest({
      method: 'POST',
      url,
      body: new Uint8Array(),
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    expect(h['Content-Digest']).toBeUndefined()
    await verifyRequest(
      verifyInput({ method: 'POST', targetUri: url, headers: h, body: new Uint8Array() }),
    )
  })

  it('uses the received Signature-Input text as is (non-canonical spacing)', async () => {
    const spaced = `(  "@method"   "@target-uri" );created=${T};  nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`
    const h = await manualHeaders({ params: spaced })
    h['Signature-Input'] = `  ${h['Signature-Input']}  `
    await verifyRequest(verifyInput({ headers: h }))
    // A signature over the canonical serialisation does not match the spaced text.
    const canonical = await manualHeaders({ params: getParams() })
    await rejects(
      verifyRequest(
        verifyInput({ headers: { ...canonical, 'Signature-Input': `sig1=${spaced}` } }),
      ),
      'invalid_signature',
    )
  })
})

describe('verifyRequest refusals', () => {
  let getHeaders: Record<string, string>
  let postHeaders: Record<string, string>
  const postUrl = `${BASE}/relay/subscribe?x=1`
  const body = utf8Encode('{"subscribe":{"agent":"x"}}')

  beforeAll(async () => {
    getHeaders = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    postHeaders = await signRequest({
      method: 'POST',
      url: postUrl,
      body,
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
  })

  const post = (over: Partial<VerifyRequestInput> = {}) =>
    verifyInput({ method: 'POST', targetUri: postUrl, headers: postHeaders, body, ...over })

  it('the untampered requests verify (control)', async () => {
    await verifyRequest(verifyInput({ headers: getHeaders }))
    await verifyRequest(post())
  })

  it('missing auth → unauthorized', async () => {
    await rejects(verifyRequest(verifyInput({ headers: {} })), 'unauthorized')
    await rejects(verifyRequest(verifyInput({ headers: new Headers() })), 'unauthorized')
    await rejects(
      verifyRequest(verifyInput({ headers: { Signature: getHeaders['Signature']! } })),
      'unauthorized',
    )
    await rejects(
      verifyRequest(
        verifyInput({ headers: { 'Signature-Input': getHeaders['Signature-Input']! } }),
      ),
      'unauthorized',
    )
  })

  it('tampered method, path, query → invalid_signature', async () => {
    await rejects(
      verifyRequest(verifyInput({ method: 'DELETE', headers: getHeaders })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ method: 'get', headers: getHeaders })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `${BASE}/relay/stream?agent=${enc(alice.id)}&limit=10`,
          headers: getHeaders,
        }),
      ),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `${BASE}/relay/messages?agent=${enc(alice.id)}&limit=11`,
          headers: getHeaders,
        }),
      ),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `https://other.example/relay/messages?agent=${enc(alice.id)}&limit=10`,
          headers: getHeaders,
        }),
      ),
      'invalid_signature',
    )
    await rejects(verifyRequest(post({ method: 'PUT' })), 'invalid_signature')
    await rejects(
      verifyRequest(post({ targetUri: `${BASE}/relay/subscribe?x=2` })),
      'invalid_signature',
    )
  })

  it('tampered body or Content-Digest → invalid_signature', async () => {
    const other = utf8Encode('{"subscribe":{"agent":"y"}}')
    // Body changed, digest kept: the digest no longer matches.
    await rejects(verifyRequest(post({ body: other })), 'invalid_signature')
    // Body and digest changed together: the digest matches but is covered by the signature.
    await rejects(
      verifyRequest(
        post({
          body: other,
          headers: { ...postHeaders, 'Content-Digest': await contentDigest(other) },
        }),
      ),
      'invalid_signature',
    )
    // Digest changed alone.
    await rejects(
      verifyRequest(
        post({ headers: { ...postHeaders, 'Content-Digest': await contentDigest(other) } }),
      ),
      'invalid_signature',
    )
    // Digest missing, malformed, other algorithm, unpadded base64.
    const { 'Content-Digest': digest, ...noDigest } = postHeaders
    await rejects(verifyRequest(post({ headers: noDigest })), 'invalid_signature')
    await rejects(
      verifyRequest(post({ headers: { ...postHeaders, 'Content-Digest': 'garbage' } })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        post({
          headers: { ...postHeaders, 'Content-Digest': digest!.replace('sha-256', 'sha-512') },
        }),
      ),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        post({ headers: { ...postHeaders, 'Content-Digest': digest!.replace('=:', ':') } }),
      ),
      'invalid_signature',
    )
    // A body on a request signed without one.
    await rejects(verifyRequest(verifyInput({ headers: getHeaders, body })), 'invalid_signature')
  })

  it('tampered created, nonce, keyid, alg → invalid_signature', async () => {
    const si = getHeaders['Signature-Input']!
    const swap = (from: string, to: string) => {
      expect(si).toContain(from)
      return { ...getHeaders, 'Signature-Input': si.replace(from, to) }
    }
    await rejects(
      verifyRequest(verifyInput({ headers: swap(`created=${T}`, `created=${T + 1}`) })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap(NONCE, 'BBBBBBBBBBBBBBBBBBBBBA') })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap(kid(), bob.signer.keyId) })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap('alg="ed25519"', 'alg="rsa-v1_5-sha256"') })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap('alg="ed25519"', 'alg=ed25519') })),
      'invalid_signature',
    )
    // The signature bytes themselves.
    const sig = getHeaders['Signature']!
    const flipped = sig.slice(0, 6) + (sig[6] === 'A' ? 'B' : 'A') + sig.slice(7)
    await rejects(
      verifyRequest(verifyInput({ headers: { ...getHeaders, Signature: flipped } })),
      'invalid_signature',
    )
  })

  it('two signatures, or another label → invalid_signature', async () => {
    const second = await manualHeaders({
      label: 'sig2',
      params: getParams().replace(NONCE, 'BBBBBBBBBBBBBBBBBBBBBA'),
    })
    // Each signature verifies on its own...
    await rejects(verifyRequest(verifyInput({ headers: second })), 'invalid_signature')
    const both = {
      'Signature-Input': `${getHeaders['Signature-Input']}, ${second['Signature-Input']}`,
      Signature: `${getHeaders['Signature']}, ${second['Signature']}`,
    }
    await rejects(verifyRequest(verifyInput({ headers: both })), 'invalid_signature')
    // Two header lines, combined by Headers.
    const lines = new Headers()
    lines.append('Signature-Input', getHeaders['Signature-Input']!)
    lines.append('Signature-Input', second['Signature-Input']!)
    lines.append('Signature', getHeaders['Signature']!)
    lines.append('Signature', second['Signature']!)
    await rejects(verifyRequest(verifyInput({ headers: lines })), 'invalid_signature')
    // The same label twice.
    const twice = {
      ...getHeaders,
      Signature: `${getHeaders['Signature']}, ${getHeaders['Signature']}`,
    }
    await rejects(verifyRequest(verifyInput({ headers: twice })), 'invalid_signature')
    // Two in Signature-Input, only sig1 in Signature.
    const extraInput = { ...getHeaders, 'Signature-Input': both['Signature-Input'] }
    await rejects(verifyRequest(verifyInput({ headers: extraInput })), 'invalid_signature')
    // Labels that disagree, each signature otherwise valid (the label is not in the base).
    const sig2Value = second['Signature']!.slice('sig2='.length)
    const sig2Params = second['Signature-Input']!.slice('sig2='.length)
    await verifyRequest(
      verifyInput({
        headers: { 'Signature-Input': `sig1=${sig2Params}`, Signature: `sig1=${sig2Value}` },
      }),
    ) // control
    for (const [si, sg] of [
      ['sig2', 'sig1'],
      ['sig1', 'sig2'],
    ]) {
      const headers = { 'Signature-Input': `${si}=${sig2Params}`, Signature: `${sg}=${sig2Value}` }
      await rejects(verifyRequest(verifyInput({ headers })), 'invalid_signature')
    }
    // Only sig1 in Signature-Input, two in Signature.
    const extraSig = {
      ...getHeaders,
      Signature: `${getHeaders['Signature']}, ${second['Signature']}`,
    }
    await rejects(verifyRequest(verifyInput({ headers: extraSig })), 'invalid_signature')
  })

  it('parameters out of order, missing, extra or duplicated → invalid_signature', async () => {
    const ok = await manualHeaders({ params: getParams() })
    await verifyRequest(verifyInput({ headers: ok })) // control: the manual signer is right
    const variants = [
      `("@method" "@target-uri");nonce="${NONCE}";created=${T};keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T};keyid="${kid()}";nonce="${NONCE}";alg="ed25519"`,
      `("@method" "@target-uri");alg="ed25519";created=${T};nonce="${NONCE}";keyid="${kid()}"`,
      `("@method" "@target-uri");created=${T};nonce="${NONCE}";keyid="${kid()}"`,
      `("@method" "@target-uri");created=${T};keyid="${kid()}";alg="ed25519"`,
      getParams(`;expires=${T + 60}`),
      getParams(';tag="x"'),
      `("@method" "@target-uri");created=${T};created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created="${T}";nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T}.0;nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T};nonce=${NONCE};keyid="${kid()}";alg="ed25519"`,
    ]
    for (const params of variants) {
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params }) })),
        'invalid_signature',
      )
    }
  })

  it('covered components not exactly the profile list → invalid_signature', async () => {
    const tail = `;created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`
    for (const list of [
      '("@target-uri" "@method")',
      '("@method")',
      '("@method" "@target-uri" "@authority")',
      '("@method" "@path")',
      '("@method" "@target-uri";sf)',
      '()',
    ]) {
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params: list + tail }) })),
        'invalid_signature',
      )
    }
    // content-digest covered on a request without a body (GET).
    const empty = await contentDigest(new Uint8Array())
    const withDigest = await manualHeaders({
      params: `("@method" "@target-uri" "content-digest")${tail}`,
      digest: empty,
    })
    await rejects(verifyRequest(verifyInput({ headers: withDigest })), 'invalid_signature')
    // content-digest not covered on a request with a body.
    const noDigest = await manualHeaders({
      method: 'POST',
      targetUri: postUrl,
      params: `("@method" "@target-uri")${tail}`,
    })
    await rejects(verifyRequest(post({ headers: noDigest })), 'invalid_signature')
  })

  it('malformed structured fields, base64, nonce and keyid → invalid_signature', async () => {
    for (const si of [
      'sig1=',
      'sig1=(',
      'sig1="x"',
      'sig1',
      'SIG1=("@method" "@target-uri")',
      'sig1=("@method" "@target-uri");created=1,',
    ]) {
      await rejects(
        verifyRequest(verifyInput({ headers: { ...getHeaders, 'Signature-Input': si } })),
        'invalid_signature',
      )
    }
    const b64 = getHeaders['Signature']!.slice(6, -1)
    for (const sig of [
      `sig1=:${b64.replace(/=+$/, '')}:`, // unpadded
      `sig1=:${b64.slice(4)}:`, // too short
      `sig1=:${b64}`, // unterminated
      `sig1=:-${b64.slice(1)}:`, // base64url alphabet
      `sig1="${b64}"`, // a string, not bytes
      `sig1=:${b64}:;x=1`, // parameters
    ]) {
      await rejects(
        verifyRequest(verifyInput({ headers: { ...getHeaders, Signature: sig } })),
        'invalid_signature',
      )
    }
    for (const nonce of [
      'AAAAAAAAAAAAAAAAAAAAA',
      'A'.repeat(65),
      'AAAAAAAAAAAAAAAAAAAAA=',
      'AAAAAAAAAAAAAAAAAAAAA+',
      'AAAAAAAAAAAAAAAAAAAAAB',
    ]) {
      const params = getParams().replace(NONCE, nonce)
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params }) })),
        'invalid_signature',
      )
    }
    // A nonce of 64 characters is fine.
    await verifyRequest(
      verifyInput({
        headers: await manualHeaders({ params: getParams().replace(NONCE, 'A'.repeat(64)) }),
      }),
    )
    for (const keyid of [
      'no-hash',
      `${alice.id}#`,
      `#x`,
      `${alice.id}#other`,
      'https://Alice.example#k1',
    ]) {
      const params = getParams().replace(kid(), keyid)
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params }) })),
        'invalid_signature',
      )
    }
  })

  it('created within ±5 minutes, boundaries included', async () => {
    const at = (now: number) => verifyRequest(verifyInput({ headers: getHeaders, now }))
    await at(NOW + 300_000)
    await at(NOW - 300_000)
    await rejects(at(NOW + 300_001), 'invalid_signature')
    await rejects(at(NOW - 300_001), 'invalid_signature')
    await rejects(at(NOW + 3_600_000), 'invalid_signature')
  })

  it('a reused (keyid, nonce) is refused for 10 minutes, then accepted', async () => {
    const nonces = new NonceMemory()
    await verifyRequest(verifyInput({ headers: getHeaders, nonces }))
    await rejects(verifyRequest(verifyInput({ headers: getHeaders, nonces })), 'invalid_signature')
    // Another request (other path) with the same nonce and key is a replay too.
    const other = await signRequest({
      method: 'GET',
      url: `${BASE}/relay/stream?agent=${enc(alice.id)}`,
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `${BASE}/relay/stream?agent=${enc(alice.id)}`,
          headers: other,
          nonces,
        }),
      ),
      'invalid_signature',
    )
    // Another key may use the same nonce.
    const byBob = await signRequest({
      method: 'GET',
      url: messagesUrl(bob.id),
      signer: bob.signer,
      created: T,
      nonce: NONCE,
    })
    await verifyRequest(verifyInput({ targetUri: messagesUrl(bob.id), headers: byBob, nonces }))
    // Ten minutes later, with a fresh created, the nonce is usable again.
    const later = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: alice.signer,
      created: T + 600,
      nonce: NONCE,
    })
    await rejects(
      verifyRequest(verifyInput({ headers: later, nonces, now: NOW + 600_000 })),
      'invalid_signature',
    )
    await verifyRequest(verifyInput({ headers: later, nonces, now: NOW + 600_001 }))
  })

  it('bad signatures do not consume the nonce', async () => {
    const nonces = new NonceMemory()
    await rejects(
      verifyRequest(verifyInput({ method: 'POST', headers: getHeaders, nonces })),
      'invalid_signature',
    )
    expect(nonces.size).toBe(0)
    await verifyRequest(verifyInput({ headers: getHeaders, nonces }))
  })

  it("another agent's mailbox → forbidden, but only after the signature verified", async () => {
    await rejects(
      verifyRequest(verifyInput({ headers: getHeaders, expectedAgent: bob.id })),
      'forbidden',
    )
    await rejects(
      verifyRequest(verifyInput({ method: 'PUT', headers: getHeaders, expectedAgent: bob.id })),
      'invalid_signature',
    )
    // Bob signs a request for Alice's mailbox with his own key.
    const h = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: bob.signer,
      created: T,
      nonce: NONCE,
    })
    const e = await rejects(
      verifyRequest(verifyInput({ headers: h, expectedAgent: alice.id })),
      'forbidden',
    )
    expect(e.status).toBe(403)
  })
})

describe('verifyRequest key resolution', () => {
  const urlAgent = 'https://alice.example'
  let keys: KeyPair
  let signer: Signer
  const url = messagesUrl(urlAgent)

  beforeAll(async () => {
    keys = await generateKeyPair()
    signer = ed25519Signer(keys, `${urlAgent}#k1`)
  })

  const docResolver = (
    document: ReturnType<typeof createIdentityDocument>,
    publicKey: Uint8Array,
  ): KeyResolver => ({
    async resolve(lookup) {
      if (lookup.agent !== urlAgent || lookup.fragment !== 'k1')
        return { status: 'not_found', reason: 'no such key' }
      return {
        status: 'found',
        key: { alg: 'ed25519', publicKey, source: 'identity-document', document },
      }
    },
  })

  it('an identity-document key verifies at level 2; a revoked one → key_revoked', async () => {
    const doc = createIdentityDocument({
      agentId: urlAgent,
      publicKey: keys.publicKey,
      keyId: 'k1',
      created: NOW - 3_600_000,
    })
    const h = await signRequest({ method: 'GET', url, signer, created: T, nonce: NONCE })
    const r = await verifyRequest(
      verifyInput({
        targetUri: url,
        headers: h,
        resolver: docResolver(doc, keys.publicKey),
        expectedAgent: urlAgent,
      }),
    )
    expect(r).toMatchObject({
      agent: urlAgent,
      keyId: `${urlAgent}#k1`,
      source: 'identity-document',
      level: 2,
    })
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: url,
          headers: h,
          resolver: docResolver(revokeKey(doc, 'k1'), keys.publicKey),
        }),
      ),
      'key_revoked',
    )
    // Retired more than 5 minutes before created → key_revoked too.
    const next = await generateKeyPair()
    const rotated = rotateKey(
      doc,
      { publicKey: next.publicKey, keyId: 'k2' },
      { now: NOW - 600_000 },
    )
    await rejects(
      verifyRequest(
        verifyInput({ targetUri: url, headers: h, resolver: docResolver(rotated, keys.publicKey) }),
      ),
      'key_revoked',
    )
  })

  it('a pinned key verifies; an unresolvable key → unknown_sender', async () => {
    const h = await signRequest({ method: 'GET', url, signer, created: T, nonce: NONCE })
    const keyStore = new KeyStore()
    await rejects(
      verifyRequest(
        verifyInput({ targetUri: url, headers: h, resolver: createKeyResolver({ keyStore }) }),
      ),
      'unknown_sender',
    )
    await keyStore.pin(urlAgent, 'k1', keys.publicKey)
    const r = await verifyRequest(
      verifyInput({ targetUri: url, headers: h, resolver: createKeyResolver({ keyStore }) }),
    )
    expect(r.level).toBe(2)
  })

  it('a lookup that failed for now → unavailable with retryAfter', async () => {
    const h = await signRequest({ method: 'GET', url, signer, created: T, nonce: NONCE })
    const down: KeyResolver = {
      resolve: async () => ({ status: 'unavailable', reason: 'timeout', retryAfter: 42 }),
    }
    const nonces = new NonceMemory()
    const e = await rejects(
      verifyRequest(verifyInput({ targetUri: url, headers: h, resolver: down, nonces })),
      'unavailable',
    )
    expect(e.retryAfter).toBe(42)
    expect(e.status).toBe(503)
    expect(nonces.size).toBe(0)
  })
})

describe('NonceMemory', () => {
  it('remembers pairs for exactly the retention period', () => {
    let now = 1000
    const m = new NonceMemory({ now: () => now })
    expect(m.checkAndRemember('k#1', 'n')).toBe('fresh')
    expect(m.checkAndRemember('k#1', 'n')).toBe('replay')
    expect(m.checkAndRemember('k#2', 'n')).toBe('fresh')
    expect(m.checkAndRemember('k#1', 'm')).toBe('fresh')
    now += 600_000
    expect(m.checkAndRemember('k#1', 'n')).toBe('replay')
    now += 1
    expect(m.checkAndRemember('k#1', 'n')).toBe('fresh')
  })

  it('is bounded: prunes expired pairs, then refuses with unavailable rather than forgetting', () => {
    let now = 0
    const m = new NonceMemory({ now: () => now, maxEntries: 3 })
    m.checkAndRemember('k#1', 'a')
    now = 1000
    m.checkAndRemember('k#1', 'b')
    m.checkAndRemember('k#1', 'c')
    const e = (() => {
      try {
        m.checkAndRemember('k#1', 'd')
      } catch (err) {
        return err as AgentMsgError
      }
      return undefined
    })()
    expect(e?.code).toBe('unavailable')
    expect(e?.retryAfter).toBe(599) // until 'a' expires at 600_000
    expect(m.size).toBe(3)
    // A live pair is still refused as a replay while full.
    expect(m.checkAndRemember('k#1', 'b')).toBe('replay')
    now = 600_001 // 'a' expired
    expect(m.checkAndRemember('k#1', 'd')).toBe('fresh')
    expect(m.size).toBe(3)
    expect(m.checkAndRemember('k#1', 'b')).toBe('replay')
  })

  it('prunes expired pairs even when the clock stepped back', () => {
    let now = 10_000_000
    const m = new NonceMemory({ now: () => now, maxEntries: 2 })
    m.checkAndRemember('k#1', 'late')
    now = 0
    m.checkAndRemember('k#1', 'early')
    now = 5_000_000 // 'early' expired, 'late' not; 'late' comes first in insertion order
    expect(m.checkAndRemember('k#1', 'x')).toBe('fresh')
    expect(m.checkAndRemember('k#1', 'late')).toBe('replay')
  })

  it('a full memory makes verifyRequest answer unavailable', async () => {
    const nonces = new NonceMemory({ maxEntries: 1, now: () => NOW })
    const h1 = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    const h2 = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: alice.signer,
      created: T,
      nonce: 'BBBBBBBBBBBBBBBBBBBBBA',
    })
    await verifyRequest(verifyInput({ headers: h1, nonces }))
    await rejects(verifyRequest(verifyInput({ headers: h2, nonces })), 'unavailable')
  })
})
