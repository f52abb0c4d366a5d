/**
 * `agentmsg doctor URL|ID`: check an agent (or a relay) from this machine, one line per check,
 * ✓ or ✗ with what to do — TLS, the identity document, the clock, the inbox, the capabilities
 * document and every relay. Exit 0 when all pass, 1 when one fails, 2 on a usage error.
 */
import { agentEndpoints, isDidKey, PROFILE, parseAgentId } from '@agentmsg/core'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import {
  CliError,
  commandWithArgs,
  networkFlags,
  oneLine,
  relayFlags,
  safeJson,
  usageError,
  writeOut,
} from './command.js'
import {
  type CheckResult,
  capabilitiesCheck,
  clockCheck,
  get,
  getFor,
  identityCheck,
  inboxCheck,
  ok,
  type Probe,
  postOnly,
  relayChecks,
  skipped,
} from './doctor-checks.js'

const HELP = `usage: agentmsg doctor URL|ID [--ca F ...] [--allow-private HOSTS] [--relay URL ...] [--json]

Check an agent, or a relay, from this machine: one line per check, ✓ or ✗ with what to do:
tls, identity (document valid, PROFILE §4), clock (±5 min), inbox, capabilities (PROFILE §10)
and each relay of the document or --relay (a did:key's only checks). Exit 1: a check failed.
  --ca F, --allow-private HOSTS   as for agentmsg send
  --relay URL      relays to check besides the document's (for a did:key, the only ones)
  --json           one JSON object: {target, ok, checks: [{check, status, detail, fix?, url?}]}

examples:
  agentmsg doctor https://127.0.0.1:8444 --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
  agentmsg doctor did:key:z6Mk… --relay https://relay.example
`

/** Each request's budget: a person waits for the report. */
const TIMEOUT_MS = 10_000

const FLAGS = {
  ca: { type: 'string', multiple: true },
  'allow-private': { type: 'string', multiple: true },
  relay: { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const

/** `agentmsg doctor`: the report on stdout; exit 0 when every check passed. */
export const runDoctor = commandWithArgs(HELP, FLAGS, async ({ values, positionals }) => {
  if (positionals.length !== 1) throw usageError('doctor', 'doctor needs one URL or agent id')
  const target = positionals[0]!
  const relays = relayFlags('doctor', values.relay).map((url) => url.replace(/\/+$/, ''))
  const probe = await makeProbe(values)
  const checks = isDidKey(target)
    ? await diagnoseDidKey(probe, relays)
    : await diagnoseUrl(probe, urlTarget(target), relays)
  const allOk = checks.every((c) => c.status === 'ok')
  await writeOut(values.json ? `${safeJson({ target, ok: allOk, checks })}\n` : report(checks))
  return allOk ? 0 : 1
})

/** The network of the checks: https only, certificates verified, the address policy applied. */
async function makeProbe(values: Parameters<typeof networkFlags>[0]): Promise<Probe> {
  let network: Awaited<ReturnType<typeof networkFlags>>
  try {
    network = await networkFlags(values)
  } catch (error) {
    if (error instanceof CliError) throw error
    throw usageError('doctor', `--allow-private: ${(error as Error).message}`)
  }
  const fetch = createNodeFetch({
    ...network,
    timeoutMs: TIMEOUT_MS,
    // Documents are capped (PROFILE §4); so is everything doctor reads.
    maxResponseBytes: PROFILE.documentMaxBytes,
    // One request per check: nothing to reuse, and no idle socket keeps the process alive.
    keepAlive: false,
  })
  return { fetch, caGiven: network.ca !== undefined }
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

/** A did:key: no document, no inbox; only the relays it listens on can be checked. */
async function diagnoseDidKey(probe: Probe, relays: string[]): Promise<CheckResult[]> {
  if (relays.length === 0) {
    throw usageError('doctor', 'a did:key has no document to name its relays: pass --relay URL')
  }
  const identity = ok('identity', 'did:key: no document to fetch, the key is in the id')
  return [identity, ...(await relayChecks(probe, relays))]
}

/** A URL agent (or a relay's URL): tls, identity, clock, inbox, capabilities, relays. */
async function diagnoseUrl(
  probe: Probe,
  agentId: string,
  extraRelays: string[],
): Promise<CheckResult[]> {
  const answer = await getFor(probe, 'tls', agentEndpoints(agentId).identity, 'inbox', agentId)
  if (!('res' in answer)) {
    return [
      answer,
      ...skipped('tls failed', 'identity', 'clock', 'inbox', 'capabilities'),
      ...(await relayChecks(probe, extraRelays)),
    ]
  }
  const tls = ok('tls', `${agentId}: connected, certificate verified`)
  // A relay's URL has no identity document: recognise it and check it as a relay.
  if (answer.res.status === 404 && (await isRelay(probe, agentId))) {
    const relays = [agentId, ...extraRelays.filter((url) => url !== agentId)]
    return [tls, ...(await relayChecks(probe, relays))]
  }
  const clock = clockCheck(answer, 'its clock')
  const { result: identity, doc } = identityCheck(agentId, answer)
  if (doc === undefined) {
    return [
      tls,
      identity,
      clock,
      ...skipped('no valid document', 'inbox', 'capabilities'),
      ...(await relayChecks(probe, extraRelays)),
    ]
  }
  const [inbox, capabilities, relays] = await Promise.all([
    inboxCheck(probe, doc.endpoints.inbox),
    capabilitiesCheck(probe, agentId, doc.endpoints.capabilities),
    relayChecks(probe, [...new Set([...(doc.relay?.urls ?? []), ...extraRelays])]),
  ])
  return [tls, identity, clock, inbox, capabilities, ...relays]
}

/** Whether `url` is a relay's base URL. */
async function isRelay(probe: Probe, url: string): Promise<boolean> {
  return get(probe, `${url}/relay/publish`).then(postOnly, () => false)
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
