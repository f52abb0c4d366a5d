/**
 * `@agentmsg/core/http-signature/sign` — signing relay requests as an agent (PROFILE §9, RFC
 * 9421). A narrow entry for bundle size (see `@agentmsg/core/message`): it carries none of the
 * relay's verifier, nor the WebSocket challenge, which a WebSocket stream imports from
 * `@agentmsg/core/http-signature` when it first connects. That entry exports all of this too.
 *
 * @packageDocumentation
 */

export {
  contentDigest,
  createRequestNonce,
  SIGNATURE_LABEL,
  signatureBase,
} from './components.js'
export { type SignRequestInput, signRequest } from './sign.js'
