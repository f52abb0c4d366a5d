/**
 * Attack (issue 9, item 12): a `"__proto__"` member added to a signature object. Every member
 * but `sig` is bound (PROFILE §3), so a message that gains one no longer verifies; one that was
 * there when signing is covered like any other extension member.
 */
import { describe, expect, it } from 'vitest'
import { createKeyResolver } from '../src/identity-resolver.js'
import { signMessage } from '../src/sign.js'
import { parseStrictJson } from '../src/strict-json.js'
import type { JsonValue } from '../src/types.js'
import { verifyMessage } from '../src/verify.js'
import { sampleMessage } from './fixtures.js'
import { alice, bob, failure } from './sign-verify-helpers.js'

const resolver = createKeyResolver()
const parse = (text: string) => parseStrictJson(text)

/** `text` with `member` (raw JSON) inserted first in the first signature object. */
function withMember(text: string, member: string): string {
  const at = text.indexOf('{', text.indexOf('"signatures":[')) + 1
  return `${text.slice(0, at)}${member},${text.slice(at)}`
}

describe('attack: a "__proto__" member in a signature object (PROFILE §3)', () => {
  it('an added "__proto__" member makes the signature fail', async () => {
    const signed = await signMessage(sampleMessage(alice.id, bob.id), alice.signer)
    const text = JSON.stringify(signed)
    expect((await verifyMessage(parse(text), resolver)).level).toBe(3)

    const tampered = parse(withMember(text, '"__proto__":{"alg":"none","admin":true}'))
    const sig = (tampered.security as { signatures: object[] }).signatures[0]!
    // The strict parser keeps it as a member, not as the object's prototype.
    expect(Object.hasOwn(sig, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(sig)).toBe(Object.prototype)
    const e = await failure(verifyMessage(tampered, resolver))
    expect(e.code).toBe('invalid_signature')

    // A primitive value is bound the same way.
    const e2 = await failure(verifyMessage(parse(withMember(text, '"__proto__":1')), resolver))
    expect(e2.code).toBe('invalid_signature')
  })

  it('a "__proto__" member present when signing is covered: changing it breaks the signature', async () => {
    const extensions = parse('{"__proto__":{"note":"signed"}}') as Record<string, JsonValue>
    const signed = await signMessage(sampleMessage(alice.id, bob.id), alice.signer, { extensions })
    const text = JSON.stringify(signed)
    expect(text).toContain('"__proto__":{"note":"signed"}')
    expect((await verifyMessage(parse(text), resolver)).level).toBe(3)

    const changed = text.replace('"note":"signed"', '"note":"forged"')
    expect((await failure(verifyMessage(parse(changed), resolver))).code).toBe('invalid_signature')
  })
})
