import { readFile } from 'node:fs/promises'
import path from 'node:path'
import {
  createAddressPolicy,
  createNodeAgent,
  loadDevCertificate,
  type ReceivedMessage,
} from '@agentmsg/client/node'
import { openAgentDir } from './agent-dir.js'

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
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * One stdout line per message: `{message, sender, level, source, known_contact, sealed}`;
 * `sealed` tells whether the body came sealed (PROFILE §8), `message` carries it opened.
 */
function print(received: ReceivedMessage): void {
  process.stdout.write(
    JSON.stringify({
      message: received.message,
      sender: received.from,
      level: received.level,
      source: received.source,
      known_contact: received.knownContact,
      sealed: received.sealed,
    }) + '\n',
  )
}

async function tlsOf(flags: InboxFlags & { dir: string }): Promise<{ cert: string; key: string }> {
  if (flags['dev-tls']) {
    // Beside the store, made on first use and kept: clients go on trusting it after a restart.
    const dev = await loadDevCertificate(path.join(flags.dir, 'dev-tls'))
    info(`development certificate: ${dev.certFile} (clients pass it as their CA)`)
    return { cert: dev.cert, key: dev.key }
  }
  if (flags['tls-cert'] && flags['tls-key']) {
    return {
      cert: await readFile(flags['tls-cert'], 'utf8'),
      key: await readFile(flags['tls-key'], 'utf8'),
    }
  }
  throw new Error(
    'inbox needs --dev-tls, or --tls-cert and --tls-key (https only, also in development)',
  )
}

/**
 * `agentmsg inbox`: the directory's agent (`createNodeAgent` on its `fsStorage` store) serving
 * its three well-known endpoints over HTTPS, printing each accepted, verified message as one
 * JSON line on stdout. Replay and auth-level state live in the store, so a message delivered
 * again after a restart is answered as a duplicate and not printed twice (PROFILE §6).
 * Diagnostics go to stderr. SIGTERM/SIGINT stop it cleanly.
 */
export async function runInbox(flags: InboxFlags): Promise<number> {
  const dir = flags.dir
  if (!dir) throw new Error('inbox needs --dir')
  if (!flags.port) throw new Error('inbox needs --port')
  const port = Number(flags.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port ${flags.port} is not a port`)
  const allow =
    flags['allow-private']
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean) ?? []
  const ca = await Promise.all((flags.ca ?? []).map((f) => readFile(f, 'utf8')))

  const { storage, agentId } = await openAgentDir(dir)
  // A URL agent at `https://host/agents/bob` serves under `/agents/bob/.well-known/…`.
  const basePath = agentId.startsWith('https://')
    ? new URL(agentId).pathname.replace(/\/$/, '')
    : ''
  let agent
  try {
    const tls = await tlsOf({ ...flags, dir })
    agent = await createNodeAgent({
      storage,
      // https only, public unicast plus what --allow-private names (PROFILE §4, §6).
      addressPolicy: createAddressPolicy({ allow }),
      ...(ca.length ? { ca } : {}),
      onError: (error) => info(`error: ${describe(error)}`),
      inbox: { port, host: flags.host ?? '127.0.0.1', tls, ...(basePath ? { basePath } : {}) },
    })
  } catch (error) {
    await storage.close?.()
    throw error
  }
  agent.on('message', print)
  info(`${agent.id} listening on ${agent.inboxUrl}${basePath}/.well-known/agentmsg/inbox`)

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      info(`${signal}: stopping`)
      agent
        .close()
        .then(() => storage.close?.())
        .then(resolve, (e: unknown) => {
          info(`close failed: ${describe(e)}`)
          resolve()
        })
    }
    process.once('SIGTERM', () => stop('SIGTERM'))
    process.once('SIGINT', () => stop('SIGINT'))
  })
  return 0
}
