/**
 * @agentmsg/client/node — everything of the isomorphic entry, plus {@link createNodeAgent}: an
 * agent that also receives directly on its own HTTPS inbox (`node:https`), through the same
 * resolver, replay guard and auth-level tracker as its relay streams.
 *
 * @packageDocumentation
 */
import { createInboxHandler, serveInbox } from '@agentmsg/transport-https/node'
import { buildAgent, INTERNALS, startAgent, type Agent, type AgentOptions } from './agent.js'

export * from './index.js'

/** Options for the agent's inbox server. */
export interface NodeInboxOptions {
  /** Port to listen on; for a URL agent, the one its id names. @default 0 */
  port?: number
  /** @default '127.0.0.1' */
  host?: string
  /** Certificate and key, PEM (https only, also in development: `createDevCertificate()`). */
  tls: { cert: string | Buffer; key: string | Buffer }
  /** Path of the agent's base URL (`/agents/bob` for `https://host/agents/bob`). @default '' */
  basePath?: string
}

/** Options for {@link createNodeAgent}. */
export interface NodeAgentOptions extends AgentOptions {
  /** Serve this agent's inbox, identity and capabilities documents. */
  inbox?: NodeInboxOptions
}

/** A Node agent, with its inbox's address when it serves one. */
export interface NodeAgent extends Agent {
  /** The inbox server's base URL (`https://127.0.0.1:8443`), when serving. */
  readonly inboxUrl: string | undefined
}

/**
 * Create an agent that, besides its relays, receives on its own HTTPS inbox. A URL agent serves
 * its identity document there (the current one, also after `rotateKey()`).
 *
 * @example
 * const { cert, key } = await createDevCertificate()
 * const bob = await createNodeAgent({
 *   identity: { agentId: 'https://127.0.0.1:8443' },
 *   inbox: { port: 8443, tls: { cert, key } },
 *   storage: await fsStorage({ dir: './bob' }),
 * })
 */
export async function createNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const { inbox: inboxOptions, ...agentOptions } = options
  const agent = await buildAgent(agentOptions)
  let inboxUrl: string | undefined
  if (inboxOptions) {
    const internals = agent[INTERNALS]
    const handler = createInboxHandler({
      agentId: agent.id,
      identityDocument: () => internals.identityDocument(),
      resolver: internals.resolver,
      replayGuard: internals.replayGuard,
      authLevels: internals.authLevels,
      storage: internals.storage,
      identityOf: async (id) => {
        const doc = await internals.documents.document(id)
        return 'status' in doc ? undefined : doc
      },
      onMessage: (message, info) => internals.deliverFromInbox(message, info),
      onError: (error) => internals.reportError({ error, transport: 'https' }),
      errorReplies: { send: (message, to) => internals.sendErrorReply(message, to) },
      ...(inboxOptions.basePath ? { basePath: inboxOptions.basePath } : {}),
    })
    let server
    try {
      server = await serveInbox(handler, {
        port: inboxOptions.port ?? 0,
        host: inboxOptions.host ?? '127.0.0.1',
        tls: inboxOptions.tls,
        onError: (error) => internals.reportError({ error, transport: 'https' }),
      })
    } catch (error) {
      await agent.close()
      throw error
    }
    inboxUrl = server.url
    internals.onClose(() => server.close())
  }
  await startAgent(agent)
  return Object.defineProperty(agent, 'inboxUrl', {
    value: inboxUrl,
    enumerable: true,
  }) as unknown as NodeAgent
}
