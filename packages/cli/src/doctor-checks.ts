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
  fix,
})
/** Checks that could not run, and why. */
export const skipped = (why: string, ...checks: string[]): CheckResult[] =>
  checks.map((check) => ({ check, status: 'skipped', detail: `not checked: ${why}` }))

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

/** {@link get}, or the failed `check` saying why (`role`: what should answer at `url`). */
export async function getFor(
  probe: Probe,
  check: string,
  url: string,
  role = 'inbox',
  label = url,
): Promise<Answer | CheckResult> {
  try {
    return await get(probe, url)
  } catch (error) {
    const { detail, fix } = explain(error, url, role, probe.caGiven)
    return failed(check, `${label}: ${detail}`, fix)
  }
}

/** A GET answered 405 with `Allow: POST`: an inbox or a relay's publish endpoint. */
export const postOnly = ({ res }: Answer): boolean =>
  res.status === 405 && /\bPOST\b/.test(res.headers.get('allow') ?? '')

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
  const s = Math.round(Math.abs(skew) / 1000)
  const amount = s < 120 ? `${s} s` : `${Math.round(s / 60)} min`
  const words =
    s <= 1
      ? 'agrees with this clock'
      : `is ${amount} ${skew > 0 ? 'ahead of' : 'behind'} this clock`
  if (Math.abs(skew) <= PROFILE.clockSkewMs)
    return ok('clock', `${who} ${words} (within ±${PROFILE.clockSkewMs / 60_000} min)`)
  return failed(
    'clock',
    `${who} ${words}: messages would be refused as stale_message (PROFILE §6)`,
    'sync the clocks (NTP)',
  )
}

/** The identity document at the agent's well-known URL, checked (PROFILE §4). */
export function identityCheck(
  agentId: string,
  answer: Answer,
): { result: CheckResult; doc?: IdentityDocument } {
  const url = agentEndpoints(agentId).identity
  if (answer.res.status !== 200) {
    const fix = 'serve the identity document there (agentmsg inbox does), or check the agent id'
    return { result: failed('identity', `${url} answered ${answer.res.status}`, fix) }
  }
  try {
    const doc = validateIdentityDocument(JSON.parse(answer.body), { expectedAgentId: agentId })
    const active = doc.keys.filter((k) => k.status === 'active').length
    const relays = doc.relay?.urls.length ?? 0
    const detail = `${url}: valid, ${active} active key(s), ${relays} relay(s)`
    return { result: ok('identity', detail), doc }
  } catch (error) {
    const { field } = error as { field?: string }
    const detail = `${url}: invalid document: ${field === undefined ? '' : `${field}: `}${(error as Error).message}`
    const fix = 'serve a valid identity document (PROFILE §4; agentmsg inbox does)'
    return { result: failed('identity', detail, fix) }
  }
}

/** The inbox answers as one: a GET gets 405 with `Allow: POST` (PROFILE §6, method first). */
export async function inboxCheck(probe: Probe, url: string): Promise<CheckResult> {
  const answer = await getFor(probe, 'inbox', url)
  if (!('res' in answer)) return answer
  const { status, headers } = answer.res
  if (postOnly(answer))
    return ok('inbox', `${url}: answers (GET → 405, Allow: ${headers.get('allow')})`)
  return failed(
    'inbox',
    `${url}: GET answered ${status}, not 405 with Allow: POST`,
    'serve the inbox at the endpoint the document names (agentmsg inbox does)',
  )
}

/** The capabilities document (PROFILE §10): its shape, its agent, and encryption it opens. */
export async function capabilitiesCheck(
  probe: Probe,
  agentId: string,
  url: string,
): Promise<CheckResult> {
  const answer = await getFor(probe, 'capabilities', url)
  if (!('res' in answer)) return answer
  const fix = 'serve the capabilities document of PROFILE §10 (agentmsg inbox does)'
  if (answer.res.status !== 200)
    return failed('capabilities', `${url} answered ${answer.res.status}`, fix)
  let doc: unknown
  try {
    doc = JSON.parse(answer.body)
  } catch {
    return failed('capabilities', `${url}: not JSON`, fix)
  }
  const problem = capabilitiesProblem(doc, agentId)
  if (problem !== undefined) return failed('capabilities', `${url}: ${problem}`, fix)
  const encryption = (doc as { encryption: unknown[] }).encryption
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
  const answer = await getFor(probe, 'relay', `${base}/relay/publish`, 'relay', base)
  const result = (r: CheckResult): CheckResult => ({ ...r, url: base })
  if (!('res' in answer)) return result(answer)
  if (!postOnly(answer)) {
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

/** Each of `urls` checked as a relay. */
export const relayChecks = (probe: Probe, urls: readonly string[]): Promise<CheckResult[]> =>
  Promise.all(urls.map((url) => relayCheck(probe, url)))
