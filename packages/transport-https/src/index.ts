/**
 * @agentmsg/transport-https — direct HTTPS delivery (SPEC §4.1; PROFILE §6): a web-standard
 * inbox handler and a sender with a durable outbox. Isomorphic; Node-only parts live in
 * `@agentmsg/transport-https/node`.
 *
 * @packageDocumentation
 */
export {}
