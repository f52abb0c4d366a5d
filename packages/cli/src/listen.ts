import { createAddressPolicy, createNodeAgent, type NodeAgent } from '@agentmsg/client/node'
import { openAgentDir, rememberRelays, storedRelays } from './agent-dir.js'
import {
  allowList,
  parseFlags,
  readCaFiles,
  relayFlags,
  runCommand,
  usageError,
} from './command.js'
import { reportError, runUntilStopped } from './running.js'

export const LISTEN_HELP = `usage: agentmsg listen --dir D [--relay URL ...] [--ws] [--json] [--ca F ...]
                       [--allow-private HOSTS]

Run D's agent relay-only (no inbox): open its mailbox on each relay, print each verified
message as it arrives, and acknowledge it once printed (a message is never lost between
receipt and print; one not yet printed comes again next time). Runs until Ctrl-C
(SIGINT) or SIGTERM, then closes cleanly (exit 0). A relay that is down is reported and
retried. While it runs, agentmsg send, identity, rotate and contacts on D are done by it.
  --relay URL      relays to listen on (remembered in D; default: the ones D remembers)
  --ws             stream over WebSocket instead of SSE
  --json           one JSON object per line: message (body opened), from, conversation,
                   level, source, known_contact, sealed, transport; default: one human line
                   (time, from, level, contact or new, sealed or plain, text)
  --ca F           trust this CA too (a dev relay's: $AGENTMSG_HOME/dev-ca/ca.pem)
  --allow-private  hosts or ranges on private or loopback addresses it may connect to

example:
  agentmsg listen --dir ./alice --relay https://127.0.0.1:9443 \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

/** `agentmsg listen`: a relay-only agent printing what it receives. */
export function runListen(argv: string[]): Promise<number> {
  return runCommand(LISTEN_HELP, argv, async () => {
    const { values } = parseFlags('listen', argv, {
      dir: { type: 'string' },
      relay: { type: 'string', multiple: true },
      ws: { type: 'boolean' },
      json: { type: 'boolean' },
      ca: { type: 'string', multiple: true },
      'allow-private': { type: 'string', multiple: true },
    })
    if (!values.dir) throw usageError('listen', 'listen needs --dir D')
    const dir = values.dir
    const given = relayFlags('listen', values.relay)
    const ca = await readCaFiles(values.ca)
    const { storage, agentId, identity } = await openAgentDir(dir)
    let agent: NodeAgent
    let relays: string[]
    try {
      relays = given.length ? given : await storedRelays(storage, identity)
      if (relays.length === 0)
        throw usageError('listen', `${dir} remembers no relay: pass --relay URL (remembered after)`)
      agent = await createNodeAgent({
        storage,
        relays,
        mode: values.ws ? 'ws' : 'sse',
        // https only, public unicast plus what --allow-private names (PROFILE §4, §6).
        addressPolicy: createAddressPolicy({ allow: allowList(values['allow-private']) }),
        ...(ca.length ? { ca } : {}),
        onError: reportError,
      })
      if (given.length) await rememberRelays(storage, relays)
    } catch (error) {
      await storage.close?.()
      throw error
    }
    return runUntilStopped({
      dir,
      storage,
      agent,
      json: values.json === true,
      started: [
        `${agentId} listening on ${relays.join(' ')} (${values.ws ? 'WebSocket' : 'SSE'}); Ctrl-C stops`,
      ],
    })
  })
}
