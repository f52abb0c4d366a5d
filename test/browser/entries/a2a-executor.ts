/**
 * In-page side of `../a2a-executor.spec.ts`: the A2A agent of the Node process test, in a tab.
 * A relay-only did:key agent (`createAgent` with IndexedDB storage and one relay, no inbox)
 * serves the same stock `DefaultRequestHandler` with the same `EchoExecutor`
 * (`packages/a2a/test/echo-executor.ts`) through `serveA2A` from the built `@agentmsg/a2a`.
 *
 * The agent is made when the spec calls `start()`, so a reload re-creates it from the same
 * IndexedDB database: same did:key, and the contacts pinned before the reload are still known.
 */
import { AgentCard } from '@a2a-js/sdk'
import { type A2AServer, serveA2A } from '@agentmsg/a2a'
import { type Agent, createAgent } from '@agentmsg/client'
import { publicKeyFromDidKey } from '@agentmsg/core'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'
import { Buffer } from 'buffer/'
import { type EchoExecutor, echoHandler } from '../../../packages/a2a/test/echo-executor.js'

// `@a2a-js/sdk`'s generated JSON codecs call `globalThis.Buffer` for bytes: a `raw` part of a
// message (base64 in JSON) and `ListTasks` page tokens. Browsers have no Buffer, so the page
// provides the npm `buffer` polyfill (spelled `buffer/` so no tool takes it for Node's module), as
// an app bundling the SDK for the browser must; text and data parts never touch it.
const scope = globalThis as { Buffer?: unknown }
scope.Buffer ??= Buffer

export interface StartInfo {
  id: string
  keyId: string
  /** `AgentCard.toJSON` of the card the executor serves. */
  card: unknown
  isSecureContext: boolean
  origin: string
}

declare global {
  // eslint-disable-next-line no-var
  var __a2aExecutor: {
    /** Open the agent on `dbName`, pin `contacts` (did:key ids), serve the echo executor. */
    start(options: { relayUrl: string; dbName: string; contacts: string[] }): Promise<StartInfo>
    /** Tasks the executor ran since `start()`. */
    executed(): number
    /** `error` events, `onError` reports and adapter errors since `start()`. */
    errors(): string[]
    close(): Promise<void>
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e)
}

let agent: Agent | undefined
let server: A2AServer | undefined
let executor: EchoExecutor | undefined
const errors: string[] = []

globalThis.__a2aExecutor = {
  async start({ relayUrl, dbName, contacts }) {
    if (agent) throw new Error('already started')
    const a = await createAgent({
      storage: await indexedDbStorage({ dbName }),
      relays: [relayUrl],
      onError: (e) => void errors.push(`onError: ${errorText(e)}`),
    })
    agent = a
    a.on('error', (e) => void errors.push(`error event: ${errorText(e.error)}`))
    for (const id of contacts) await a.contacts.pin(id, publicKeyFromDidKey(id))
    const echo = echoHandler(a, [relayUrl])
    executor = echo.executor
    server = serveA2A(a, echo.handler, {
      onError: (e) => void errors.push(`serveA2A: ${errorText(e)}`),
    })
    return {
      id: a.id,
      keyId: a.identity.keyId,
      card: AgentCard.toJSON(echo.card),
      isSecureContext: globalThis.isSecureContext,
      origin: location.origin,
    }
  },

  executed: () => executor?.executed ?? 0,

  errors: () => errors,

  async close() {
    await server?.close()
    await agent?.close()
    agent = undefined
    server = undefined
  },
}
