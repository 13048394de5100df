"""PostgreSQL persistence: the library's own, with each append one statement run by the server.

The library serializes appends with the log table's EXCLUSIVE lock, held through the commit,
so that notification ids follow commit order and readers tailing the log never pass over an
event that commits late. Its way sends the statements from the client: BEGIN, the lock, the
INSERT, then, once the replica has read the new ids back, COMMIT. The lock is held across
that last round trip, so every append waits on the slowest client's Python: with 8 clients
on one replica, the database's backends sat "idle in transaction" after their INSERT, lock
held, for longer than they waited on their WAL flush.

Here an append is one call of a PL/pgSQL function (`APPEND_FUNCTION`, created with the
tables, see infra.pg_schema) in the pool's autocommit mode: it takes the same lock, notifies
the same channel and inserts, and the server commits when it returns, so the lock is released
without waiting on the client. (The library's own function, `POSTGRES_ENABLE_DB_FUNCTIONS`,
takes no lock.) A unique violation (the stream moved since it was read) is the library's
IntegrityError, as before. So is an event whose stream lacks the version before it
(`VersionGap`, raised as `GAP_SQLSTATE`): a replica that decided on a cached copy of a
stream whose newest event a failover lost would otherwise append on top of the hole, as
the version it takes is free.

The same call moves the log's head (ledger.log_head) under the same lock: it chains the new
events onto the head's tip (`link`, the same sum as ledger.chain.link, in SQL) and stores
the new position and tip. Signing needs the store's secret, which never reaches the
database: the appending process signs the head right after its call returns (one more
short statement, committed without waiting for the disk: a signature lost in a crash is
made again by the next append). It signs only a head that extends the last signed one,
checked from the events between them, so a head moved by anyone else is never signed.
So the signed head may lag the log by the appends still signing: a verify reports those
events as not yet signed, and cannot see them deleted (ledger.log_head).

A head starts over the whole log only while none was ever signed: the first signature also
writes a row in `BEGAN_TABLE`, and from then on a head row deleted, or its signature
cleared, is kept as evidence (never moved or signed again), not started over a cut log.
Chosen for a postgresql:// store by `infra.persistence`."""

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier

from planledger.infra import pg_connect
from planledger.ledger.answers import Answer, micros
from planledger.ledger.chain import GENESIS, link
from planledger.ledger.log_head import SignedHead, head_mac, signed_by
from planledger.ledger.store import VersionGap

# A new name for a new shape (it answers the head, writes idempotent answers, and refuses
# a version gap): a schema made before gets this one beside its old functions at the next
# `db init` or start (infra.pg_schema); replicas still running the old code keep calling
# theirs.
APPEND_FUNCTION = "planledger_append_gapless"
# The function's argument types, as `to_regprocedure` names them (infra.pg_schema).
APPEND_ARGUMENTS = ("text[], bigint[], text[], bytea[], text, text[], text[], text[], "
                    "integer[], text[], bigint[], bigint")
ANSWERS_TABLE = "planledger_answers"
SIGN_FUNCTION = "planledger_sign_head"
SIGN_ARGUMENTS = "bigint, text, text"
HEAD_TABLE = "planledger_head"
# What the append function raises for a version gap: a class of our own, so no error of
# PostgreSQL's is taken for one.
GAP_SQLSTATE = "PLGAP"
BEGAN_TABLE = "planledger_head_began"  # one row once a head was signed: where it began

# ledger.chain.link, in SQL: sha256(tip \n position \n stream \n version \n topic \n
# sha256(state)), as hex.
_LINK = ("encode(sha256(convert_to({tip} || E'\\n' || {position} || E'\\n' || {stream} "
         "|| E'\\n' || {version} || E'\\n' || {topic} || E'\\n', 'UTF8') || "
         "sha256({state})), 'hex')")

_CREATE_HEAD = """
CREATE TABLE IF NOT EXISTS {schema}.{head} (
    id int PRIMARY KEY CHECK (id = 1),
    position bigint NOT NULL, tip text NOT NULL,
    signed_position bigint NOT NULL, signed_tip text NOT NULL, mac text)
"""

_CREATE_BEGAN = """
CREATE TABLE IF NOT EXISTS {schema}.{began} (
    id int PRIMARY KEY CHECK (id = 1), position bigint NOT NULL)
"""

