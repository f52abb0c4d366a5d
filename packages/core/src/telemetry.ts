/**
 * OpenTelemetry, if the app has it: spans, and trace context in requests' headers, never in a
 * message (not even its unsigned `trace`, PROFILE §3). The optional API is looked for once by an
 * `import()` of no literal, which bundlers leave (an app bundling it calls `useOpenTelemetry`).
 * Off, a hook is one test and allocates nothing; what traces (./telemetry-on.ts) is never loaded.
 */
import type * as OpenTelemetry from '@opentelemetry/api'
import type { Traced, tracing } from './telemetry-on.js'

/** A span as call sites use it: OpenTelemetry's `Span` is one (no type here needs the package). */
export interface TraceSpan {
  /** Adds attributes; `undefined` values are left out. */
  setAttributes(attributes: Record<string, string | number | boolean | undefined>): unknown
  /** Renames the span, once what it was for is known (the relay's route). */
  updateName(name: string): unknown
}

let on: ReturnType<typeof tracing> | undefined

/** Trace with this OpenTelemetry API: `await useOpenTelemetry(api)`, `api` its module. */
export async function useOpenTelemetry(api: { trace: object; propagation: object }) {
  on = (await import('./telemetry-on.js')).tracing(api as typeof OpenTelemetry)
}

// A parameter, not a literal: no bundler, ours included, resolves or inlines it.
const load = (specifier: string) => import(/* webpackIgnore: true */ /* @vite-ignore */ specifier)
void load('@opentelemetry/api').then(useOpenTelemetry, () => {})

/** `fn(span, a, b)` in a new span (./telemetry-on.ts); off, `fn(undefined, a, b)`: no closure. */
export const traced: Traced = (name, kind, parent, fn, a, b) =>
  on ? on.traced(name, kind, parent, fn, a, b) : fn(undefined, a, b)

/** `headers` with the active trace context (a copy); themselves when no span is active. */
export const withTraceContext = (headers: HeadersInit | undefined) =>
  on ? on.inject(headers) : headers
