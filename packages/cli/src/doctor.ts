/**
 * `agentmsg doctor URL|ID`: check an agent (or a relay) from this machine, one line per check,
 * ✓ or ✗ with what to do — TLS, the identity document, the clock, the inbox, the capabilities
 * document and every relay. Exit 0 when all pass, 1 when one fails, 2 on a usage error.
 */
import { agentEndpoints, isDidKey, PROFILE, parseAgentId } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import {
  allowList,
  oneLine,
  parseFlags,
  readCaFiles,
  runCommand,
  usageError,
  writeOut,
} from './command.js'
import {
  type Answer,
  type CheckResult,
  capabilitiesCheck,
  clockCheck,
  failed,
  get,
  identityCheck,
  inboxCheck,
  isRelayAnswer,
  ok,
  type Probe,
  relayCheck,
} from './doctor-checks.js'
import { explain } from './doctor-explain.js'

export const DOCTOR_HELP = `usage: agentmsg doctor URL|ID [--ca F ...] [--allow-private HOSTS] [--relay URL ...] [--json]

Check an agent, or a relay, from this machine: one line per check, ✓ or ✗ with what to do.
  tls           the connection and its certificate (system roots plus --ca)
  identity      the identity document: fetched, valid (PROFILE §4), its agent_id the URL's
  clock         the server's Date against this clock (±5 minutes, PROFILE §6)
  inbox         the inbox endpoint answers (GET → 405, Allow: POST)
  capabilities  the capabilities document: valid (PROFILE §10), lists encryption
  relay         each relay of the document, and each --relay, answers (and its clock)
A did:key has no document: give the relays it listens on with --relay. A relay's own URL
gets tls, clock and relay. Exit codes: 0 every check passed, 1 one failed, 2 usage error.

  --ca F           trust this CA too (PEM), repeatable; a dev server's: $AGENTMSG_HOME/dev-ca/ca.pem
  --allow-private  hosts or ranges on private or loopback addresses it may connect to
  --relay URL      relays to check besides the document's (for a did:key, the only ones)
  --json           one JSON object: {target, ok, checks: [{check, status, detail, fix?, url?}]}

examples:
  agentmsg doctor https://127.0.0.1:8444 --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
  agentmsg doctor did:key:z6Mk… --relay https://relay.example
`

/** Each request's budget: a person waits for the report. */
const TIMEOUT_MS = 10_000

/** `agentmsg doctor`: the report on stdout; exit 0 when every check passed. */
export function runDoctor(argv: string[]): Promise<number> {
  return runCommand(DOCTOR_HELP, argv, async () => {
    const { values, positionals } = parseFlags(
      'doctor',
      argv,
      {
        ca: { type: 'string', multiple: true },
        'allow-private': { type: 'string', multiple: true },
        relay: { type: 'string', multiple: true },
        json: { type: 'boolean' },
      },
      true,
    )
    if (positionals.length !== 1) throw usageError('doctor', 'doctor needs one URL or agent id')
    const target = positionals[0]!
    const relays = (values.relay ?? []).map((url) => relayUrl(url))
    const probe = await makeProbe(values.ca, values['allow-private'])
    const checks = isDidKey(target)
      ? await diagnoseDidKey(probe, relays)
      : await diagnoseUrl(probe, urlTarget(target), relays)
    const allOk = checks.every((c) => c.status === 'ok')
    await writeOut(
      values.json ? `${JSON.stringify({ target, ok: allOk, checks })}\n` : report(checks),
    )
    return allOk ? 0 : 1
  })
}

/** The network of the checks: https only, certificates verified, the address policy applied. */
async function makeProbe(
  caFiles: string[] | undefined,
  allowPrivate: string[] | undefined,
): Promise<Probe> {
  const ca = await readCaFiles(caFiles)
  let addressPolicy: ReturnType<typeof createAddressPolicy>
  try {
    addressPolicy = createAddressPolicy({ allow: allowList(allowPrivate) })
  } catch (error) {
    throw usageError('doctor', `--allow-private: ${(error as Error).message}`)
  }
  const fetch = createNodeFetch({
    ...(ca.length > 0 ? { ca } : {}),
    addressPolicy,
    timeoutMs: TIMEOUT_MS,
    // Documents are capped (PROFILE §4); so is everything doctor reads.
    maxResponseBytes: PROFILE.documentMaxBytes,
    // One request per check: nothing to reuse, and no idle socket keeps the process alive.
    keepAlive: false,
  })
  return { fetch, caGiven: ca.length > 0 }
}

