/**
 * What the framework examples' tests share: the development certificate and an https fetch
 * that trusts it, a sender agent (a did:key: level 3, its key is its id), a tampered delivery,
 * and a free port.
 */
import { createServer } from 'node:net'
import {
  createAddressPolicy,
  createNodeAgent,
  type NodeAgent,
  type ReceivedMessage,
} from '@agentmsg/client/node'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
} from '@agentmsg/core'
import { createDevCertificate, type DevCertificate, loadDevCa } from '@agentmsg/dev-tls'
import { createNodeFetch } from '@agentmsg/transport-https/node'

export interface ExampleEnv {
  tls: DevCertificate
  /** Peers on loopback: allowed, as in development. */
  addressPolicy: ReturnType<typeof createAddressPolicy>
  fetch: typeof fetch
}

export async function exampleEnv(): Promise<ExampleEnv> {
  // The machine's development CA ($AGENTMSG_HOME, a temporary one in tests): a server the test
  // starts as a process of its own issues its certificate from it too.
  const tls = await createDevCertificate({ ca: await loadDevCa() })
  const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
  return { tls, addressPolicy, fetch: createNodeFetch({ ca: tls.ca, addressPolicy }) }
}

/** Alice: a did:key agent that only sends, over https trusting the development CA. */
export function sender(env: ExampleEnv): Promise<NodeAgent> {
  return createNodeAgent({ ca: env.tls.ca, addressPolicy: env.addressPolicy, sendOnly: true })
}

/**
 * POST to `agent`'s inbox a message signed by a fresh did:key whose text was changed after
 * signing; resolves with the answer's status and error code.
 */
export async function deliverTampered(
  env: ExampleEnv,
  agent: string,
): Promise<{ status: number; code: unknown }> {
  const keys = await generateKeyPair()
  const from = didKeyFromPublicKey(keys.publicKey)
  const message = createMessage({
    from,
    to: agent,
    conversationId: 'c-tampered',
    sequence: 0,
    phase: 'greeting',
    text: 'pay 10',
  })
  const signed = await signMessage(message, ed25519Signer(keys))
  const tampered = { ...signed, body: { parts: [{ type: 'text', text: 'pay 1000' }] } }
  const response = await env.fetch(`${agent}/.well-known/agentmsg/inbox`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': signed.message_id },
    body: JSON.stringify(tampered),
  })
  const answer = (await response.json()) as { code?: unknown }
  return { status: response.status, code: answer.code }
}

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Resolves with `agent`'s next message. */
export function nextMessage(agent: NodeAgent): Promise<ReceivedMessage> {
  return new Promise((resolve) => agent.on('message', resolve))
}
