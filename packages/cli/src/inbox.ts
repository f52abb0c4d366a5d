import path from 'node:path'
import { createNodeAgent } from '@agentmsg/client/node'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import { command, devTlsLine, portFlag, tlsFlags, usageError } from './command.js'
import { RUNNING_FLAGS, runAgentDir } from './running.js'

const INBOX_HELP = `usage: agentmsg inbox --dir D [--port P] [--host H] (--dev-tls | --tls-cert F --tls-key F)
                      [--relay URL ...] [--json] [--ca F ...] [--allow-private HOSTS]

Serve D's agent: its inbox, identity document and capabilities over HTTPS, and its mailboxes
on its relays, printing each verified message as agentmsg listen does (--json adds sender).
  --port P         port to listen on; a URL agent's default: the port of its id
  --host H         address to listen on (default 127.0.0.1)
  --dev-tls        a certificate for localhost, 127.0.0.1 and ::1 from this machine's dev CA
                   ($AGENTMSG_HOME/dev-ca/ca.pem, the one file clients trust with --ca)
  --tls-cert F --tls-key F   a real certificate and its key (PEM)
  --relay, --json, --ca, --allow-private   as for agentmsg listen

example:
  agentmsg init  --dir ./bob --url https://127.0.0.1:8444
  agentmsg inbox --dir ./bob --dev-tls --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

/** `agentmsg inbox`: the agent's HTTPS inbox (and relays), printing what it receives. */
const INBOX_FLAGS = {
  ...RUNNING_FLAGS,
  port: { type: 'string' },
  host: { type: 'string' },
  'dev-tls': { type: 'boolean' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
} as const

export const runInbox = command(INBOX_HELP, INBOX_FLAGS, async ({ values }) => {
  const dir = values.dir!
  let port = values.port === undefined ? undefined : portFlag('inbox', values.port)
  const tls = await tlsFlags('inbox', values)
  return runAgentDir('inbox', dir, values, async ({ agentId, relays, base }) => {
    // A URL agent at `https://host/agents/bob` serves under `/agents/bob/.well-known/…`.
    const url = agentId.startsWith('https://') ? new URL(agentId) : undefined
    const basePath = url ? url.pathname.replace(/\/$/, '') : ''
    port ??= url ? Number(url.port || 443) : undefined
    if (port === undefined)
      throw usageError('inbox', `${agentId} is a did:key, with no port in its id: pass --port P`)
    const started: string[] = []
    let served = tls
    if (!served) {
      // Beside the store, kept across restarts; issued by the machine's dev CA.
      const dev = await loadDevCertificate(path.join(dir, 'dev-tls'))
      served = { cert: dev.cert, key: dev.key }
      started.push(devTlsLine(dev))
    }
    // base() reads --ca after the dev CA exists: the first dev server may be told to trust it.
    const agent = await createNodeAgent({
      ...(await base()),
      inbox: { port, host: values.host ?? '127.0.0.1', tls: served, basePath },
    })
    const where = relays.length ? ` and on ${relays.join(' ')}` : ''
    started.push(
      `${agentId} listening on ${agent.inboxUrl}${basePath}/.well-known/agentmsg/inbox${where}; Ctrl-C stops`,
    )
    return { agent, started }
  })
})
