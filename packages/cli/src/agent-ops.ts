/**
 * What `identity`, `rotate`, `contacts`, `send` and the topic commands (group-ops.ts) do to an
 * agent directory's agent, as requests run here or in the `agentmsg inbox`, `listen` or `mcp`
 * that holds the directory (control.ts).
 */
import {
  type Agent,
  type Contact,
  type Content,
  createAgent,
  createNodeAgent,
  fingerprint,
  type NodeAgentOptions,
  type SendOptions,
  type SendResult,
} from '@agentmsg/client/node'
import { didKeyFragment, isDidKey, publicKeyFromDidKey } from '@agentmsg/core'
import { type AgentStore, openOrInUse, rememberRelays, storedRelays } from './agent-dir.js'
import { CliError } from './command.js'
import { askRunning } from './control.js'
import { sendError, whyPending } from './failure.js'
import { performTopic, type TopicRequest } from './group-ops.js'

export type AgentRequest =
  | { op: 'identity' }
  | { op: 'rotate' }
  | { op: 'contacts.list' }
  | { op: 'contacts.pin'; agent: string; publicKey: string; keyId?: string; relays?: string[] }
  | { op: 'contacts.introduce'; token: string; agent?: string }
  | { op: 'contacts.remove'; agent: string }
  | { op: 'send'; to: string; content: Content; options: SendOptions }
  | TopicRequest

/** What `identity` reports: the active key's full id and public key (base64url, what peers pin). */
export interface IdentitySummary {
  agent_id: string
  kind: 'did:key' | 'url'
  key_id: string
  public_key: string
  fingerprint: string
  relays: string[]
  /** URL agents: where the identity document is served (PROFILE §4). */
  document_url?: string
  document?: unknown
}

async function identitySummary(agent: Agent, storage: AgentStore): Promise<IdentitySummary> {
  const { agentId, keyId, publicKey, document } = agent.identity
  return {
    agent_id: agentId,
    kind: document ? 'url' : 'did:key',
    key_id: keyId,
    public_key: Buffer.from(publicKey).toString('base64url'),
    fingerprint: await fingerprint(publicKey),
    relays: await storedRelays(storage, agent.identity),
    ...(document ? { document_url: `${agentId}/.well-known/agentmsg/identity`, document } : {}),
  }
}

/** A did:key's key is its id (PROFILE §4): listed with the stored ones, as `did:key`. */
const withDidKeys = (list: Contact[]) =>
  Promise.all(
    list.map(async (c) => {
      if (c.keys.length || !isDidKey(c.agent)) return c
      const keyId = `${c.agent}#${didKeyFragment(c.agent)}`
      const key = {
        keyId,
        source: 'did:key',
        fingerprint: await fingerprint(publicKeyFromDidKey(c.agent)),
      }
      return { ...c, keys: [key as Contact['keys'][number]] }
    }),
  )

/**
 * Run `request` on `agent` (here, or in the process serving the control socket); `relays`: the
 * agent's (default: the ones D remembers, which a running agent uses).
 */
export async function perform(
  agent: Agent,
  storage: AgentStore,
  request: AgentRequest,
  relays?: string[],
): Promise<unknown> {
  switch (request?.op) {
    case 'identity':
      return identitySummary(agent, storage)
    case 'rotate': {
      if (!agent.identity.document) {
        throw new CliError(
          'not_rotatable',
          `${agent.id} is a did:key: its one key is its id and cannot rotate (PROFILE §4) — create a new identity with agentmsg init --dir NEW_DIR`,
          2,
        )
      }
      await agent.rotateKey()
      const { agent_id, key_id, public_key, fingerprint } = await identitySummary(agent, storage)
      return { agent_id, key_id, public_key, fingerprint }
    }
    case 'contacts.list':
      return withDidKeys(await agent.contacts.list())
    case 'contacts.pin': {
      const { keyId, relays } = request
      await agent.contacts.pin(request.agent, request.publicKey, { keyId, relays })
      const pinned = (await agent.contacts.list()).find((c) => c.agent === request.agent)
      return pinned ?? { agent: request.agent }
    }
    case 'contacts.introduce':
      return { key_id: await agent.introduce(request.token, { agent: request.agent }) }
    case 'contacts.remove': {
      const known = (await agent.contacts.list()).some((c) => c.agent === request.agent)
      if (!known) {
        throw new CliError(
          'not_found',
          `${request.agent} is not a contact — agentmsg contacts list shows them`,
        )
      }
      await agent.contacts.remove(request.agent)
      return { removed: request.agent }
    }
    case 'send': {
      const { to, content, options } = request
      return agent.send(to, content, options).catch((error: unknown) => {
        throw sendError(error, to, options.relays ?? [])
      })
    }
    case 'subscribe':
    case 'unsubscribe':
    case 'publish':
    case 'group':
      return performTopic(agent, request, relays ?? (await storedRelays(storage, agent.identity)))
    default:
      throw new CliError(
        'usage',
        `unknown control request ${JSON.stringify((request as { op?: unknown } | null)?.op)}`,
        2,
      )
  }
}

/**
 * Run `request` on the agent of `dir`: opened here (with `network` when it connects out, else
 * with no transports; on the request's `relays` if it names some), or by the `agentmsg inbox`
 * or `listen` that holds the directory.
 */
export async function onAgent(
  dir: string,
  request: AgentRequest,
  network?: Pick<NodeAgentOptions, 'ca' | 'addressPolicy'>,
  signal?: AbortSignal,
): Promise<unknown> {
  const opened = await openOrInUse(dir)
  if ('inUse' in opened) {
    const going = `the agentmsg process ${opened.inUse} holding ${dir} goes on with it (its outbox keeps it until a target takes or refuses it)`
    const stopped = new Promise<never>((_, reject) =>
      signal?.addEventListener('abort', () => reject(new CliError('interrupted', going))),
    )
    const answer = await Promise.race([askRunning(dir, request), stopped])
    if (answer) return answer.result
    throw new CliError(
      'in_use',
      `${dir} is in use by process ${opened.inUse}, which takes no requests — stop it, or use another directory`,
    )
  }
  const { storage } = opened
  try {
    const given = 'relays' in request ? request.relays : undefined
    const relays = given?.length ? given : await storedRelays(storage, opened.identity)
    const agent = network
      ? await createNodeAgent({
          storage,
          sendOnly: true,
          // Written into `from.relays`, so a peer can answer through them.
          ...(relays.length ? { relays } : {}),
          ...network,
          // Reports of deliveries resumed from earlier runs are not this request's outcome.
          onError: () => {},
        })
      : await createAgent({ storage, sendOnly: true, transports: [] })
    try {
      const asked =
        request.op === 'send' && signal
          ? { ...request, options: { ...request.options, signal } }
          : request
      const result = await perform(agent, storage, asked, relays)
      if (request.op === 'send' && network && (result as SendResult).pending) {
        const why = await whyPending(request.to, request.options.relays ?? [], network)
        if (why) return { ...(result as SendResult), why }
      }
      // A subscription is on these relays: `listen` must stream from them (PROFILE §9).
      if (request.op === 'subscribe' && given?.length) await rememberRelays(storage, relays)
      return result
    } finally {
      await agent.close().catch(() => {})
    }
  } finally {
    await storage.close?.()
  }
}
