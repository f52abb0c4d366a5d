/**
 * The PostgreSQL store's writes as PL/pgSQL functions: a batch is ONE call, `apply_writes`, so
 * one round trip, each write seeing what the earlier ones wrote. Writers of every process wait
 * only for what they share, in one order (so no two wait for each other): the relay-wide
 * advisory lock, then each client address bucket's (both shared, exclusive near the limit:
 * lock_batch), then the rows of the mailboxes written, sorted by name. A mailbox's cursors are
 * taken under its lock, so they increase in commit order within it, and its quotas are exact.
 * Relay-wide and per-bucket bytes are striped (a row per session stripe, summed): `st` =
 * {messages, bytes} relay-wide travels through the batch and its change is added to the
 * session's stripe at the end. A refusal is an outcome, not an exception, which would abort
 * the batch; the expired entries dropped to make room stay dropped.
 */
import { postgresRemovalFunctions } from './postgres-removals.js'

/** The functions, for the quoted schema `s`, notifying on `channel`. */
export function postgresFunctions(s: string, channel: string): string {
  const name = s.replaceAll("'", "''")
  const lock = `hashtextextended('agentmsg-relay-totals:${name}', 0)`
  // A client address bucket's lock (PROFILE §9 storage per client address), by its hash.
  const bucketLock = (b: string) => `hashtextextended('agentmsg-relay-bucket:${name}:' || ${b}, 0)`
  // This session's stripe of the striped counters (relay_totals, buckets).
  const stripe = 'pg_backend_pid() % 64'
  return `
${postgresRemovalFunctions(s)}
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
  boxes text[] := ARRAY(SELECT jsonb_array_elements_text(p->'mailboxes'));
  kinds text[] := array_fill(NULL::text, ARRAY[cardinality(boxes)]);
  cursors bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(boxes)]);
  fresh text[] := '{}';
  held bigint;
  remembered boolean;
  bucket_bytes bigint;
  reason text;
  dropped integer;
  got_boxes text[];
  got_cursors bigint[];
BEGIN
  -- Expired messages do not hold room under the relay-wide cap or a bucket's share either.
  bucket_bytes := (SELECT sum(bytes) FROM ${s}.buckets WHERE bucket = p_bucket);
  IF st[2] + p_bytes > q[5] OR (p_bucket IS NOT NULL AND coalesce(bucket_bytes, 0) + p_bytes > q[6]) THEN
    SELECT r.st INTO st FROM ${s}.expire(p_received_at, st) r;
    bucket_bytes := (SELECT sum(bytes) FROM ${s}.buckets WHERE bucket = p_bucket);
  END IF;
  FOR i IN 1 .. cardinality(boxes) LOOP
    dropped := 0;
    LOOP
      -- Held or remembered; else no room ('mailbox', 'sender') or null. q: the quota
      -- {messages, bytes, senderMessages, senderBytes, totalBytes, bucketBytes}.
      SELECT (SELECT cursor FROM ${s}.entries
              WHERE mailbox = m.agent AND message_id = p_message_id AND from_agent = p_from),
             EXISTS (SELECT 1 FROM ${s}.seen WHERE mailbox = m.agent AND message_id = p_message_id
                     AND from_agent = p_from AND forget_at > p_received_at),
             CASE WHEN m.messages + 1 > q[1] OR m.bytes + p_bytes > q[2] THEN 'mailbox'
                  WHEN coalesce(x.messages, 0) + 1 > q[3] OR coalesce(x.bytes, 0) + p_bytes > q[4]
                  THEN 'sender' END
      INTO held, remembered, reason
      FROM ${s}.mailboxes m LEFT JOIN ${s}.senders x ON x.mailbox = m.agent AND x.from_agent = p_from
      WHERE m.agent = boxes[i];
      EXIT WHEN held IS NOT NULL OR remembered OR reason IS NULL OR dropped > 0;
      -- Expired entries do not hold room: dropped, then the room asked again.
      SELECT r.st, r.removed INTO st, dropped FROM ${s}.remove_expired_in(boxes[i], p_received_at, st) r;
      EXIT WHEN dropped = 0;
    END LOOP;
    IF held IS NOT NULL OR remembered THEN
      kinds[i] := 'd';
      cursors[i] := held;
      CONTINUE;
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
    fresh := array_append(fresh, boxes[i]);
  END LOOP;
  IF cardinality(fresh) > 0 THEN
    IF st[2] + p_bytes > q[5] THEN
      outcome := '{"relayFull": "relay"}'::jsonb;
      RETURN;
    END IF;
    IF p_bucket IS NOT NULL AND coalesce(bucket_bytes, 0) + p_bytes > q[6] THEN
      outcome := '{"relayFull": "bucket"}'::jsonb;
      RETURN;
    END IF;
    st[1] := st[1] + 1;
    st[2] := st[2] + p_bytes;
    -- One statement writes it all. Cursors are taken under the mailboxes' locks (lock_batch), so
    -- within a mailbox they increase in commit order; across mailboxes they are unique.
    WITH message AS (
      INSERT INTO ${s}.messages
        (from_agent, message_id, json, json_bytes, bytes, received_at, expires_at, forget_at, bucket)
      VALUES (p_from, p_message_id, p->>'json', octet_length(p->>'json'), p_bytes, p_received_at,
              p_expires_at, (p->>'forgetAt')::double precision, p_bucket)
      RETURNING id
    ), charged AS (
      INSERT INTO ${s}.buckets AS b (bucket, stripe, bytes)
      SELECT p_bucket, ${stripe}, p_bytes WHERE p_bucket IS NOT NULL
      ON CONFLICT (bucket, stripe) DO UPDATE SET bytes = b.bytes + EXCLUDED.bytes
    ), counted_box AS (
      UPDATE ${s}.mailboxes x SET messages = x.messages + 1, bytes = x.bytes + p_bytes
      WHERE x.agent = ANY (fresh)
    ), entered AS (
      INSERT INTO ${s}.entries (mailbox, cursor, message_ref, from_agent, message_id, bytes, expires_at)
      SELECT b, nextval('${s}.entry_cursor'), (SELECT id FROM message), p_from, p_message_id,
             p_bytes, p_expires_at
      FROM unnest(fresh) WITH ORDINALITY AS f(b, n) ORDER BY n
      RETURNING mailbox, cursor
    ), counted AS (
      INSERT INTO ${s}.senders AS x (mailbox, from_agent, messages, bytes)
      SELECT b, p_from, 1, p_bytes FROM unnest(fresh) AS b
      ON CONFLICT (mailbox, from_agent)
      DO UPDATE SET messages = x.messages + 1, bytes = x.bytes + EXCLUDED.bytes
    )
    SELECT array_agg(mailbox), array_agg(cursor) INTO got_boxes, got_cursors FROM entered;
    FOR i IN 1 .. cardinality(boxes) LOOP
      IF kinds[i] = 'n' THEN cursors[i] := got_cursors[array_position(got_boxes, boxes[i])]; END IF;
    END LOOP;
    -- Live push on every node (postgres-watch.ts); a name too long for a payload (8000 bytes)
    -- is sent as '' — "any mailbox may have changed".
    PERFORM pg_notify('${channel.replaceAll("'", "''")}',
                      CASE WHEN octet_length(b) <= 7000 THEN b ELSE '' END)
    FROM unnest(fresh) AS b;
  END IF;
  outcome := jsonb_build_object('kinds', kinds, 'cursors', cursors::text[]);
END
$fn$;
CREATE FUNCTION ${s}.subscribe(p jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ${s}.subscriptions (id, agent, topics, webhook_url, webhook_verified, created)
  VALUES (p->>'id', p->>'agent', ARRAY(SELECT jsonb_array_elements_text(p->'topics')),
          p->>'webhookUrl', (p->>'verified')::boolean, (p->>'created')::double precision);
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
-- Lock what a batch writes, in one order across every process: see the top of
-- postgres-functions.ts. Returns the relay-wide {messages, bytes}, exact when the lock is exclusive.
CREATE FUNCTION ${s}.lock_batch(ops jsonb, q double precision[]) RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  adding double precision;
  expiring double precision;
  st bigint[] := '{0, 0}';
  one text;
  held double precision;
  written text[];
  published text[];
BEGIN
  SELECT sum((o->>'bytes')::double precision), max((o->>'now')::double precision),
         array_agg(coalesce(o->>'mailbox', o->>'agent'))
  INTO adding, expiring, written FROM jsonb_array_elements(ops) AS o;
  SELECT array_agg(DISTINCT b ORDER BY b) INTO published
  FROM jsonb_array_elements(ops) AS o, jsonb_array_elements_text(o->'mailboxes') AS b;
  -- Only a publish needs the totals (the cap); the others change them by what they remove.
  IF adding IS NOT NULL THEN
    SELECT ARRAY[coalesce(sum(messages), 0), coalesce(sum(bytes), 0)]::bigint[] INTO st
    FROM ${s}.relay_totals;
    -- PROFILE §9 relay-wide cap. Writers add side by side while the relay holds under half its
    -- cap and each adds under 1/64 of it; otherwise they take turns, each seeing every stored
    -- byte. Exact with up to 32 nodes: once past half, only batches already running add
    -- without a turn, each under 1/64.
    IF 2 * (st[2] + adding) > q[5] OR 64 * adding > q[5] THEN
      PERFORM pg_advisory_xact_lock(${lock});
      SELECT ARRAY[coalesce(sum(messages), 0), coalesce(sum(bytes), 0)]::bigint[] INTO st
      FROM ${s}.relay_totals;
    ELSE
      PERFORM pg_advisory_xact_lock_shared(${lock});
    END IF;
  END IF;
  -- Each client address bucket's share alike (its bytes striped as relay_totals), in order.
  FOR one, adding IN SELECT o->>'bucket', sum((o->>'bytes')::double precision)
                   FROM jsonb_array_elements(ops) AS o WHERE o->>'bucket' IS NOT NULL
                   GROUP BY 1 ORDER BY 1 LOOP
    held := (SELECT coalesce(sum(bytes), 0) FROM ${s}.buckets WHERE bucket = one);
    IF 2 * (held + adding) > q[6] OR 64 * adding > q[6] THEN
      PERFORM pg_advisory_xact_lock(${bucketLock('one')});
    ELSE
      PERFORM pg_advisory_xact_lock_shared(${bucketLock('one')});
    END IF;
  END LOOP;
  -- A publish's mailbox without a row gets one first (else two nodes would both find it empty).
  INSERT INTO ${s}.mailboxes (agent, state)
  SELECT b, 'none' FROM unnest(published) AS b ON CONFLICT DO NOTHING;
  IF expiring IS NOT NULL THEN
    written := written || ARRAY(SELECT DISTINCT e.mailbox FROM ${s}.messages m
                                JOIN ${s}.entries e ON e.message_ref = m.id
                                WHERE m.expires_at <= expiring);
  END IF;
  PERFORM 1 FROM ${s}.mailboxes WHERE agent = ANY (published || written) ORDER BY agent FOR UPDATE;
  RETURN st;
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
  -- PROFILE §9: a write is answered once durable, whatever the server's default (a COMMIT
  -- waits for its WAL flush unless synchronous_commit is off; stronger settings are kept).
  IF current_setting('synchronous_commit') = 'off' THEN
    PERFORM set_config('synchronous_commit', 'local', true);
  END IF;
  st := ${s}.lock_batch(ops, q);
  st0 := st;
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
        -- Readiness (checkWritable): the stripe's write below is the write it proves.
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
  -- Every batch writes its stripe once (the benchmark counts batches by it), last: a stripe's
  -- lock is held only while committing.
  INSERT INTO ${s}.relay_totals AS t (stripe, messages, bytes)
  VALUES (${stripe}, st[1] - st0[1], st[2] - st0[2])
  ON CONFLICT (stripe) DO UPDATE
  SET messages = t.messages + EXCLUDED.messages, bytes = t.bytes + EXCLUDED.bytes;
  RETURN to_jsonb(outcomes);
END
$fn$;

-- A bucket's bytes go with its messages (charged by publish), taken off this session's stripe.
-- A bucket holding nothing keeps no rows (its hash goes too, PROFILE §9) when no publish of it
-- is running (its lock free now; else a later release drops them).
CREATE FUNCTION ${s}.release_buckets() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ${s}.buckets AS b (bucket, stripe, bytes)
  SELECT bucket, ${stripe}, -sum(bytes) FROM gone WHERE bucket IS NOT NULL GROUP BY bucket ORDER BY 1
  ON CONFLICT (bucket, stripe) DO UPDATE SET bytes = b.bytes + EXCLUDED.bytes;
  DELETE FROM ${s}.buckets x WHERE x.bucket IN (
    SELECT g.bucket FROM gone g WHERE g.bucket IS NOT NULL GROUP BY g.bucket
    HAVING (SELECT sum(bytes) FROM ${s}.buckets WHERE bucket = g.bucket) = 0
      AND pg_try_advisory_xact_lock(${bucketLock('g.bucket')}));
  RETURN NULL;
END
$fn$;
CREATE TRIGGER messages_release AFTER DELETE ON ${s}.messages REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.release_buckets();
`
}
