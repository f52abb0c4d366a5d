/**
 * `@agentmsg/core/strict-json` — the I-JSON parser of PROFILE §1: `parseStrictJson`, and
 * `parseStrictJsonAsync`, which imports the exact parser only for input the fast path cannot
 * prove. A narrow entry for bundle size (see `@agentmsg/core/message`); the root entry exports
 * all of this too.
 *
 * @packageDocumentation
 */

export type { NonIntegerLiteral, StrictJsonOptions } from './strict-json.js'
export {
  INTEGER_MEMBERS,
  isIJsonSafeNumber,
  nonIntegerLiteral,
  parseStrictJson,
  parseStrictJsonAsync,
} from './strict-json.js'
