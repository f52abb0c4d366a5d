/**
 * The PostgreSQL store's writes as PL/pgSQL functions: a batch is ONE call, `apply_writes`, so
 * one round trip, each write seeing what the earlier ones wrote. It locks the one row of
 * `relay_state` first: writers of every process take turns, so cursors (allocated under the
 * lock) increase in commit order and quotas are exact. The row's values travel through the
 * batch as `st` = {next_cursor, messages, bytes}, written back once (a row version per publish
 * would make later reads walk them all). A refusal is an outcome, not an exception, which would
 * abort the batch; the expired entries dropped to make room stay dropped.
 */
import { postgresRemovalFunctions } from './postgres-removals.js'

/** The functions, for the quoted schema `s`, notifying on `channel`. */
export function postgresFunctions(s: string, channel: string): string {
  return `
-- A JSON array of strings as text[], in order.
CREATE FUNCTION ${s}.texts(a jsonb) RETURNS text[] LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  out text[] := '{}';
BEGIN
  FOR i IN 0 .. jsonb_array_length(a) - 1 LOOP
    out := array_append(out, a->>i);
  END LOOP;
  RETURN out;
END
$fn$;

${postgresRemovalFunctions(s)}
-- Why a mailbox has no room for p_bytes from p_from ('mailbox', 'sender'), or null.
-- q: the quota {messages, bytes, senderMessages, senderBytes, totalBytes, bucketBytes}.
CREATE FUNCTION ${s}.no_room(p_mailbox text, p_from text, p_bytes bigint, q double precision[])
RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
  held_messages bigint;
  held_bytes bigint;
BEGIN
  SELECT messages, bytes INTO held_messages, held_bytes
  FROM ${s}.mailboxes WHERE agent = p_mailbox;
  IF coalesce(held_messages, 0) + 1 > q[1] OR coalesce(held_bytes, 0) + p_bytes > q[2] THEN
    RETURN 'mailbox';
  END IF;
  SELECT messages, bytes INTO held_messages, held_bytes
  FROM ${s}.senders WHERE mailbox = p_mailbox AND from_agent = p_from;
  IF coalesce(held_messages, 0) + 1 > q[3] OR coalesce(held_bytes, 0) + p_bytes > q[4] THEN
    RETURN 'sender';
  END IF;
  RETURN NULL;
END
$fn$;

-- Would p_bytes more pass the share p_max of the client address bucket (its hash)? Not without one.
CREATE FUNCTION ${s}.over_bucket(p_bucket text, p_bytes bigint, p_max double precision)
RETURNS boolean LANGUAGE sql STABLE AS $fn$
  SELECT p_bucket IS NOT NULL AND
    coalesce((SELECT bytes FROM ${s}.buckets WHERE bucket = p_bucket), 0) + p_bytes > p_max
$fn$;

-- Publish (RelayStore.publish): decide every mailbox before writing anything — held or
-- remembered → duplicate ('d'); no room → refusal, or skipped ('f') with skipFull; else new
-- ('n') — then store the message once and an entry per new mailbox, and notify each of them
-- (delivered at COMMIT). outcome: {kinds, cursors} per mailbox, {full, reason} or
-- {relayFull: 'relay' | 'bucket'} (the relay-wide cap, the client address bucket's share).
CREATE FUNCTION ${s}.publish(p jsonb, q double precision[], INOUT st bigint[], OUT outcome jsonb)
LANGUAGE plpgsql AS $fn$
DECLARE
  p_from text := p->>'from';
  p_message_id text := p->>'messageId';
  p_bytes bigint := (p->>'bytes')::bigint;
  p_received_at double precision := (p->>'receivedAt')::double precision;
  p_expires_at double precision := (p->>'expiresAt')::double precision;
  p_bucket text := p->>'bucket';
  boxes text[] := ${s}.texts(p->'mailboxes');
  kinds text[] := array_fill(NULL::text, ARRAY[cardinality(boxes)]);
  cursors bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(boxes)]);
  held bigint;
  reason text;
  fresh integer := 0;
  ref bigint;
  dropped integer;
BEGIN
  -- Expired messages do not hold room under the relay-wide cap or a bucket's share either.
  IF st[3] + p_bytes > q[5] OR ${s}.over_bucket(p_bucket, p_bytes, q[6]) THEN
    SELECT r.st INTO st FROM ${s}.expire(p_received_at, st) r;
  END IF;
  FOR i IN 1 .. cardinality(boxes) LOOP
    SELECT cursor INTO held FROM ${s}.entries
    WHERE mailbox = boxes[i] AND message_id = p_message_id AND from_agent = p_from;
    IF FOUND THEN
      kinds[i] := 'd';
      cursors[i] := held;
      CONTINUE;
    END IF;
    IF EXISTS (SELECT 1 FROM ${s}.seen WHERE mailbox = boxes[i] AND message_id = p_message_id
               AND from_agent = p_from AND forget_at > p_received_at) THEN
      kinds[i] := 'd';
      CONTINUE;
    END IF;
    reason := ${s}.no_room(boxes[i], p_from, p_bytes, q);
    IF reason IS NOT NULL THEN
      SELECT r.st, r.removed INTO st, dropped FROM ${s}.remove_expired_in(boxes[i], p_received_at, st) r;
      IF dropped > 0 THEN reason := ${s}.no_room(boxes[i], p_from, p_bytes, q); END IF;
    END IF;
    IF reason IS NOT NULL THEN
      IF NOT coalesce((p->>'skipFull')::boolean, false) THEN
        outcome := jsonb_build_object('full', boxes[i], 'reason', reason);
        RETURN;
      END IF;
      kinds[i] := 'f';
      CONTINUE;
    END IF;
    kinds[i] := 'n';
    fresh := fresh + 1;
  END LOOP;
  IF fresh > 0 THEN
    IF st[3] + p_bytes > q[5] THEN
      outcome := '{"relayFull": "relay"}'::jsonb;
      RETURN;
    END IF;
    IF ${s}.over_bucket(p_bucket, p_bytes, q[6]) THEN
      outcome := '{"relayFull": "bucket"}'::jsonb;
      RETURN;
    END IF;
    st[2] := st[2] + 1;
    st[3] := st[3] + p_bytes;
    INSERT INTO ${s}.messages
      (from_agent, message_id, json, json_bytes, bytes, received_at, expires_at, forget_at, bucket)
    VALUES (p_from, p_message_id, p->>'json', octet_length(p->>'json'), p_bytes, p_received_at,
            p_expires_at, (p->>'forgetAt')::double precision, p_bucket)
    RETURNING id INTO ref;
    FOR i IN 1 .. cardinality(boxes) LOOP
      -- Cursors come from the state row this transaction holds locked (see apply_writes).
      IF kinds[i] = 'n' THEN
        cursors[i] := st[1];
        st[1] := st[1] + 1;
      END IF;
    END LOOP;
    INSERT INTO ${s}.entries (cursor, mailbox, message_ref, from_agent, message_id, bytes, expires_at)
    SELECT cursors[k], boxes[k], ref, p_from, p_message_id, p_bytes, p_expires_at
    FROM generate_subscripts(boxes, 1) AS k WHERE kinds[k] = 'n';
    INSERT INTO ${s}.mailboxes AS x (agent, state, messages, bytes)
    SELECT boxes[k], 'none', 1, p_bytes FROM generate_subscripts(boxes, 1) AS k WHERE kinds[k] = 'n'
    ON CONFLICT (agent) DO UPDATE SET messages = x.messages + 1, bytes = x.bytes + EXCLUDED.bytes;
    INSERT INTO ${s}.senders AS x (mailbox, from_agent, messages, bytes)
    SELECT boxes[k], p_from, 1, p_bytes FROM generate_subscripts(boxes, 1) AS k WHERE kinds[k] = 'n'
    ON CONFLICT (mailbox, from_agent)
    DO UPDATE SET messages = x.messages + 1, bytes = x.bytes + EXCLUDED.bytes;
    -- Live push on every node (postgres-watch.ts); a name too long for a payload (8000 bytes)
    -- is sent as '' — "any mailbox may have changed".
    PERFORM pg_notify('${channel.replaceAll("'", "''")}',
                      CASE WHEN octet_length(boxes[k]) <= 7000 THEN boxes[k] ELSE '' END)
    FROM generate_subscripts(boxes, 1) AS k WHERE kinds[k] = 'n';
  END IF;
  outcome := jsonb_build_object('kinds', kinds, 'cursors', cursors::text[]);
END
$fn$;

CREATE FUNCTION ${s}.subscribe(p jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ${s}.subscriptions (id, agent, topics, webhook_url, webhook_verified, created)
  VALUES (p->>'id', p->>'agent', ${s}.texts(p->'topics'), p->>'webhookUrl',
          (p->>'verified')::boolean, (p->>'created')::double precision);
  INSERT INTO ${s}.subscription_topics (topic, subscription_id)
  SELECT DISTINCT t, p->>'id' FROM jsonb_array_elements_text(p->'topics') AS t
  ON CONFLICT DO NOTHING;
  INSERT INTO ${s}.mailboxes (agent, state) VALUES (p->>'agent', 'open')
  ON CONFLICT (agent) DO UPDATE SET state = 'open';
END
$fn$;

-- False when no such subscription of p_agent; the mailbox closes with its last subscription.
CREATE FUNCTION ${s}.unsubscribe(p_id text, p_agent text) RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM ${s}.subscriptions WHERE id = p_id AND agent = p_agent;
  IF NOT FOUND THEN RETURN false; END IF;
  IF NOT EXISTS (SELECT 1 FROM ${s}.subscriptions WHERE agent = p_agent) THEN
    UPDATE ${s}.mailboxes SET state = 'closed' WHERE agent = p_agent;
  END IF;
  RETURN true;
END
$fn$;

-- One batch of the group commit: every op in order, one outcome each (a JSON array).
CREATE FUNCTION ${s}.apply_writes(ops jsonb, q double precision[]) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  op jsonb;
  outcome jsonb;
  outcomes jsonb[] := '{}';
  st bigint[];
  st0 bigint[];
BEGIN
  -- Writers take turns, across every process: see postgres-functions.ts.
  SELECT ARRAY[next_cursor, messages, bytes] INTO st
  FROM ${s}.relay_state WHERE id = 1 FOR UPDATE;
  st0 := st;
  -- PROFILE §9: a write is answered once durable, whatever the server's default (a COMMIT
  -- waits for its WAL flush unless synchronous_commit is off; stronger settings are kept).
  IF current_setting('synchronous_commit') = 'off' THEN
    PERFORM set_config('synchronous_commit', 'local', true);
  END IF;
  FOR op IN SELECT e.value FROM jsonb_array_elements(ops) WITH ORDINALITY AS e(value, n)
            ORDER BY e.n LOOP
    CASE op->>'op'
      WHEN 'publish' THEN
        SELECT r.st, r.outcome INTO st, outcome FROM ${s}.publish(op, q, st) r;
      WHEN 'ack' THEN
        SELECT r.st, to_jsonb(r.removed) INTO st, outcome
        FROM ${s}.ack(op->>'mailbox', op->>'messageId', op->>'from', st) r;
      WHEN 'expire' THEN
        SELECT r.st, to_jsonb(r.removed) INTO st, outcome
        FROM ${s}.expire((op->>'now')::double precision, st) r;
      WHEN 'subscribe' THEN
        PERFORM ${s}.subscribe(op);
        outcome := 'null'::jsonb;
      WHEN 'unsubscribe' THEN
        outcome := to_jsonb(${s}.unsubscribe(op->>'id', op->>'agent'));
      WHEN 'check' THEN
        -- Readiness (checkWritable): the state row's lock above is the write it proves.
        outcome := 'null'::jsonb;
      WHEN 'setWebhookVerified' THEN
        UPDATE ${s}.subscriptions SET webhook_verified = (op->>'verified')::boolean
        WHERE id = op->>'id' AND webhook_url IS NOT NULL;
        outcome := 'null'::jsonb;
      ELSE
        RAISE EXCEPTION 'unknown relay store op %', op->>'op';
    END CASE;
    outcomes := array_append(outcomes, outcome);
  END LOOP;
  IF st IS DISTINCT FROM st0 THEN
    UPDATE ${s}.relay_state SET next_cursor = st[1], messages = st[2], bytes = st[3] WHERE id = 1;
  END IF;
  RETURN to_jsonb(outcomes);
END
$fn$;
`
}
