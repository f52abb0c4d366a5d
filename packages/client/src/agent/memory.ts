/** The in-memory storage, a chunk of its own: only an agent given no storage loads it. */
export { memoryStorage } from '@agentmsg/core'
