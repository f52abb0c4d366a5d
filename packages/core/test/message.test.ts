import { fixtureAgent } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { createMessage } from '../src/create-message.js'
import type { AgentMsgError } from '../src/errors.js'
import { validateMessage } from '../src/message.js'

const alice = await fixtureAgent()
const base = () =>
  JSON.parse(
    JSON.stringify(
      createMessage({
        from: alice.id,
        to: 'https://bob.example/agents/bob',
        conversationId: 'c-1',
        sequence: 0,
        phase: 'greeting',
        text: 'hi',
        relays: ['https://relay.example'],
        ttlSeconds: 60,
        authLevel: 3,
      }),
    ),
  ) as Record<string, any>

function refused(mutate: (m: Record<string, any>) => void): AgentMsgError {
  const m = base()
  mutate(m)
  try {
    validateMessage(m)
  } catch (e) {
    return e as AgentMsgError
  }
  throw new Error('validateMessage accepted an invalid message')
}

describe('validateMessage (PROFILE §2)', () => {
  it('accepts a complete message and returns it typed', () => {
    const m = base()
    const r = validateMessage(m)
    expect(r.message).toBe(m)
    expect(r.protocolError).toBeUndefined()
  })

  it('accepts topic messages, sealed and data parts, trace and extension members', () => {
    const m = base()
    m.to = { topic: 'news/agents.v1' }
    m.body.parts.push({
      type: 'sealed',
      recipient: alice.id,
      key_id: `${alice.id}#x`,
      ciphertext: 'AAEC',
    })
    m.trace = { received: [{ by: 'relay:https://r.example', anything: 1 }] }
    m.x_custom = { a: 1 }
    expect(() => validateMessage(m)).not.toThrow()
  })

  const cases: Array<[string, string, (m: Record<string, any>) => void]> = [
    ['missing version', 'version', (m) => delete m.version],
    ['numeric version', 'version', (m) => (m.version = 1)],
    ['message_id with space', 'message_id', (m) => (m.message_id = 'a b')],
    ['message_id starting with dot', 'message_id', (m) => (m.message_id = '.abc')],
    ['message_id of 129 chars', 'message_id', (m) => (m.message_id = 'a'.repeat(129))],
    ['date with offset', 'date', (m) => (m.date = '2026-11-21T22:48:01+00:00')],
    ['missing from', 'from', (m) => delete m.from],
    ['from.agent http URL', 'from.agent', (m) => (m.from.agent = 'http://a.example')],
    ['from.agent not normal form', 'from.agent', (m) => (m.from.agent = 'https://A.example/')],
    [
      'from.relays non-normal',
      'from.relays[0]',
      (m) => (m.from.relays = ['https://relay.example/']),
    ],
    ['from.relays not array', 'from.relays', (m) => (m.from.relays = 'https://relay.example')],
    ['to with agent and topic', 'to', (m) => (m.to.topic = 'x')],
    ['to empty', 'to', (m) => (m.to = {})],
    ['to.topic upper case', 'to.topic', (m) => (m.to = { topic: 'News' })],
    ['conversation_id missing', 'conversation_id', (m) => delete m.conversation_id],
    ['sequence negative', 'sequence', (m) => (m.sequence = -1)],
    ['sequence fractional', 'sequence', (m) => (m.sequence = 1.5)],
    ['sequence string', 'sequence', (m) => (m.sequence = '1')],
    ['phase number', 'phase', (m) => (m.phase = 3)],
    ['content_type missing', 'content_type', (m) => delete m.content_type],
    ['ttl_seconds zero', 'ttl_seconds', (m) => (m.ttl_seconds = 0)],
    ['auth_level 4', 'auth_level', (m) => (m.auth_level = 4)],
    ['body missing', 'body', (m) => delete m.body],
    ['body.parts not array', 'body.parts', (m) => (m.body.parts = {})],
    ['text part without text', 'body.parts[0].text', (m) => (m.body.parts = [{ type: 'text' }])],
    ['unknown part type', 'body.parts[0].type', (m) => (m.body.parts = [{ type: 'image' }])],
    ['data part without data', 'body.parts[0].data', (m) => (m.body.parts = [{ type: 'data' }])],
    [
      'sealed part bad ciphertext',
      'body.parts[0].ciphertext',
      (m) =>
        (m.body.parts = [{ type: 'sealed', recipient: alice.id, key_id: 'k', ciphertext: 'AA==' }]),
    ],
    ['signatures not an array', 'security.signatures', (m) => (m.security = { signatures: {} })],
    [
      'signature not an object',
      'security.signatures[0]',
      (m) => (m.security = { signatures: ['x'] }),
    ],
    ['trace.received not array', 'trace.received', (m) => (m.trace = { received: {} })],
    ['trace entry not object', 'trace.received[0]', (m) => (m.trace = { received: [1] })],
  ]
  for (const [name, field, mutate] of cases) {
    it(`refuses ${name} with invalid_format naming ${field}`, () => {
      const e = refused(mutate)
      expect(e.code).toBe('invalid_format')
      expect(e.status).toBe(400)
      expect(e.field).toBe(field)
      expect(e.message).toContain(field)
    })
  }

  it('refuses a non-object message', () => {
    expect(() => validateMessage([])).toThrow(/message/)
    expect(() => validateMessage(null)).toThrow(/message/)
  })

  it('reports another major version and an unknown phase as protocol errors, not 400', () => {
    const v2 = base()
    v2.version = '2'
    expect(validateMessage(v2).protocolError?.code).toBe('version_mismatch')
    const minor = base()
    minor.version = '1.3'
    expect(validateMessage(minor).protocolError).toBeUndefined()
    const phase = base()
    phase.phase = 'haggle'
    expect(validateMessage(phase).protocolError?.code).toBe('unknown_phase')
  })
})
