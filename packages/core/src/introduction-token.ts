// Introduction tokens (PROFILE §5) apart from `introducedIdentity`: a sender signing a level-0
// greeting must not load document validation.
import { getDefaultCryptoProvider } from '#crypto-default'
import { base64urlDecode, base64urlEncode } from './base64url.js'
import { randomBytes } from './bytes.js'
import type { CryptoProvider } from './crypto/provider.js'
import { invalidFormat } from './errors.js'
import type { Signer } from './keys.js'

/** A new introduction token for both humans: base64url of 32 random bytes (PROFILE §5). */
export function createIntroductionToken(): string {
  return base64urlEncode(randomBytes(32))
}

/** The key_id fragment of an introduction secret: `intro-` + 16 chars of base64url(SHA-256). */
export async function introductionFragment(
  secret: Uint8Array,
  provider?: CryptoProvider,
): Promise<string> {
  const digest = await (provider ?? getDefaultCryptoProvider()).sha256(secret)
  return 'intro-' + base64urlEncode(digest).slice(0, 16)
}

/** A level-0 {@link Signer} (`hmac-sha256`) for an introduction token, signing as `agentId`. */
export async function hmacSigner(
  token: string,
  agentId: string,
  provider?: CryptoProvider,
): Promise<Signer> {
  const secret = base64urlDecode(token, 'token')
  if (secret.length !== 32) throw invalidFormat('an introduction token is 32 bytes', 'token')
  const p = provider ?? getDefaultCryptoProvider()
  return {
    alg: 'hmac-sha256',
    keyId: `${agentId}#${await introductionFragment(secret, p)}`,
    sign: (data) => p.hmacSha256(secret, data),
  }
}
