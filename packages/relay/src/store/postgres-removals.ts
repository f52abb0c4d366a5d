/** Removing entries (acks, expiry) as PL/pgSQL functions, for the quoted schema `s`. */
export function postgresRemovalFunctions(s: string): string {
  return `
-- Remove the entries with these keys (mailbox and cursor, pairwise), keeping the counters in step (per mailbox, per sender
-- of a mailbox, relay-wide) and remembering each triple until its message's forget_at (PROFILE §9:
-- dedupe after ack or expiry). p_orphans: also delete the messages no entry references any more
-- (false when the caller deletes them in bulk). st: the state (see apply_writes).
CREATE FUNCTION ${s}.remove_entries(p_mailboxes text[], p_cursors bigint[], p_orphans boolean, INOUT st bigint[],
                                    OUT removed integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  refs bigint[];
  gone_messages bigint;
  gone_bytes bigint;
BEGIN
  removed := 0;
  IF coalesce(cardinality(p_cursors), 0) = 0 THEN RETURN; END IF;
  WITH gone AS (
    DELETE FROM ${s}.entries e USING unnest(p_mailboxes, p_cursors) AS k(mailbox, cursor)
    WHERE e.mailbox = k.mailbox AND e.cursor = k.cursor
    RETURNING e.mailbox, e.from_agent, e.message_id, e.bytes, e.message_ref
  ), remember AS (
    INSERT INTO ${s}.seen AS seen (mailbox, message_id, from_agent, forget_at)
    SELECT g.mailbox, g.message_id, g.from_agent, m.forget_at
    FROM gone g JOIN ${s}.messages m ON m.id = g.message_ref
    ON CONFLICT (mailbox, message_id, from_agent)
    DO UPDATE SET forget_at = greatest(seen.forget_at, EXCLUDED.forget_at)
  ), by_sender AS (
    SELECT mailbox, from_agent, count(*) AS n, sum(bytes) AS b
    FROM gone GROUP BY mailbox, from_agent
  ), drop_sender AS (
    -- A sender holding nothing in a mailbox leaves no row behind.
    DELETE FROM ${s}.senders x USING by_sender g
    WHERE x.mailbox = g.mailbox AND x.from_agent = g.from_agent AND x.messages <= g.n
  ), keep_sender AS (
    UPDATE ${s}.senders x SET messages = x.messages - g.n, bytes = x.bytes - g.b
    FROM by_sender g
    WHERE x.mailbox = g.mailbox AND x.from_agent = g.from_agent AND x.messages > g.n
  ), by_mailbox AS (
    UPDATE ${s}.mailboxes x SET messages = x.messages - g.n, bytes = x.bytes - g.b
    FROM (SELECT mailbox, count(*) AS n, sum(bytes) AS b FROM gone GROUP BY mailbox) g
    WHERE x.agent = g.mailbox
  )
  SELECT count(*), array_agg(DISTINCT message_ref) INTO removed, refs FROM gone;
  IF p_orphans AND removed > 0 THEN
    -- Locked first (in order): two nodes removing a topic message's last two entries at once
    -- then take turns, and the second sees the first's removal (READ COMMITTED: a new statement).
    PERFORM 1 FROM ${s}.messages WHERE id = ANY (refs) ORDER BY id FOR UPDATE;
    WITH dropped AS (
      DELETE FROM ${s}.messages m WHERE m.id = ANY (refs)
        AND NOT EXISTS (SELECT 1 FROM ${s}.entries e WHERE e.message_ref = m.id)
      RETURNING m.bytes
    )
    SELECT count(*), coalesce(sum(bytes), 0) INTO gone_messages, gone_bytes FROM dropped;
    st[1] := st[1] - gone_messages;
    st[2] := st[2] - gone_bytes;
  END IF;
END
$fn$;

-- Acknowledge: a mailbox's entries with this id, from p_from unless it is null.
CREATE FUNCTION ${s}.ack(p_mailbox text, p_message_id text, p_from text, INOUT st bigint[],
                         OUT removed integer)
LANGUAGE sql AS $fn$
  SELECT r.* FROM (
    SELECT array_agg(mailbox) AS boxes, array_agg(cursor) AS cursors FROM ${s}.entries
    WHERE mailbox = p_mailbox AND message_id = p_message_id
      AND (p_from IS NULL OR from_agent = p_from)
  ) k, ${s}.remove_entries(k.boxes, k.cursors, true, st) r
$fn$;

-- A mailbox's entries expired at p_now (they do not hold room: PROFILE §9 retention).
CREATE FUNCTION ${s}.remove_expired_in(p_mailbox text, p_now double precision,
                                       INOUT st bigint[], OUT removed integer)
LANGUAGE sql AS $fn$
  SELECT r.* FROM (
    SELECT array_agg(mailbox) AS boxes, array_agg(cursor) AS cursors FROM ${s}.entries
    WHERE mailbox = p_mailbox AND expires_at <= p_now
  ) k, ${s}.remove_entries(k.boxes, k.cursors, true, st) r
$fn$;

-- Every entry expired at p_now and its message; forget triples whose window passed and nonces
-- that expired. Returns how many entries.
CREATE FUNCTION ${s}.expire(p_now double precision, INOUT st bigint[], OUT removed integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  gone_messages bigint;
  gone_bytes bigint;
BEGIN
  SELECT r.st, r.removed INTO st, removed FROM (
    SELECT array_agg(e.mailbox) AS boxes, array_agg(e.cursor) AS cursors
    FROM ${s}.messages m JOIN ${s}.entries e ON e.message_ref = m.id WHERE m.expires_at <= p_now
  ) k, ${s}.remove_entries(k.boxes, k.cursors, false, st) r;
  -- Every entry of an expired message is gone now: its row goes in bulk.
  WITH dropped AS (DELETE FROM ${s}.messages WHERE expires_at <= p_now RETURNING bytes)
  SELECT count(*), coalesce(sum(bytes), 0) INTO gone_messages, gone_bytes FROM dropped;
  st[1] := st[1] - gone_messages;
  st[2] := st[2] - gone_bytes;
  DELETE FROM ${s}.seen WHERE forget_at <= p_now;
  DELETE FROM ${s}.nonces WHERE expires_at < p_now;
END
$fn$;
`
}
