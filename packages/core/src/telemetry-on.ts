/** What traces, once telemetry.ts has an OpenTelemetry API: a chunk of its own for bundlers. */
import type * as OpenTelemetry from '@opentelemetry/api'
import type { TraceSpan } from './telemetry.js'

/**
 * `fn(span, a, b)` in a span, a child of the active one, a request's `traceparent` or none; ended
 * when it settles. A rejection sets ERROR and `error.type`, a SERVER span's answer its status.
 */
export type Traced = <A, B, R>(
  name: string,
  kind: 'CLIENT' | 'SERVER' | 'PRODUCER' | 'CONSUMER' | 'INTERNAL',
  parent: { readonly headers: Headers } | 'root' | undefined,
  fn: (span: TraceSpan | undefined, a: A, b: B) => Promise<R>,
  a: A,
  b: B,
) => Promise<R>

const STATUS = 'http.response.status_code'
/** What the W3C propagators read of a request's headers (they never list them). */
const GET = { get: (h: Headers, k: string) => h.get(k) ?? undefined, keys: () => [] }

export function tracing(otel: typeof OpenTelemetry) {
  const { context, propagation, trace } = otel
  const tracer = trace.getTracer('agentmsg')
  const traced: Traced = (name, kind, parent, fn, a, b) => {
    let base = parent === 'root' ? otel.ROOT_CONTEXT : context.active()
    if (typeof parent === 'object') base = propagation.extract(base, parent.headers, GET)
    const span = tracer.startSpan(name, { kind: otel.SpanKind[kind] }, base)
    // No SDK: the no-op tracer's span, with no trace to record or propagate; nothing more to pay.
    if (span.spanContext() === otel.INVALID_SPAN_CONTEXT) return fn(undefined, a, b)
    const ended = <T>(value: T) => (span.end(), value)
    const ran = context.with(trace.setSpan(base, span), async () => fn(span, a, b))
    return ran.then(
      (result) => {
        if (kind === 'SERVER') span.setAttribute(STATUS, (result as { status: number }).status)
        return ended(result)
      },
      (error: unknown) => {
        const e = Object(error) as { code?: string; name?: string; peerStatus?: number }
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: String(Object(error).message) })
        span.setAttributes({ 'error.type': e.code ?? e.name, [STATUS]: e.peerStatus })
        throw ended(error)
      },
    )
  }
  const inject = (headers: HeadersInit | undefined) => {
    const active = context.active()
    if (!trace.getSpanContext(active)) return headers
    const out = new Headers(headers)
    propagation.inject(active, out, { set: (h, k, v) => h.set(k, v) })
    return out
  }
  return { traced, inject }
}
