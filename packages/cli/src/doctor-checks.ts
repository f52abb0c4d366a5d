/**
 * The checks of `agentmsg doctor`, each one line: what was found, and on failure what to do
 * (./doctor-explain.ts names the real cause of a failed request).
 */
import { agentEndpoints, type IdentityDocument, PROFILE } from '@agentmsg/core'
import { validateIdentityDocument } from '@agentmsg/core/identity'
import { explain } from './doctor-explain.js'

/** One line of the report. `skipped`: it could not run because an earlier check failed. */
export interface CheckResult {
  check: string
  status: 'ok' | 'failed' | 'skipped'
  detail: string
  fix?: string
  /** The relay a `relay` check is about. */
  url?: string
}

export const ok = (check: string, detail: string): CheckResult => ({ check, status: 'ok', detail })
export const failed = (check: string, detail: string, fix?: string): CheckResult => ({
  check,
  status: 'failed',
  detail,
  ...(fix === undefined ? {} : { fix }),
})

/** What a check needs: the network and whether the user gave CAs. */
export interface Probe {
  fetch: typeof fetch
  caGiven: boolean
}

/** A response and when it was asked and answered (for the clock check). */
export interface Answer {
  res: Response
  body: string
  sentAt: number
  answeredAt: number
}

/** GET `url` and read its (capped) body. */
export async function get(probe: Probe, url: string): Promise<Answer> {
  const sentAt = Date.now()
  const res = await probe.fetch(url, { headers: { accept: 'application/json' } })
  const answeredAt = Date.now()
  return { res, body: await res.text(), sentAt, answeredAt }
}

/** The clock line: the server's `Date` against ours, within PROFILE §6's skew. */
export function clockCheck(answer: Answer, who: string): CheckResult {
  const date = answer.res.headers.get('date')
  const server = date === null ? Number.NaN : Date.parse(date)
  if (Number.isNaN(server))
    return failed(
      'clock',
      `${who} sent no usable Date header`,
      'servers send Date (RFC 9110 §6.6.1)',
    )
  // Date has whole seconds: its middle against the middle of our request.
  const skew = server + 500 - (answer.sentAt + answer.answeredAt) / 2
  const words = skewWords(skew)
  const window = PROFILE.clockSkewMs / 60_000
  if (Math.abs(skew) <= PROFILE.clockSkewMs)
    return ok('clock', `${who} ${words} (within ±${window} min)`)
  return failed(
    'clock',
    `${who} ${words}: messages would be refused as stale_message (PROFILE §6)`,
    'sync the clocks (NTP)',
  )
}

function skewWords(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000)
  if (s <= 1) return 'agrees with this clock'
  const amount = s < 120 ? `${s} s` : `${Math.round(s / 60)} min`
  return `is ${amount} ${ms > 0 ? 'ahead of' : 'behind'} this clock`
}

/** The identity document at the agent's well-known URL, checked (PROFILE §4). */
export function identityCheck(
  agentId: string,
  answer: Answer,
): { result: CheckResult; doc?: IdentityDocument } {
  const url = agentEndpoints(agentId).identity
  if (answer.res.status !== 200) {
    return {
      result: failed(
        'identity',
        `${url} answered ${answer.res.status}`,
        'serve the identity document there (agentmsg inbox does), or check the agent id',
      ),
    }
  }
  try {
    const doc = validateIdentityDocument(JSON.parse(answer.body), { expectedAgentId: agentId })
    const active = doc.keys.filter((k) => k.status === 'active').length
    const relays = doc.relay?.urls.length ?? 0
    return {
      result: ok('identity', `${url}: valid, ${active} active key(s), ${relays} relay(s)`),
      doc,
    }
  } catch (error) {
    const field = (error as { field?: string }).field
    const where = field === undefined ? '' : `${field}: `
    return {
      result: failed(
        'identity',
        `${url}: invalid document: ${where}${(error as Error).message}`,
        'serve a valid identity document (PROFILE §4; agentmsg inbox does)',
      ),
    }
  }
}

