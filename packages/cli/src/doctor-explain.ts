/**
 * Failed requests of `agentmsg doctor` in a person's words: Node's `fetch failed` hides the real
 * cause in `.cause` (a certificate, a refused connection), so errors are unwrapped first.
 */
import { isAddressRefusedError } from '@agentmsg/core/server'
import { devCaFile } from './command.js'
import { causes } from './failure.js'

/** Unknown-authority verification codes (OpenSSL's, as Node reports them). */
const UNKNOWN_CA = new Set([
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
])

/** The first `code` and every message among the error's causes (failure.ts `causes`). */
function unwrap(error: unknown): { code: string | undefined; messages: string } {
  let code: string | undefined
  const messages: string[] = []
  for (const e of causes(error)) {
    const c = (e as { code?: unknown }).code
    if (code === undefined && typeof c === 'string') code = c
    if (e instanceof Error) messages.push(e.message)
    if ((e as { name?: unknown }).name === 'TimeoutError') code ??= 'TimeoutError'
  }
  return { code, messages: messages.join(': ') }
}

type Explained = { detail: string; fix?: string }

/**
 * A failed request to `url` in words: the cause and the fix. `role` names what should answer
 * there, for the "is it running?" hint.
 */
export function explain(error: unknown, url: string, role: string, caGiven: boolean): Explained {
  const { hostname, port } = new URL(url)
  const host = hostname.replace(/^\[|\]$/g, '')
  const where = `${host}:${port || 443}`
  if (isAddressRefusedError(error)) {
    return {
      detail: `${host} is a private or loopback address, refused by default (PROFILE §4)`,
      fix: `pass --allow-private ${host}`,
    }
  }
  const { code = '', messages } = unwrap(error)
  const devCa = devCaFile()
  if (UNKNOWN_CA.has(code)) {
    return {
      detail: `certificate signed by an unknown authority (${code})`,
      fix: caGiven
        ? `the --ca given did not issue it: pass the CA that did (a dev server on this machine: --ca ${devCa})`
        : `pass --ca <the CA file> (a dev server on this machine: --ca ${devCa})`,
    }
  }
  const unreachable = {
    detail: `no answer from ${where} in time`,
    fix: 'is the host reachable (firewall, port)?',
  }
  const unresolved = { detail: `${host} does not resolve`, fix: 'check the host name' }
  const byCode: Record<string, Explained> = {
    ECONNREFUSED: {
      detail: `connection refused by ${where}`,
      fix: `is the ${role} running there?`,
    },
    ERR_TLS_CERT_ALTNAME_INVALID: {
      detail: `certificate is not for ${host}`,
      fix: 'connect by a name the certificate covers (dev certificates: localhost, 127.0.0.1, ::1)',
    },
    CERT_HAS_EXPIRED: {
      detail: 'certificate expired',
      fix: 'renew it (a dev server re-issues it on restart)',
    },
    CERT_NOT_YET_VALID: { detail: 'certificate not valid yet', fix: "check this machine's clock" },
    ENOTFOUND: unresolved,
    EAI_AGAIN: unresolved,
    ECONNRESET: {
      detail: `connection reset by ${where}`,
      fix: `is an https ${role} on that port?`,
    },
    TimeoutError: unreachable,
    ETIMEDOUT: unreachable,
  }
  if (/permitted subtree violation|excluded subtree violation/.test(messages)) {
    return {
      detail: "certificate names a host its CA may not certify (the CA's name constraints)",
      fix: 'a dev CA certifies localhost, *.test and loopback addresses only: connect by one of those',
    }
  }
  if (Object.hasOwn(byCode, code)) return byCode[code]!
  if (/wrong version number|packet length too long|http request/i.test(messages)) {
    return {
      detail: `${where} does not speak TLS (plain http?)`,
      fix: 'agentmsg needs https, also in development: start it with --dev-tls',
    }
  }
  if (/unsupported protocol|protocol version/i.test(messages))
    return {
      detail: `${where} offers only TLS older than 1.2`,
      fix: 'TLS 1.2 or later (PROFILE §6)',
    }
  return { detail: messages || String(error) }
}
