import { createNodeAgent } from '@agentmsg/client/node'
import { command, usageError } from './command.js'
import { RUNNING_FLAGS, runAgentDir } from './running.js'

const LISTEN_HELP = `usage: agentmsg listen --dir D [--relay URL ...] [--ws] [--json] [--ca F ...]
                       [--allow-private HOSTS]

Run D's agent relay-only: print each verified message from its mailboxes, acknowledged once
printed, until Ctrl-C or SIGTERM (exit 0). A topic message (agentmsg subscribe) shows its
topic, [topic T]; one sealed for other members of its group prints "not for me". While it
runs, it does agentmsg send, identity, rotate, contacts, subscribe, unsubscribe, publish and
group on D.
  --relay URL      relays to listen on (remembered in D; default: the ones D remembers)
  --ws             stream over WebSocket instead of SSE
  --json           one JSON object per line: message (body opened), from, conversation,
                   level, source, known_contact, topic (topic messages), sealed (true, false
                   or "not-for-me"), transport
  --ca F, --allow-private HOSTS   as for agentmsg send

example:
  agentmsg listen --dir ./alice --relay https://127.0.0.1:9443 \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

const LISTEN_FLAGS = { ...RUNNING_FLAGS, ws: { type: 'boolean' } } as const

/** `agentmsg listen`: a relay-only agent printing what it receives. */
export const runListen = command(LISTEN_HELP, LISTEN_FLAGS, async ({ values }) => {
  const dir = values.dir!
  return runAgentDir('listen', dir, values, async ({ agentId, relays, base }) => {
    if (relays.length === 0)
      throw usageError('listen', `${dir} remembers no relay: pass --relay URL (remembered after)`)
    const agent = await createNodeAgent({ ...(await base()), mode: values.ws ? 'ws' : 'sse' })
    const via = values.ws ? 'WebSocket' : 'SSE'
    return {
      agent,
      started: [`${agentId} listening on ${relays.join(' ')} (${via}); Ctrl-C stops`],
    }
  })
})