/** The target as a URL agent id (normal form), or a usage error. */
function urlTarget(text: string): string {
  if (!/^https:\/\//i.test(text))
    throw usageError(
      'doctor',
      `${JSON.stringify(text)}: give an https:// URL agent or relay, or a did:key`,
    )
  try {
    return parseAgentId(text.replace(/\/+$/, ''), 'URL').id
  } catch (error) {
    throw usageError('doctor', (error as Error).message)
  }
}

/** A `--relay` URL (https only), or a usage error. */
function relayUrl(text: string): string {
  if (!/^https:\/\/[^/]/i.test(text)) throw usageError('doctor', `--relay ${text}: an https:// URL`)
  return text.replace(/\/+$/, '')
}

/** A did:key: no document, no inbox; only the relays it listens on can be checked. */
async function diagnoseDidKey(probe: Probe, relays: string[]): Promise<CheckResult[]> {
  if (relays.length === 0) {
    throw usageError('doctor', 'a did:key has no document to name its relays: pass --relay URL')
  }
  const identity = ok('identity', 'did:key: no document to fetch, the key is in the id')
  return [identity, ...(await Promise.all(relays.map((url) => relayCheck(probe, url))))]
}

/** A URL agent (or a relay's URL): tls, identity, clock, inbox, capabilities, relays. */
async function diagnoseUrl(
  probe: Probe,
  agentId: string,
  extraRelays: string[],
): Promise<CheckResult[]> {
  const endpoints = agentEndpoints(agentId)
  let answer: Answer
  try {
    answer = await get(probe, endpoints.identity)
  } catch (error) {
    const { detail, fix } = explain(error, endpoints.identity, 'inbox', probe.caGiven)
    const rest = ['identity', 'clock', 'inbox', 'capabilities'].map(
      (check): CheckResult => ({ check, status: 'skipped', detail: 'not checked: tls failed' }),
    )
    const relays = await Promise.all(extraRelays.map((url) => relayCheck(probe, url)))
    return [failed('tls', `${agentId}: ${detail}`, fix), ...rest, ...relays]
  }
  const tls = ok('tls', `${agentId}: connected, certificate verified`)
  // A relay's URL has no identity document: recognise it and check it as a relay.
  if (answer.res.status === 404 && (await isRelay(probe, agentId))) {
    const relays = [agentId, ...extraRelays.filter((url) => url !== agentId)]
    return [tls, ...(await Promise.all(relays.map((url) => relayCheck(probe, url))))]
  }
  const clock = clockCheck(answer, 'its clock')
  const { result: identity, doc } = identityCheck(agentId, answer)
  if (doc === undefined) {
    const rest = ['inbox', 'capabilities'].map(
      (check): CheckResult => ({
        check,
        status: 'skipped',
        detail: 'not checked: no valid document',
      }),
    )
    const relays = await Promise.all(extraRelays.map((url) => relayCheck(probe, url)))
    return [tls, identity, clock, ...rest, ...relays]
  }
  const relayUrls = [...new Set([...(doc.relay?.urls ?? []), ...extraRelays])]
  const [inbox, capabilities, ...relays] = await Promise.all([
    inboxCheck(probe, doc.endpoints.inbox),
    capabilitiesCheck(probe, agentId, doc.endpoints.capabilities),
    ...relayUrls.map((url) => relayCheck(probe, url)),
  ])
  return [tls, identity, clock, inbox!, capabilities!, ...relays]
}

/** Whether `url` is a relay's base URL. */
async function isRelay(probe: Probe, url: string): Promise<boolean> {
  try {
    return isRelayAnswer(await get(probe, `${url}/relay/publish`))
  } catch {
    return false
  }
}

/** The human report: `✓ check  detail` or `✗ check  detail — fix`, one line each. */
function report(checks: CheckResult[]): string {
  const mark = { ok: '✓', failed: '✗', skipped: '-' } as const
  const width = Math.max(...checks.map((c) => c.check.length))
  const lines = checks.map((c) => {
    const text = c.fix === undefined ? c.detail : `${c.detail} — ${c.fix}`
    return `${mark[c.status]} ${c.check.padEnd(width)}  ${oneLine(text)}`
  })
  const failures = checks.filter((c) => c.status === 'failed').length
  const summary = failures === 0 ? 'all checks passed' : `${failures} check(s) failed`
  return `${lines.join('\n')}\n${summary}\n`
}
