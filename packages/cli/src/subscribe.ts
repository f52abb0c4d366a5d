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
  --json           one JSON object: topic, relays, topics (all of D's)
  --ca F, --allow-private HOSTS   as for agentmsg send

example:
  agentmsg subscribe --dir ./bob team/room-1 --relay https://127.0.0.1:9443 \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

const UNSUBSCRIBE_HELP = `usage: agentmsg unsubscribe --dir D TOPIC [--json] [--ca F ...] [--allow-private HOSTS]

Stop D's agent's subscription to TOPIC on its relays, and forget the topic.
  --json           one JSON object: topic, was_subscribed, relays, topics (all of D's)
  --ca F, --allow-private HOSTS   as for agentmsg send

example:
  agentmsg unsubscribe --dir ./bob team/room-1 --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
`

const FLAGS = {
  dir: { type: 'string' },
  json: { type: 'boolean' },
  ca: { type: 'string', multiple: true },
  'allow-private': { type: 'string', multiple: true },
} as const

/** The one TOPIC argument of `command`. */
function oneTopic(command: string, positionals: string[]): string {
  if (positionals.length !== 1) throw usageError(command, `${command} takes one TOPIC`)
  return topicArg(positionals[0]!)
}

const topicsLine = (r: TopicsSummary) =>
  `; topics of this agent: ${r.topics.length ? r.topics.join(' ') : 'none'}`

/** `agentmsg subscribe`: subscribe D's agent to a topic on its relays. */
export const runSubscribe = commandWithArgs(
  SUBSCRIBE_HELP,
  { ...FLAGS, relay: { type: 'string', multiple: true } },
  async ({ values, positionals }) => {
    const topic = oneTopic('subscribe', positionals)
    const relays = relayFlags('subscribe', values.relay)
    const request = { op: 'subscribe' as const, topic, ...(relays.length ? { relays } : {}) }
    const r = (await onAgent(values.dir!, request, await networkFlags(values))) as TopicsSummary
    const text = `subscribed to ${r.topic} on ${r.relays.join(' ')}${topicsLine(r)}`
    process.stdout.write(`${values.json ? safeJson(r) : text}\n`)
    return 0
  },
)

/** `agentmsg unsubscribe`: end D's agent's subscription to a topic. */
export const runUnsubscribe = commandWithArgs(
  UNSUBSCRIBE_HELP,
  FLAGS,
  async ({ values, positionals }) => {
    const topic = oneTopic('unsubscribe', positionals)
    const request = { op: 'unsubscribe' as const, topic }
    const r = (await onAgent(values.dir!, request, await networkFlags(values))) as TopicsSummary
    const what = r.was_subscribed ? `unsubscribed from ${r.topic}` : `${r.topic} was not subscribed`
    process.stdout.write(`${values.json ? safeJson(r) : `${what}${topicsLine(r)}`}\n`)
    return 0
  },
)
