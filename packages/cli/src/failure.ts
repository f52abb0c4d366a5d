/**
 * Why a connection or a delivery failed, from what the client exposes: the PROFILE §6 code and
 * the peer's status of an `AgentMsgError`, and the Node error codes (or a `TimeoutError`) among
 * its causes. Each reason is one line: what failed, why, and what to do next.
 */
import type { NodeAgentOptions } from '@agentmsg/client/node'
import { isAgentMsgError } from '@agentmsg/core'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { CliError, devCaFile, withCauses } from './command.js'

/** Every error in `error`'s causes (an `AggregateError`'s, too: one per relay tried). */
export function causes(error: unknown, depth = 0): unknown[] {
  if (error === null || error === undefined || depth > 8) return []
  const inner = error instanceof AggregateError ? error.errors : []
  const cause = (error as { cause?: unknown }).cause
  return [error, ...inner.flatMap((e) => causes(e, depth + 1)), ...causes(cause, depth + 1)]
}

const codeOf = (e: unknown) => (e as { code?: unknown } | null)?.code
const codes = (error: unknown) =>
  causes(error)
    .map(codeOf)
    .filter((c): c is string => typeof c === 'string')

/** Node's (OpenSSL's) codes for a certificate that does not verify. */
const CERT = /^(ERR_TLS_CERT_ALTNAME_INVALID|[A-Z_]*CERT[A-Z_]*|UNABLE_TO_(GET|VERIFY)_[A-Z_]+)$/
/** Nothing listens there, or the host does not resolve or cannot be reached. */
const DOWN = /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/

/** The certificate error code among `error`'s causes, if the failure is one. */
export const certificateCode = (error: unknown): string | undefined =>
  codes(error).find((c) => CERT.test(c))

/** What to do about a certificate `where` presented that does not verify. */
export const certificateFix = (where: string, code: string) =>
  `${where}: its certificate does not verify (${code}) — pass its CA with --ca FILE; a --dev-tls server's is --ca ${devCaFile()} (agentmsg dev-ca path)`

/**
 * One line for a failed send to `to` (`relays`: the ones named with `--relay`), or undefined
 * when the failure is none of those with a known next step.
 */
export function sendFailure(error: unknown, to: string, relays: readonly string[]) {
  const where = relays.length ? relays.join(', ') : to
  const doctor = `agentmsg doctor ${relays[0] ?? to}`
  const cert = certificateCode(error)
  if (cert) return certificateFix(where, cert)
  const down = codes(error).find((c) => DOWN.test(c))
  const what = relays.length ? 'is the relay running?' : 'is its inbox running?'
  if (down) return `${where}: nothing answered (${down}) — ${what} check with \`${doctor}\``
  if (causes(error).some((e) => (e as Error | null)?.name === 'TimeoutError'))
    return `${where}: no answer in time (overloaded, or a firewall drops the packets?) — check with \`${doctor}\``
  const relayed = relays.length > 0 || to.startsWith('did:')
  if (isAgentMsgError(error) && error.code === 'not_found' && error.peerStatus === 404 && relayed)
    return `${where}: no mailbox for ${to} — the recipient has not listened on this relay yet: they run agentmsg listen --relay ${relays[0]} (or tell you their relay)`
  return undefined
}

/** A failed send as a {@link CliError} with its one line and, as `detail`, the whole chain. */
export function sendError(error: unknown, to: string, relays: readonly string[]): unknown {
  const line = sendFailure(error, to, relays)
  if (line === undefined) return error
  const code = certificateCode(error)
    ? 'certificate'
    : isAgentMsgError(error)
      ? error.code
      : 'failed'
  return new CliError(code, line, 1, withCauses(error))
}

/**
 * Why a send that came back pending (kept in the outbox: failed for now) was taken by none of
 * the relays it named: the first of them that cannot be reached, asked once with the send's own
 * network (the client keeps the outbox's reasons to itself).
 */
export async function whyPending(
  to: string,
  relays: readonly string[],
  network: Pick<NodeAgentOptions, 'ca' | 'addressPolicy'>,
): Promise<string | undefined> {
  const fetch = createNodeFetch({ ...network, timeoutMs: 5000 })
  for (const relay of relays) {
    try {
      await (await fetch(relay)).body?.cancel()
    } catch (error) {
      return sendFailure(error, to, [relay])
    }
  }
  return undefined
}
