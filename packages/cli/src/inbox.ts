import { chmod, mkdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import {
  AuthLevelTracker,
  createKeyResolver,
  KeyStore,
  ReplayGuard,
} from '@agentmsg/core'
import { createInboxHandler } from '@agentmsg/transport-https'
import {
  createAddressPolicy,
  createDevCertificate,
  createNodeIdentityFetcher,
  serveInbox,
} from '@agentmsg/transport-https/node'
import { loadAgentDir, writeAtomic } from './agent-dir.js'

interface InboxFlags {
  dir?: string
  port?: string
  host?: string
  'dev-tls'?: boolean
  'tls-cert'?: string
  'tls-key'?: string
  'allow-private'?: string
  ca?: string[]
}

const info = (text: string) => process.stderr.write(`agentmsg: ${text}\n`)

/** The development certificate of an agent directory, made on first use. */
async function devTls(dir: string): Promise<{ cert: string; key: string; certFile: string }> {
  const tlsDir = path.join(dir, 'dev-tls')
  const certFile = path.join(tlsDir, 'cert.pem')
  const keyFile = path.join(tlsDir, 'key.pem')
  try {
    return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8'), certFile }
  } catch {
    await mkdir(tlsDir, { recursive: true, mode: 0o700 })
    const { cert, key } = await createDevCertificate()
    await writeAtomic(keyFile, key, 0o600)
    await writeAtomic(certFile, cert, 0o644)
    await chmod(keyFile, 0o600)
    return { cert, key, certFile }
  }
}

/**
 * `agentmsg inbox`: serve the agent's three well-known endpoints over HTTPS and print each
 * accepted, verified message as one JSON line on stdout: `{message, sender, level, source,
 * known_contact}`. Diagnostics go to stderr. SIGTERM/SIGINT stop it cleanly (in-flight requests
 * finish, accepted messages are printed).
 */
export async function runInbox(flags: InboxFlags): Promise<number> {
  if (!flags.dir) throw new Error('inbox needs --dir')
  if (!flags.port) throw new Error('inbox needs --port')
  const port = Number(flags.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port ${flags.port} is not a port`)
  const agent = await loadAgentDir(flags.dir)

  let tls: { cert: string; key: string }
  if (flags['dev-tls']) {
    const dev = await devTls(flags.dir)
    tls = dev
    info(`development certificate: ${path.resolve(dev.certFile)} (clients pass it as their CA)`)
  } else if (flags['tls-cert'] && flags['tls-key']) {
    tls = { cert: await readFile(flags['tls-cert'], 'utf8'), key: await readFile(flags['tls-key'], 'utf8') }
  } else {
    throw new Error('inbox needs --dev-tls, or --tls-cert and --tls-key (https only, also in development)')
  }

  const allow = flags['allow-private']?.split(',').map((s) => s.trim()).filter(Boolean) ?? []
  const ca = await Promise.all((flags.ca ?? []).map((f) => readFile(f, 'utf8')))
  const resolver = createKeyResolver({
    keyStore: new KeyStore(),
    fetchIdentity: createNodeIdentityFetcher({
      addressPolicy: createAddressPolicy({ allow }),
      ...(ca.length ? { ca } : {}),
    }),
  })
  const basePath = agent.identity ? new URL(agent.agentId).pathname.replace(/\/$/, '') : ''
  const handler = createInboxHandler({
    agentId: agent.agentId,
    ...(agent.identity ? { identityDocument: agent.identity } : {}),
    ...(basePath ? { basePath } : {}),
    resolver,
    replayGuard: new ReplayGuard(),
    authLevels: new AuthLevelTracker(),
    onMessage: async (message, meta) => {
      process.stdout.write(
        JSON.stringify({
          message,
          sender: message.from.agent,
          level: meta.level,
          source: meta.source,
          known_contact: meta.knownContact,
        }) + '\n',
      )
    },
    onError: (err) => info(`error: ${err instanceof Error ? err.message : String(err)}`),
  })
  const server = await serveInbox(handler, { port, host: flags.host ?? '127.0.0.1', tls })
  info(`${agent.agentId} listening on ${server.url}${basePath}/.well-known/agentmsg/inbox`)

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      info(`${signal}: stopping`)
      server.close().then(resolve, (e: unknown) => {
        info(`close failed: ${String(e)}`)
        resolve()
      })
    }
    process.once('SIGTERM', () => stop('SIGTERM'))
    process.once('SIGINT', () => stop('SIGINT'))
  })
  return 0
}
