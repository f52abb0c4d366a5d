import type { Content, PublishResult } from '@agentmsg/client/node'
import { onAgent } from './agent-ops.js'
import {
  commandWithArgs,
  MAX_JSON_FILE_BYTES as MAX_JSON,
  networkFlags,
  readJsonFile,
  relayFlags,
  usageError,
} from './command.js'
import { agentArgs, topicArg } from './group.js'

const PUBLISH_HELP = `usage: agentmsg publish --dir D TOPIC (--text T | --json FILE) [--member ID ...] [--group]
                        [--plaintext] [--relay URL ...] [--ca F ...] [--allow-private HOSTS]
                        [--format text|json]

Publish one message to TOPIC on D's relays (PROFILE §9), sealed for its members (PROFILE §8):
every subscriber gets it, only the members (and D's agent) can open it; the others print it as
"not for me". Prints accepted or pending, the message id, the relay, how many members it was
sealed for, the conversation. Run while listen, inbox or mcp holds D, that process publishes.
  --member ID      a member (repeat it, or ID,ID): the body is sealed for each
  --group          also the members of D's group for TOPIC (agentmsg group)
  --plaintext      no members: publish unsealed, readable by the relay and every subscriber.
                   Without members and without --plaintext it is refused (exit 2; --group
                   with an empty group: exit 1, not_found)
  --json FILE      one JSON value (at most 1 MiB), sent as one application/json data part
  --relay URL      publish through these relays (default: the ones D remembers)
  --ca F, --allow-private HOSTS   as for agentmsg send
  --format json    one JSON object: status, message_id, conversation_id, topic, relay_url,
                   sealed, sealed_for (the members and D's agent)

examples:
  agentmsg publish --dir ./alice team/room-1 --text "standup at 10" \\
      --member did:key:z6MkB… --member did:key:z6MkC… \\
      --ca "$AGENTMSG_HOME/dev-ca/ca.pem" --allow-private 127.0.0.1
  agentmsg publish --dir ./alice news --text "release 1.2" --plaintext
`

/** A JSON value, as a data part carries it. */
type JsonValue = Extract<Exclude<Content, string>['parts'][number], { type: 'data' }>['data']

const FLAGS = {
  dir: { type: 'string' },
  text: { type: 'string' },
  json: { type: 'string' },
  member: { type: 'string', multiple: true },
  group: { type: 'boolean' },
  plaintext: { type: 'boolean' },
  relay: { type: 'string', multiple: true },
  ca: { type: 'string', multiple: true },
  'allow-private': { type: 'string', multiple: true },
  format: { type: 'string' },
} as const

const usage = (message: string) => usageError('publish', message)

/** `agentmsg publish`: one message to a topic, sealed for its members. */
export const runPublish = commandWithArgs(PUBLISH_HELP, FLAGS, async ({ values, positionals }) => {
  const { text, json, format = 'text', group = false, plaintext = false } = values
  if (positionals.length !== 1) throw usage('publish takes one TOPIC')
  const topic = topicArg(positionals[0]!)
  if ((text === undefined) === (json === undefined))
    throw usage('publish needs one of --text T or --json FILE')
  if (format !== 'text' && format !== 'json') throw usage(`--format ${format}: use text or json`)
  const members = agentArgs(values.member)
  if ((members.length > 0 || group) === plaintext)
    throw usage(
      plaintext
        ? '--plaintext and --member or --group contradict each other: pass one'
        : `publish to ${topic} needs members to seal for: --member ID, --group, or --plaintext to publish unsealed`,
    )
  const relays = relayFlags('publish', values.relay)
  const content: Content = text ?? {
    parts: [
      { type: 'data', data: (await readJsonFile(`--json ${json}`, json!, MAX_JSON)) as JsonValue },
    ],
  }
  const request = { op: 'publish' as const, topic, content, members, group, plaintext }
  const dir = values.dir!
  const network = await networkFlags(values)
  const r = (await onAgent(dir, { ...request, relays }, network)) as PublishResult
  const status = r.pending ? 'pending' : 'accepted'
  if (format === 'json') {
    const { messageId: message_id, conversationId: conversation_id, relayUrl: relay_url } = r
    const sealed = r.sealedFor.length > 0
    const summary = { status, message_id, conversation_id, topic, relay_url, sealed }
    process.stdout.write(`${JSON.stringify({ ...summary, sealed_for: r.sealedFor })}\n`)
    return 0
  }
  // Sealed for the members and for the publisher itself (PROFILE §8).
  const n = r.sealedFor.length - 1
  const sealed = n >= 0 ? `sealed for ${n} member${n === 1 ? '' : 's'}` : 'not sealed'
  const via = r.relayUrl ? `via relay ${r.relayUrl}` : 'via relays'
  const line = `${status} ${r.messageId} to topic ${topic} ${via}, ${sealed}, conversation ${r.conversationId}`
  const kept = `: no relay took it now; kept in ${dir}'s outbox and retried (up to 24 h) while an agentmsg command has ${dir} open`
  process.stdout.write(`${line}${r.pending ? kept : ''}\n`)
  return 0
})
