/**
 * The OpenTelemetry SDK as an application registers it (a context manager, the W3C propagator, a
 * tracer provider), for one test file, its spans kept in memory; unregistered after the file.
 */
import { context, propagation, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll } from 'vitest'

/** Registers the SDK before the file's tests; resolves the exporter holding their spans. */
export function traceToMemory(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter()
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    propagation.setGlobalPropagator(new W3CTraceContextPropagator())
    const processor = new SimpleSpanProcessor(exporter)
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [processor] }))
  })
  afterAll(() => {
    trace.disable()
    propagation.disable()
    context.disable()
  })
  return exporter
}
