/**
 * @agentmsg/transport-relay — the isomorphic relay client (PROFILE §9).
 *
 * @packageDocumentation
 */
export {}