_CREATE_ANSWERS = """
CREATE TABLE IF NOT EXISTS {schema}.{answers} (
    key text PRIMARY KEY, scope text, request text NOT NULL, status integer NOT NULL,
    body text NOT NULL, recorded_at bigint NOT NULL)
"""

_CREATE_ANSWERS_INDEX = """
CREATE INDEX IF NOT EXISTS {index} ON {schema}.{answers} (recorded_at)
"""

# Idempotent answers (ledger.answers), in the append's own transaction: expired ones are
# dropped first (an index range, empty but for the first write after one expired), then a
# key still taken fails the whole call as a unique violation. Deletes come before inserts
# in every caller, so two answer writes never wait on each other in a cycle; an append with
# events writes its answers under the log's lock, one with none takes no lock.
_KEEP_ANSWERS = """
    IF cardinality(a_keys) > 0 THEN
        IF a_drops_before IS NOT NULL THEN
            DELETE FROM {schema}.{answers} WHERE recorded_at < a_drops_before;
        END IF;
        INSERT INTO {schema}.{answers} (key, scope, request, status, body, recorded_at)
        SELECT * FROM unnest(a_keys, a_scopes, a_requests, a_statuses, a_bodies, a_times);
    END IF;
"""

_CREATE = """
CREATE OR REPLACE FUNCTION {schema}.{function}(
    ids text[], versions bigint[], topics text[], states bytea[], lock_wait text,
    a_keys text[], a_scopes text[], a_requests text[], a_statuses integer[],
    a_bodies text[], a_times bigint[], a_drops_before bigint)
RETURNS TABLE(appended bigint, was_position bigint, was_tip text, now_position bigint,
              now_tip text, sig_position bigint, sig_tip text, sig_mac text)
LANGUAGE plpgsql AS $body$
DECLARE
    new_ids bigint[];
    kept record;
    gap record;
    e record;
    v_last bigint := 0;
    v_tip text := '';
BEGIN
    IF cardinality(ids) = 0 THEN  -- answers alone: no event, so no lock and no head
        {keep_answers}
        RETURN;
    END IF;
    PERFORM set_config('lock_timeout', lock_wait, true);
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    -- Each stream's first version here must follow one stored (versions start at 1):
    -- under the lock, so the version before cannot go meanwhile.
    SELECT f.i, f.v INTO gap
    FROM (SELECT u.i, min(u.v) AS v FROM unnest(ids, versions) AS u(i, v) GROUP BY u.i) f
    WHERE f.v > 1 AND NOT EXISTS (
        SELECT 1 FROM {schema}.{table} l
        WHERE l.originator_id = f.i AND l.originator_version = f.v - 1)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '{gap_sqlstate}',
            MESSAGE = format('version gap: stream %s has no version %s, so version %s '
                             'is refused', gap.i, gap.v - 1, gap.v);
    END IF;
    NOTIFY {channel};
    WITH inserted AS (
        INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)
        SELECT i, v, t, s
        FROM unnest(ids, versions, topics, states) WITH ORDINALITY AS x(i, v, t, s, n)
        ORDER BY n  -- notification ids in the order of the events given
        RETURNING {table}.notification_id AS nid)
    SELECT array_agg(inserted.nid ORDER BY inserted.nid) INTO new_ids FROM inserted;
    {keep_answers}
    SELECT h.position, h.tip, h.signed_position, h.signed_tip, h.mac INTO kept
    FROM {schema}.{head} h WHERE h.id = 1;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM {schema}.{began}) THEN  -- the head was deleted: evidence
            RETURN QUERY SELECT unnest(new_ids), NULL::bigint, NULL::text, NULL::bigint,
                                NULL::text, NULL::bigint, NULL::text, NULL::text;
            RETURN;
        END IF;
        -- a log from before heads: its head starts over all of it, once
        INSERT INTO {schema}.{head} VALUES (1, 0, '', 0, '', NULL);
        sig_position := 0; sig_tip := ''; sig_mac := NULL;
    ELSE
        v_last := kept.position; v_tip := kept.tip;
        sig_position := kept.signed_position; sig_tip := kept.signed_tip;
        sig_mac := kept.mac;
        IF kept.mac IS NULL AND EXISTS (SELECT 1 FROM {schema}.{began}) THEN
            sig_mac := '';  -- a signature cleared after one was made: no signature holds
        END IF;
    END IF;
    IF v_last >= new_ids[1] THEN  -- a head past this append: kept as evidence, not moved
        RETURN QUERY SELECT unnest(new_ids), NULL::bigint, NULL::text, NULL::bigint,
                            NULL::text, sig_position, sig_tip, sig_mac;
        RETURN;
    END IF;
    FOR e IN SELECT l.notification_id, l.originator_id, l.originator_version, l.topic, l.state
             FROM {schema}.{table} l
             WHERE l.notification_id > v_last AND l.notification_id < new_ids[1]
             ORDER BY l.notification_id LOOP  -- appended by a process that kept no head
        v_tip := {link_row};
        v_last := e.notification_id;
    END LOOP;
    was_position := v_last; was_tip := v_tip;
    FOR k IN 1 .. array_length(new_ids, 1) LOOP
        v_tip := {link_new};
    END LOOP;
    v_last := new_ids[array_length(new_ids, 1)];
    UPDATE {schema}.{head} SET position = v_last, tip = v_tip WHERE id = 1;
    RETURN QUERY SELECT unnest(new_ids), was_position, was_tip, v_last, v_tip,
                        sig_position, sig_tip, sig_mac;
END;
$body$
"""

