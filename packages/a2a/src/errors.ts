/**
 * Failures as A2A errors: what agentmsg refused (a send, a signature, an unknown sender) becomes
 * a JSON-RPC error envelope with code {@link AGENTMSG_REFUSED} whose message starts with the
 * agentmsg error code, so a stock A2A client shows why; an agent's own A2A errors arrive as
 * the A2A SDK rebuilds them from its JSON-RPC envelope.
 */
import { A2AError, fromJsonRpcErrorResponse, JsonRpcTransportError } from '@a2a-js/sdk/errors'
import { isAgentMsgError } from '@agentmsg/core'
import { type A2APayload, AGENTMSG_REFUSED, isObject } from './wire.js'

/** A JSON-RPC error object for a refusal: `{code: AGENTMSG_REFUSED, message: "<code>: …"}`. */
export function refusalObject(code: string, message: string) {
  return { code: AGENTMSG_REFUSED, message: `${code}: ${message}`, data: { agentmsg_code: code } }
}

/** An A2A error for an agentmsg refusal `code`. */
export function refusal(code: string, message: string): JsonRpcTransportError {
  return new JsonRpcTransportError({
    jsonrpc: '2.0',
    id: null,
    error: refusalObject(code, message),
  })
}

/** `error` as an A2A error (an abort's reason passes through unchanged). */
export function a2aError(error: unknown): unknown {
  if (error instanceof A2AError) return error
  if (isAgentMsgError(error)) return refusal(error.code, error.message)
  if (error instanceof Error && error.name === 'AbortError') return error
  return refusal('internal_error', error instanceof Error ? error.message : String(error))
}

/** The `result` of a JSON-RPC answer to call `id`; its `error` thrown as the A2A error. */
export function answerOf(reply: A2APayload, id: string): unknown {
  const { rpc } = reply
  if (rpc.jsonrpc !== '2.0' || rpc.id !== id) {
    throw refusal('invalid_format', `an answer that is not a JSON-RPC 2.0 answer to ${id}`)
  }
  const { error } = rpc
  if (error !== undefined) {
    if (!isObject(error) || typeof error.code !== 'number' || typeof error.message !== 'string') {
      throw refusal('invalid_format', 'a JSON-RPC error without a code and message')
    }
    throw fromJsonRpcErrorResponse({
      jsonrpc: '2.0',
      id,
      error: error as { code: number; message: string },
    })
  }
  if (!('result' in rpc)) throw refusal('invalid_format', 'a JSON-RPC answer without a result')
  return rpc.result
}
