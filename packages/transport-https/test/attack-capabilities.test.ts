/**
 * Issue 9, item 10: the capabilities document advertised `encryption: ["sealed_box"]` while
 * nothing seals or opens one, inviting senders to seal messages this agent cannot read.
 * PROFILE §10's document advertises only what is implemented. A real inbox on loopback,
 * default settings.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { send, startInbox, stopInboxes } from './inbox-helpers.js'

afterEach(stopInboxes)

describe('attack: capabilities advertise only what is implemented', () => {
  it('GET capabilities of a default inbox → no sealed_box, an empty encryption list', async () => {
    const inbox = await startInbox()
    const res = await send(`${inbox.url}/.well-known/agentmsg/capabilities`, { method: 'GET' })
    expect(res.status).toBe(200)
    expect(res.json.agent_id).toBe(inbox.agentId)
    expect(res.json.encryption).toEqual([])
    expect(res.text).not.toContain('sealed')
  })
})
