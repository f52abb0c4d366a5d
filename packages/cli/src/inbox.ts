import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { createAddressPolicy, createNodeAgent, type NodeAgent } from '@agentmsg/client/node'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import { openAgentDir, rememberRelays, storedRelays } from './agent-dir.js'
import {
  allowList,
  inputError,
  parseFlags,
  portFlag,
  readCaFiles,
  relayFlags,
  runCommand,
  usageError,
} from './command.js'
import { reportError, runUntilStopped } from './running.js'

export const INBOX_HELP = `usage: agentmsg inbox --dir D [--port P] [--host H] (--dev-tls | --tls-cert F --tls-key F)
                      [--relay URL ...] [--json] [--ca F ...] [--allow-private HOSTS]

Serve D's agent: its inbox, identity document and capabilities over HTTPS (PROFILE §6), and
its mailboxes on the relays D remembers (or --relay). Prints each accepted, verified message
(acknowledged once printed). Runs until Ctrl-C (SIGINT) or SIGTERM, then closes cleanly
(exit 0). While it runs, agentmsg send, identity, rotate and contacts on D are done by it (so
a URL agent keeps serving its identity document while it sends or rotates).
  --port P         port to listen on; a URL agent's default: the port of its id
  --host H         address to listen on (default 127.0.0.1)
  --dev-tls        a development certificate for localhost, 127.0.0.1 and ::1, issued by this
                   machine's dev CA ($AGENTMSG_HOME/dev-ca/ca.pem, made on first use): clients
                   trust that one file (--ca) for every dev inbox and relay
  --tls-cert F --tls-key F   a real certificate and its key (PEM)
  --relay URL      relays to listen on as well (remembered in D)
  --json           one JSON object per line: message (body opened), from, sender, conversation,
                   level, source, known_contact, sealed, transport; default: one human line
  --ca F           trust this CA too, for senders' identity documents (dev: the dev CA)
  --allow-private  hosts or ranges on private or loopback addresses it may fetch from

example:
  agentmsg init  --dir ./bob --url https://127.0.0.1:8444
  agentmsg inbox --dir ./bob --dev-tls --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

/** What a `--dev-tls` server prints: the one file its clients trust (the machine's dev CA). */
export const devTlsLine = (dev: { certFile: string; caFile: string }) =>
  `development CA: ${dev.caFile} (trust it: clients pass --ca ${dev.caFile}; this server's certificate: ${dev.certFile})`

/** `agentmsg inbox`: the agent's HTTPS inbox (and relays), printing what it receives. */
export function runInbox(argv: string[]): Promise<number> {
  return runCommand(INBOX_HELP, argv, async () => {
    const { values } = parseFlags('inbox', argv, {
      dir: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'dev-tls': { type: 'boolean' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      relay: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      ca: { type: 'string', multiple: true },
      'allow-private': { type: 'string', multiple: true },
    })
    if (!values.dir) throw usageError('inbox', 'inbox needs --dir D')
    const dir = values.dir
    const given = relayFlags('inbox', values.relay)
    const hasCert = values['tls-cert'] !== undefined || values['tls-key'] !== undefined
    if (Boolean(values['dev-tls']) === hasCert)
      throw usageError(
        'inbox',
        'inbox needs --dev-tls, or --tls-cert F and --tls-key F (https only, also in development)',
      )
    if (hasCert && !(values['tls-cert'] && values['tls-key']))
      throw usageError('inbox', '--tls-cert and --tls-key go together')
    let port = values.port === undefined ? undefined : portFlag('inbox', values.port)
    const tls = hasCert
      ? { cert: await readPem(values['tls-cert']!), key: await readPem(values['tls-key']!) }
      : undefined

    const { storage, agentId, identity } = await openAgentDir(dir)
    // A URL agent at `https://host/agents/bob` serves under `/agents/bob/.well-known/…`.
    const url = agentId.startsWith('https://') ? new URL(agentId) : undefined
    const basePath = url ? url.pathname.replace(/\/$/, '') : ''
    const started: string[] = []
    let agent: NodeAgent
    try {
      port ??= url ? Number(url.port || 443) : undefined
      if (port === undefined)
        throw usageError('inbox', `${agentId} is a did:key, with no port in its id: pass --port P`)
      let served = tls
      if (!served) {
        // Beside the store, kept across restarts; issued by the machine's dev CA.
        const dev = await loadDevCertificate(path.join(dir, 'dev-tls'))
        served = { cert: dev.cert, key: dev.key }
        started.push(devTlsLine(dev))
      }
      // After the dev CA exists: the first dev server on a machine may be told to trust it.
      const ca = await readCaFiles(values.ca)
      const relays = given.length ? given : await storedRelays(storage, identity)
      agent = await createNodeAgent({
        storage,
        ...(relays.length ? { relays } : {}),
        // https only, public unicast plus what --allow-private names (PROFILE §4, §6).
        addressPolicy: createAddressPolicy({ allow: allowList(values['allow-private']) }),
        ...(ca.length ? { ca } : {}),
        onError: reportError,
        inbox: {
          port,
          host: values.host ?? '127.0.0.1',
          tls: served,
          ...(basePath ? { basePath } : {}),
        },
      })
      if (given.length) await rememberRelays(storage, relays)
      const where = relays.length ? ` and on ${relays.join(' ')}` : ''
      started.push(
        `${agentId} listening on ${agent.inboxUrl}${basePath}/.well-known/agentmsg/inbox${where}; Ctrl-C stops`,
      )
    } catch (error) {
      await storage.close?.()
      throw error
    }
    return runUntilStopped({ dir, storage, agent, json: values.json === true, started })
  })
}

async function readPem(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8')
  } catch (e) {
    throw inputError(`${file}: ${(e as Error).message} — pass a PEM file`)
  }
}
