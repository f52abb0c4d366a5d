/**
 * Shared fixtures of the relay client tests against small scripted HTTPS servers: a certificate,
 * a fetch that trusts it, two agents, and servers closed after each test. Live bindings: read
 * them inside tests, after {@link setupScriptedTests}' `beforeAll` has set them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { type FixtureAgent, fixtureAgent } from '@agentmsg/conformance'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { afterEach, beforeAll } from 'vitest'

export let cert: DevCertificate
export let fetchFn: typeof fetch
export let alice: FixtureAgent
export let bob: FixtureAgent
export const servers: Server[] = []
/** Run after each test, last first. */
export const cleanups: Array<() => Promise<void>> = []

/** Register the file's hooks: certificate, fetch and agents before all; cleanup after each test. */
export function setupScriptedTests(): void {
  beforeAll(async () => {
    cert = await createDevCertificate()
    fetchFn = createNodeFetch({
      ca: cert.ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
      timeoutMs: 0,
    })
    alice = await fixtureAgent()
    bob = await fixtureAgent()
  })

  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!().catch(() => {})
    for (const s of servers.splice(0)) {
      s.closeAllConnections()
      await new Promise((r) => s.close(r))
    }
  })
}

export type Route = (
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
) => void | Promise<void>

/** An HTTPS server on 127.0.0.1 answering every request with `route`; returns its origin. */
export async function scripted(route: Route): Promise<string> {
  const server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => void route(req, res, Buffer.concat(chunks)))
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Send `body` as JSON with `status`. */
export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify(body))
}

/** Wait until `condition` is true (polling), or fail after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 10))
  }
}
