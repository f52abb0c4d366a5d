/**
 * OpenTelemetry, when the application has it: spans (a send, each delivery attempt, the receive
 * pipeline, the relay's requests and pushes) and the W3C trace context (`traceparent`,
 * `tracestate`) on outgoing requests. Trace context travels in HTTP headers only, never in a
 * message, not even in its unsigned `trace` (PROFILE §3): a message is the sender's to word.
 *
 * `@opentelemetry/api` is an optional peer dependency and is only ever imported as a type. It
 * is looked for once, as this module loads, with an `import()` whose specifier is not a literal:
 * bundlers leave it alone (the comments quiet webpack and Vite), so no browser bundle carries the
 * API; where it does not resolve (a browser without an import map, a runtime without the package)
 * tracing stays off. An app that bundles the API hands it in with `useOpenTelemetry(api)`.
 * Off, each hook is one test of a module variable: no allocation, no promise.
 */
import type * as OpenTelemetry from '@opentelemetry/api'

type Api = typeof OpenTelemetry

/** A span as call sites use it: OpenTelemetry's `Span` is one (no type here needs the package). */
export interface TraceSpan {
  setAttributes(attributes: Record<string, string | number | boolean | undefined>): unknown
  updateName(name: string): unknown
}

/** A span's parent: the active span, an incoming request's trace context, or none (a new trace). */
export type SpanParent = { readonly headers: Headers } | 'root' | undefined

let api: Api | undefined
let tracer: OpenTelemetry.Tracer | undefined
let chosen = false

/**
 * Trace with this OpenTelemetry API (`import * as api from '@opentelemetry/api'`), or not at all
 * (`undefined`). Under Node an installed `@opentelemetry/api` is found without it; a browser app
 * that bundles the API hands it in here.
 */
export function useOpenTelemetry(
  given: { trace: object; context: object; propagation: object } | undefined,
): void {
  api = given as Api | undefined
  tracer = undefined
  chosen = true
}

// A parameter, not a literal: a bundler (ours included) must not resolve or inline it.
const load = (specifier: string) => import(/* webpackIgnore: true */ /* @vite-ignore */ specifier)
load('@opentelemetry/api').then(
  (found: Api) => void (chosen || ((api = found), (tracer = undefined))),
  () => {},
)

const HEADERS: OpenTelemetry.TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
}

/**
 * Run `fn(span, a, b)` in a new span `name`, the active span while its promise runs, ended when
 * it settles (a rejection recorded). Off: `fn(undefined, a, b)`. `fn` takes its arguments
 * rather than closing over them, so a hot path needs no closure per call.
 */
export function traced<A, B, R>(
  name: string,
  kind: keyof typeof OpenTelemetry.SpanKind,
  parent: SpanParent,
  fn: (span: TraceSpan | undefined, a: A, b: B) => Promise<R>,
  a: A,
  b: B,
): Promise<R> {
  const otel = api
  if (otel === undefined) return fn(undefined, a, b)
  const { context, trace } = otel
  const base =
    parent === 'root'
      ? otel.ROOT_CONTEXT
      : parent === undefined
        ? context.active()
        : otel.propagation.extract(context.active(), parent.headers, HEADERS)
  tracer ??= trace.getTracer('agentmsg')
  const span = tracer.startSpan(name, { kind: otel.SpanKind[kind] }, base)
  const ran = context.with(trace.setSpan(base, span), async () => fn(span, a, b))
  return ran.then(
    (result) => (span.end(), result),
    (error: unknown) => {
      recordFailure(span, error, otel)
      span.end()
      throw error
    },
  )
}

/** Status ERROR, `error.type` the error's code (an AgentMsgError's) or name, the peer's status. */
function recordFailure(span: OpenTelemetry.Span, error: unknown, otel: Api): void {
  const { code, name, peerStatus, message } = (error ?? {}) as Record<string, unknown>
  span.setStatus({ code: otel.SpanStatusCode.ERROR, message: String(message ?? error) })
  span.setAttributes({
    'error.type': typeof code === 'string' ? code : typeof name === 'string' ? name : 'Error',
    'http.response.status_code': typeof peerStatus === 'number' ? peerStatus : undefined,
  })
}

/** `headers` with the active trace context added (a copy); as they are when there is none. */
export function withTraceContext(headers: HeadersInit | undefined): HeadersInit | undefined {
  const otel = api
  if (otel === undefined) return headers
  const carrier: Record<string, string> = {}
  otel.propagation.inject(otel.context.active(), carrier)
  const fields = Object.entries(carrier)
  if (fields.length === 0) return headers
  const out = new Headers(headers)
  for (const [key, value] of fields) out.set(key, value)
  return out
}
