import { onAgent } from './agent-ops.js'
import { commandWithArgs, networkFlags, relayFlags, safeJson, usageError } from './command.js'
import { topicArg } from './group.js'
import type { TopicsSummary } from './group-ops.js'

const SUBSCRIBE_HELP = `usage: agentmsg subscribe --dir D TOPIC [--relay URL ...] [--json] [--ca F ...]
                          [--allow-private HOSTS]

Subscribe D's agent to TOPIC on its relays (PROFILE §9): what is published there reaches D's
mailbox, and agentmsg listen, inbox or mcp on D prints it with its topic. The subscription is
kept in D (a restart keeps it). Run while listen, inbox or mcp holds D, that process subscribes.
TOPIC: 1–128 characters of a-z 0-9 . _ / - (PROFILE §2).
  --relay URL      subscribe on these relays (remembered in D, as listen does; default: the
                   ones D remembers)
  --json           one JSON object: topic, was_subscribed, relays, topics (all of D's)
  --ca F, --allow-private HOSTS   as for agentmsg send

example:
  agentmsg subscribe --dir ./bob team/room-1 --relay https://127.0.0.1:9443 \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

const UNSUBSCRIBE_HELP = `usage: agentmsg unsubscribe --dir D TOPIC [--relay URL ...] [--json] [--ca F ...]
                            [--allow-private HOSTS]

End D's agent's subscription to TOPIC on its relays, and forget the topic.
  --relay URL      on these relays (default: the ones D remembers)
  --json, --ca F, --allow-private HOSTS   as for agentmsg subscribe

example:
  agentmsg unsubscribe --dir ./bob team/room-1 --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

const FLAGS = {
  dir: { type: 'string' },
  relay: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  ca: { type: 'string', multiple: true },
  'allow-private': { type: 'string', multiple: true },
} as const

const topicCommand = (op: 'subscribe' | 'unsubscribe', help: string) =>
  commandWithArgs(help, FLAGS, async ({ values, positionals }) => {
    if (positionals.length !== 1) throw usageError(op, `${op} takes one TOPIC`)
    const topic = topicArg(positionals[0]!)
    const relays = relayFlags(op, values.relay)
    const request = { op, topic, ...(relays.length ? { relays } : {}) }
    const r = (await onAgent(values.dir!, request, await networkFlags(values))) as TopicsSummary
    let what = `subscribed to ${topic} on ${r.relays.join(' ')}`
    if (op === 'unsubscribe')
      what = r.was_subscribed ? `unsubscribed from ${topic}` : `${topic} was not subscribed`
    const topics = r.topics.length ? r.topics.join(' ') : 'none'
    process.stdout.write(
      `${values.json ? safeJson(r) : `${what}; topics of this agent: ${topics}`}\n`,
    )
    return 0
  })

/** `agentmsg subscribe`: subscribe D's agent to a topic on its relays. */
export const runSubscribe = topicCommand('subscribe', SUBSCRIBE_HELP)
/** `agentmsg unsubscribe`: end D's agent's subscription to a topic. */
export const runUnsubscribe = topicCommand('unsubscribe', UNSUBSCRIBE_HELP)
