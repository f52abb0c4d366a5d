import { memoryStorage, type Storage } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { createManualClock } from '../src/clock.js'
import {
  accept,
  DAY,
  inboxTarget,
  message,
  newSender,
  next,
  reply,
  START,
  setupSenderTests,
  startInbox,
  urlTarget,
} from './sender-helpers.js'

setupSenderTests()

describe('sender resume, concurrency, cancel and close over real HTTPS', () => {
  it('a new sender on the same storage resumes pending deliveries, delivering each once', async () => {
    const inbox = await startInbox()
    let healthy = false
    inbox.script = (req, res, n) => (healthy ? accept(req, res, n) : reply(res, 500))
    const storage: Storage = memoryStorage()
    const clock = createManualClock(START)
    const a = newSender({ storage, clock })
    const retry = next(a, 'retry')
    const msg = await message()
    const sentByA = a.send(msg, inboxTarget(inbox)).catch((e: unknown) => e)
    const r = await retry
    await a.close()
    expect(await sentByA).toMatchObject({ outcome: 'closed', code: 'unavailable' })
    expect(clock.pending()).toBe(0) // A's timer is gone
    const [stored] = await a.pending()
    expect(stored).toMatchObject({ attempts: 1, nextAttempt: r.nextAttempt, firstAttempt: START })

    healthy = true
    const b = newSender({ storage, clock })
    const delivered = next(b, 'delivered')
    expect(await b.resume()).toBe(1) // joins the automatic resume
    expect(clock.pending()).toBe(1)
    clock.advance(r.delayMs)
    expect(await delivered).toMatchObject({ message_id: msg.message_id, attempts: 2 })
    expect(await b.pending()).toEqual([])
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
    expect(inbox.requests).toHaveLength(2)
    // A later resume finds nothing, and nothing else is sent.
    expect(await b.resume()).toBe(0)
    clock.runAll()
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
  })

  it('resumes a due entry at once, and one past the deadline as undeliverable', async () => {
    const inbox = await startInbox()
    const storage = memoryStorage()
    const clock = createManualClock(START)
    const a = newSender({ storage, clock })
    inbox.script = (_req, res) => reply(res, 500)
    const retries = [next(a, 'retry')]
    const m1 = await message('one')
    void a.send(m1, inboxTarget(inbox)).catch(() => {})
    await retries[0]
    await a.close()

    inbox.script = accept
    clock.advance(10_000) // m1 is now due
    const b = newSender({ storage, clock, resume: false })
    const delivered = next(b, 'delivered')
    expect(await b.resume()).toBe(1)
    expect(await delivered).toMatchObject({ message_id: m1.message_id })

    // A second message left pending past its deadline while no sender ran.
    inbox.script = (_req, res) => reply(res, 500)
    const c = newSender({ storage, clock })
    const retry = next(c, 'retry')
    const m2 = await message('two')
    void c.send(m2, inboxTarget(inbox)).catch(() => {})
    await retry
    await c.close()
    clock.advance(DAY + 1)
    const d = newSender({ storage, clock, resume: false })
    const undeliverable = next(d, 'undeliverable')
    await d.resume()
    expect(await undeliverable).toMatchObject({
      message_id: m2.message_id,
      reason: expect.stringMatching(/deadline/),
    })
    expect(await d.pending()).toEqual([])
    expect(inbox.accepted.get(m2.message_id)).toBeUndefined()
  })

  it('attempts different messages in parallel', async () => {
    const inbox = await startInbox()
    const waiting: Array<() => void> = []
    inbox.script = (req, res, n) => {
      waiting.push(() => accept(req, res, n))
      // Answer only once both requests are in: proves they were in flight together.
      if (waiting.length === 2) waiting.forEach((go) => go())
    }
    const sender = newSender({ clock: createManualClock(START) })
    const [m1, m2] = await Promise.all([message('one'), message('two')])
    await Promise.all([sender.send(m1, inboxTarget(inbox)), sender.send(m2, inboxTarget(inbox))])
    expect(inbox.requests).toHaveLength(2)
  })

  it('never attempts one message twice at once: a repeated send joins the pending delivery', async () => {
    const inbox = await startInbox()
    const sender = newSender({ clock: createManualClock(START) })
    const msg = await message()
    const [r1, r2] = await Promise.all([
      sender.send(msg, inboxTarget(inbox)),
      sender.send(msg, inboxTarget(inbox)),
    ])
    expect(r1).toEqual(r2)
    expect(inbox.requests).toHaveLength(1)
  })

  it('cancels a delivery when the signal aborts', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500)
    const clock = createManualClock(START)
    const sender = newSender({ clock })
    const retry = next(sender, 'retry')
    const controller = new AbortController()
    const sent = sender.send(await message(), inboxTarget(inbox), { signal: controller.signal })
    await retry
    controller.abort(new Error('user gave up'))
    await expect(sent).rejects.toThrow('user gave up')
    await expect.poll(() => sender.pending()).toEqual([])
    expect(clock.pending()).toBe(0)
    clock.runAll()
    expect(inbox.requests).toHaveLength(1)
  })

  it('refuses to send after close', async () => {
    const sender = newSender()
    await sender.close()
    await expect(sender.send(await message(), urlTarget('https://127.0.0.1:1/'))).rejects.toThrow(
      /closed/,
    )
  })

  it('is a core Transport with protocol https', () => {
    const sender = newSender()
    expect(sender.protocol).toBe('https')
    expect(typeof sender.send).toBe('function')
    expect(typeof sender.close).toBe('function')
  })
})

describe('sender on the system clock', () => {
  it('works with the real clock and timers', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) => (n === 1 ? reply(res, 503) : accept(req, res, n))
    // random 0: the first retry is due at once, so no waiting in real time.
    const sender = newSender({ random: () => 0 })
    await expect(sender.send(await message(), inboxTarget(inbox))).resolves.toBeDefined()
    expect(inbox.requests).toHaveLength(2)
  })
})