/** The inbox answers as one: a GET gets 405 with `Allow: POST` (PROFILE §6, method first). */
export async function inboxCheck(probe: Probe, url: string): Promise<CheckResult> {
  try {
    const { res } = await get(probe, url)
    const allow = res.headers.get('allow') ?? ''
    if (res.status === 405 && /\bPOST\b/.test(allow))
      return ok('inbox', `${url}: answers (GET → 405, Allow: ${allow})`)
    return failed(
      'inbox',
      `${url}: GET answered ${res.status}, not 405 with Allow: POST`,
      'serve the inbox at the endpoint the document names (agentmsg inbox does)',
    )
  } catch (error) {
    const { detail, fix } = explain(error, url, 'inbox', probe.caGiven)
    return failed('inbox', `${url}: ${detail}`, fix)
  }
}

/** The capabilities document (PROFILE §10): its shape, its agent, and encryption it opens. */
export async function capabilitiesCheck(
  probe: Probe,
  agentId: string,
  url: string,
): Promise<CheckResult> {
  let answer: Answer
  try {
    answer = await get(probe, url)
  } catch (error) {
    const { detail, fix } = explain(error, url, 'inbox', probe.caGiven)
    return failed('capabilities', `${url}: ${detail}`, fix)
  }
  const fix = 'serve the capabilities document of PROFILE §10 (agentmsg inbox does)'
  if (answer.res.status !== 200)
    return failed('capabilities', `${url} answered ${answer.res.status}`, fix)
  let doc: Record<string, unknown>
  try {
    doc = JSON.parse(answer.body)
  } catch {
    return failed('capabilities', `${url}: not JSON`, fix)
  }
  const problem = capabilitiesProblem(doc, agentId)
  if (problem !== undefined) return failed('capabilities', `${url}: ${problem}`, fix)
  const encryption = doc.encryption as unknown[]
  if (!encryption.includes('sealed_box')) {
    return failed(
      'capabilities',
      `${url}: lists no encryption, so senders cannot seal to it (PROFILE §8)`,
      "serve it with the agent's keys so it opens sealed_box (agentmsg inbox does)",
    )
  }
  return ok('capabilities', `${url}: valid, encryption: ${encryption.join(', ')}`)
}

/** What is wrong with a capabilities document, or undefined. */
function capabilitiesProblem(doc: unknown, agentId: string): string | undefined {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return 'not a JSON object'
  const d = doc as Record<string, unknown>
  if (d.agentmsg !== 5) return 'agentmsg must be 5'
  if (d.agent_id !== agentId) return `agent_id is ${JSON.stringify(d.agent_id)}, not ${agentId}`
  for (const field of ['content_types', 'phases', 'auth_levels', 'encryption']) {
    if (!Array.isArray(d[field])) return `${field} must be an array`
  }
  if (typeof d.max_message_bytes !== 'number') return 'max_message_bytes must be a number'
  if (typeof d.rate_limit !== 'object' || d.rate_limit === null) return 'rate_limit is missing'
  return undefined
}

/**
 * A relay answers as one: `GET /relay/publish` gets 405 with `Allow: POST` (PROFILE §9; the
 * relay has no unauthenticated read endpoint, and a method check costs it nothing). Its clock
 * matters too: agent auth's `created` must be within ±5 minutes.
 */
export async function relayCheck(probe: Probe, relayUrl: string): Promise<CheckResult> {
  const base = relayUrl.replace(/\/$/, '')
  const url = `${base}/relay/publish`
  const result = (r: CheckResult): CheckResult => ({ ...r, url: base })
  let answer: Answer
  try {
    answer = await get(probe, url)
  } catch (error) {
    const { detail, fix } = explain(error, url, 'relay', probe.caGiven)
    return result(failed('relay', `${base}: ${detail}`, fix))
  }
  if (!isRelayAnswer(answer)) {
    return result(
      failed(
        'relay',
        `${base}: GET /relay/publish answered ${answer.res.status}, not a relay's 405`,
        'check the relay URL (its base URL, as `agentmsg relay` prints it)',
      ),
    )
  }
  const clock = clockCheck(answer, 'its clock')
  if (clock.status !== 'ok') return result(failed('relay', `${base}: ${clock.detail}`, clock.fix))
  return result(ok('relay', `${base}: answers (GET /relay/publish → 405); ${clock.detail}`))
}

/** Whether a GET of `/relay/publish` got a relay's answer. */
export function isRelayAnswer(answer: Answer): boolean {
  return answer.res.status === 405 && /\bPOST\b/.test(answer.res.headers.get('allow') ?? '')
}
