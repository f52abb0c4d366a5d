/**
 * The Node side of the runtime matrix, on the built packages (dist/): a development CA and one
 * certificate for every server of the run, a real relay (SQLite in a temporary directory), and
 * a Node agent (`createNodeAgent`, memory storage) that is a URL agent with its own HTTPS inbox
 * and the relay, so a runtime's agents can answer it both ways.
 *
 * Every server is named `localhost`, and its certificate covers that name only: Bun refuses a
 * certificate for an IP address under a CA with IP name constraints ("unsupported name
 * constraint type"), and the development CA is constrained to loopback addresses as well as to
 * `localhost` (Deno and workerd accept either). Connections still go to 127.0.0.1, this
 * machine's address for localhost, which the Node side's address policy allows.
 */
import { once } from 'node:events'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import https from 'node:https'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { serveRelay } from '@agentmsg/relay'

/** A port free right now on 127.0.0.1 (for servers whose URL must be known before they listen). */
export async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  server.close()
  await once(server, 'close')
  return port
}

/**
 * Start the Node side; `dir` receives `cert.pem`, `key.pem` and `ca.pem` for the runtimes.
 * Resolves with the relay's URL, the Node agent, the PEM files, and `waitForReply` /
 * `close`.
 */
export async function startNodeSide(dir) {
  await mkdir(dir, { recursive: true })
  const tls = await createDevCertificate({ hosts: ['localhost'], ips: [] })
  const files = {
    certFile: path.join(dir, 'cert.pem'),
    keyFile: path.join(dir, 'key.pem'),
    caFile: path.join(dir, 'ca.pem'),
  }
  await writeFile(files.certFile, tls.cert)
  await writeFile(files.keyFile, tls.key, { mode: 0o600 })
  await writeFile(files.caFile, tls.ca)

  const relayErrors = []
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-runtimes-relay-'))
  const relayPort = await freePort()
  const relay = await serveRelay({
    host: '127.0.0.1',
    port: relayPort,
    publicUrl: `https://localhost:${relayPort}`,
    dataDir,
    tls,
    ca: tls.ca, // the relay fetches the Node agent's identity document for relay agent auth
    allowPrivate: ['127.0.0.1'],
    closeTimeoutMs: 1_000,
    onError: (e) => relayErrors.push(String(e?.stack ?? e)),
  })

  const agentErrors = []
  const inboxPort = await freePort()
  const agent = await createNodeAgent({
    identity: { agentId: `https://localhost:${inboxPort}` },
    inbox: { port: inboxPort, host: '127.0.0.1', tls },
    relays: [relay.url],
    ca: tls.ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    onError: (e) => agentErrors.push(String(e?.stack ?? e)),
  })
  // Replies by conversation: a runtime's agents answer in the conversation the Node agent opened.
  const replies = new Map()
  const waiting = new Map()
  agent.on('message', (m) => {
    replies.set(m.conversationId, m)
    waiting.get(m.conversationId)?.(m)
  })

  return {
    tls,
    files,
    relayUrl: relay.url,
    agent,
    relayErrors,
    agentErrors,
    /** The reply in `conversationId`, or `undefined` after `timeoutMs`. */
    waitForReply(conversationId, timeoutMs) {
      const seen = replies.get(conversationId)
      if (seen) return Promise.resolve(seen)
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(undefined), timeoutMs)
        waiting.set(conversationId, (m) => {
          clearTimeout(timer)
          resolve(m)
        })
      })
    },
    async close() {
      await agent.close()
      await relay.close()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * POST `config` to a runtime's `/__test/session` over https (trusting `ca`) and call
 * `onEvent(event)` for each JSON line it streams. Resolves when the stream ends; rejects if it
 * has not after `timeoutMs`.
 */
export function runSession(origin, config, ca, onEvent, timeoutMs) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(config)
    const request = https.request(
      `${origin}/__test/session`,
      {
        method: 'POST',
        ca,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume()
          reject(new Error(`session answered ${response.statusCode}`))
          return
        }
        let buffered = ''
        response.setEncoding('utf8')
        response.on('data', (chunk) => {
          buffered += chunk
          for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
            const line = buffered.slice(0, nl)
            buffered = buffered.slice(nl + 1)
            if (line.trim()) onEvent(JSON.parse(line))
          }
        })
        response.on('end', resolve)
        response.on('error', reject)
      },
    )
    const timer = setTimeout(
      () => request.destroy(new Error(`the session did not end within ${timeoutMs} ms`)),
      timeoutMs,
    )
    request.on('close', () => clearTimeout(timer))
    request.on('error', reject)
    request.end(body)
  })
}