_CREATE_SIGN = """
CREATE OR REPLACE FUNCTION {schema}.{function}(p_position bigint, p_tip text, p_mac text)
RETURNS void LANGUAGE plpgsql AS $body$
BEGIN
    -- A signature lost in a crash is made again by the next append: no wait for the disk.
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE {schema}.{head} h SET signed_position = p_position, signed_tip = p_tip, mac = p_mac
    WHERE h.id = 1 AND (h.mac IS NULL OR h.signed_position < p_position);
    INSERT INTO {schema}.{began} SELECT 1, p_position
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.{began});
END;
$body$
"""


def no_key() -> bytes | None:
    return None


class AppendingRecorder(PostgresApplicationRecorder):
    """The library's recorder; `insert_events` calls the append function, then signs the
    head it moved with `head_key` (None: left unsigned, and a verify says so)."""

    head_key: Callable[[], bytes | None] = staticmethod(no_key)
    _key: bytes | None = None

    def __init__(self, datastore: PostgresDatastore, *,
                 events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        schema, function = Identifier(datastore.schema), Identifier(APPEND_FUNCTION)
        table, head = Identifier(self.events_table_name), Identifier(HEAD_TABLE)
        began = Identifier(BEGAN_TABLE)
        link_row = _LINK.format(tip="v_tip", position="e.notification_id",
                                stream="e.originator_id", version="e.originator_version",
                                topic="e.topic", state="e.state")
        link_new = _LINK.format(tip="v_tip", position="new_ids[k]", stream="ids[k]",
                                version="versions[k]", topic="topics[k]", state="states[k]")
        answers = Identifier(ANSWERS_TABLE)
        create = (_CREATE.replace("{link_row}", link_row).replace("{link_new}", link_new)
                  .replace("{keep_answers}", _KEEP_ANSWERS)
                  .replace("{gap_sqlstate}", GAP_SQLSTATE))
        self.sql_create_statements += [
            SQL(_CREATE_HEAD).format(schema=schema, head=head),
            SQL(_CREATE_BEGAN).format(schema=schema, began=began),
            SQL(_CREATE_ANSWERS).format(schema=schema, answers=answers),
            SQL(_CREATE_ANSWERS_INDEX).format(
                schema=schema, answers=answers, index=Identifier(f"{ANSWERS_TABLE}_recorded_at")),
            SQL(create).format(schema=schema, function=function, table=table, head=head,
                               began=began, answers=answers,
                               channel=Identifier(self.channel_name)),
            SQL(_CREATE_SIGN).format(schema=schema, function=Identifier(SIGN_FUNCTION),
                                     head=head, began=began),
        ]
        self.append_statement = SQL(
            "SELECT * FROM {}.{}(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)").format(
            schema, function)
        self.answer_statement = SQL(
            "SELECT key, scope, request, status, body, recorded_at FROM {}.{} "
            "WHERE key = %s").format(schema, answers)
        self.sign_statement = SQL("SELECT {}.{}(%s, %s, %s)").format(
            schema, Identifier(SIGN_FUNCTION))
        self.between_statement = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {}.{} WHERE notification_id > %s AND notification_id < %s "
            "ORDER BY notification_id").format(schema, table)
        self.head_statement = SQL(
            "SELECT signed_position, signed_tip, mac FROM {}.{} WHERE id = 1").format(
            schema, head)
        self.began_statement = SQL("SELECT EXISTS (SELECT 1 FROM {}.{}) AS began").format(
            schema, began)
        self.lock_wait = f"{datastore.lock_timeout}s"

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        answers: Sequence[Answer] = kwargs.get("answers", ())
        if not stored_events and not answers:
            return []
        columns = ([str(e.originator_id) for e in stored_events],
                   [e.originator_version for e in stored_events],
                   [e.topic for e in stored_events], [e.state for e in stored_events])
        with self.datastore.get_connection() as conn, conn.cursor() as cursor:
            try:
                cursor.execute(self.append_statement,
                               (*columns, self.lock_wait, *_answer_columns(answers)),
                               prepare=True)
            except psycopg.Error as error:
                if error.sqlstate == GAP_SQLSTATE:
                    raise VersionGap(str(error.diag.message_primary)) from error
                raise
            rows = cursor.fetchall()
            if not stored_events:
                return []
            # Committed already: a failure to sign leaves the head lagging, no more.
            with contextlib.suppress(psycopg.Error):
                self._sign(cursor, rows, stored_events)
            return [row["appended"] for row in rows]

    def _sign(self, cursor: Any, rows: list[Any], events: Sequence[StoredEvent]) -> None:
        """Sign the head the append moved, if it extends the last signed head: the events
        between them are read and chained here, never taken on the database's word."""
        key = self._key = self._key or self.head_key()  # derived once, when first there
        answer = rows[0]
        if key is None or answer["now_position"] is None:
            return
        signed = SignedHead(answer["sig_position"], answer["sig_tip"], answer["sig_mac"])
        if signed.mac is not None and not signed_by(signed, key):
            return  # a head forged or altered: kept as evidence
        position, tip = ((signed.position, signed.tip) if signed.mac is not None
                         else (0, GENESIS))
        first = rows[0]["appended"]
        if (position, tip) != (answer["was_position"], answer["was_tip"]):
            cursor.execute(self.between_statement, (position, first))
            for row in cursor.fetchall():
                tip = link(tip, row["notification_id"], row["originator_id"],
                           row["originator_version"], row["topic"], bytes(row["state"]))
            if tip != answer["was_tip"]:
                return
        for row, event in zip(rows, events, strict=True):
            tip = link(tip, row["appended"], str(event.originator_id),
                       event.originator_version, event.topic, event.state)
        if tip == answer["now_tip"]:
            cursor.execute(self.sign_statement, (answer["now_position"], tip,
                                                 head_mac(key, answer["now_position"], tip)))

    def select_answer(self, key: str) -> Answer | None:
        """The answer kept under `key` (ledger.answers.AnswerTable)."""
        with self.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(self.answer_statement, (key,), prepare=True)
            row = cursor.fetchone()
        return None if row is None else Answer.from_row(tuple(row.values()))

    def read_head(self) -> SignedHead | None:
        """The signed head as stored (None when the store keeps none yet)."""
        with self.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(self.head_statement)
            row = cursor.fetchone()
        if row is None:
            return None
        return SignedHead(row["signed_position"], row["signed_tip"], row["mac"])

    def head_began(self) -> bool:
        """Whether a head was ever signed here: the first signature writes a row in
        BEGAN_TABLE, which outlives a head deleted."""
        with self.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(self.began_statement)
            row = cursor.fetchone()
        return bool(row is not None and row["began"])


def _answer_columns(answers: Sequence[Answer]) -> tuple[Any, ...]:
    """The append function's answer arguments: a column each, and the expiry."""
    rows = [a.row() for a in answers]
    columns = tuple(list(column) for column in zip(*rows, strict=True)) or ([],) * 6
    expired = [a.drops_before for a in answers if a.drops_before is not None]
    return (*columns, micros(min(expired)) if expired else None)


class Factory(pg_connect.Factory):
    """The library's PostgreSQL factory with the appending recorder, connecting with every
    libpq parameter of `--db` (infra.pg_connect)."""

    application_recorder_class = AppendingRecorder
