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
  const { text, json, format = 'text' } = values
  if (positionals.length !== 1) throw usage('publish takes one TOPIC')
  const topic = topicArg(positionals[0]!)
  if ((text === undefined) === (json === undefined))
    throw usage('publish needs one of --text T or --json FILE')
  if (format !== 'text' && format !== 'json') throw usage(`--format ${format}: use text or json`)
  const members = agentArgs(values.member)
  const sealed = members.length > 0 || values.group === true
  if (sealed && values.plaintext)
    throw usage('--plaintext and --member or --group contradict each other: pass one')
  if (!sealed && !values.plaintext)
    throw usage(
      `publish to ${topic} needs members to seal for: --member ID, --group, or --plaintext to publish unsealed`,
    )
  const relays = relayFlags('publish', values.relay)
  const content: Content = text ?? {
    parts: [
      { type: 'data', data: (await readJsonFile(`--json ${json}`, json!, MAX_JSON)) as JsonValue },
    ],
  }
  const request = {
    op: 'publish' as const,
    topic,
    content,
    members,
    group: values.group === true,
    plaintext: values.plaintext === true,
    ...(relays.length ? { relays } : {}),
  }
  const dir = values.dir!
  const r = (await onAgent(dir, request, await networkFlags(values))) as PublishResult
  process.stdout.write(
    `${format === 'json' ? JSON.stringify(publishSummary(r)) : asText(r, dir)}\n`,
  )
  return 0
})

/** What `publish --format json` prints. */
const publishSummary = (r: PublishResult) => ({
  status: r.pending ? 'pending' : 'accepted',
  message_id: r.messageId,
  conversation_id: r.conversationId,
  topic: r.topic,
  relay_url: r.relayUrl,
  sealed: r.sealedFor.length > 0,
  sealed_for: r.sealedFor,
})

function asText(r: PublishResult, dir: string): string {
  // Sealed for the members and the publisher's own part (PROFILE §8).
  const members = r.sealedFor.length - 1
  const sealed =
    r.sealedFor.length > 0
      ? `sealed for ${members} member${members === 1 ? '' : 's'}`
      : 'not sealed (the relay and every subscriber read it)'
  const line = `${r.pending ? 'pending' : 'accepted'} ${r.messageId} to topic ${r.topic} ${r.relayUrl ? `via relay ${r.relayUrl}` : 'via relays'}, ${sealed}, conversation ${r.conversationId}`
  return r.pending
    ? `${line}: no relay took it now; kept in ${dir}'s outbox and retried (up to 24 h) while an agentmsg command has ${dir} open`
    : line
}
