/**
 * `inbox.idle()`: a web-standard runtime that ends a request's work with its response (a
 * Worker) keeps it alive with `ctx.waitUntil(inbox.idle())` until the message accepted with 202
 * has been handed to the application (PROFILE §6: the answer comes before the handling).
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import type { Message } from '@agentmsg/core'
import { createReceiver, didKeyResolver } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { createInboxHandler } from '../src/inbox/handler.js'
import { deferred, INBOX_PATH } from './inbox-helpers.js'

const post = (body: Message) =>
  new Request(`https://bob.example${INBOX_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

/** Settled yet? (after the microtasks queued so far) */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false
  void promise.then(() => (done = true))
  await new Promise((resolve) => setTimeout(resolve, 20))
  return done
}

describe('inbox.idle()', () => {
  for (const owner of ['the inbox’s own receiver', 'an agent’s receiver (receive)'] as const) {
    it(`resolves only once the accepted message was handled: ${owner}`, async () => {
      const [alice, bob] = [await fixtureAgent(), await fixtureAgent()]
      const gate = deferred()
      const handled: string[] = []
      const onMessage = async (message: Message) => {
        await gate.promise
        handled.push(message.message_id)
      }
      const common = { agentId: bob.id, onError: () => undefined }
      const receiver =
        owner === 'an agent’s receiver (receive)'
          ? createReceiver({ ...common, resolver: didKeyResolver(), onMessage })
          : undefined
      const inbox = receiver
        ? createInboxHandler({ ...common, receive: receiver.receive })
        : createInboxHandler({ ...common, resolver: didKeyResolver(), onMessage })
      await expect(settled(inbox.idle())).resolves.toBe(true) // nothing pending: at once

      const message = await signedMessage(alice, bob.id)
      const response = await inbox.fetch(post(message), { clientAddress: '192.0.2.1' })
      expect(response.status).toBe(202)
      const idle = inbox.idle()
      if (receiver) {
        // With `receive`, the inbox's part ends with the answer; the receiver's own idle() waits.
        await expect(settled(idle)).resolves.toBe(true)
        const agentIdle = receiver.idle()
        expect(await settled(agentIdle)).toBe(false)
        gate.resolve()
        await agentIdle
      } else {
        expect(await settled(idle)).toBe(false)
        gate.resolve()
        await idle
      }
      expect(handled).toEqual([message.message_id])
      await inbox.close()
      await receiver?.close()
    })
  }
})
