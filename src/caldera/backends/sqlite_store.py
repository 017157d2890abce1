"""The embedded cluster's durable store: objects in the Kubernetes shape in one SQLite file (WAL).

Every write takes the next value of one global counter as the object's
resourceVersion (as etcd's revision does), so versions order all changes. The version is
kept beside the body and stamped into its metadata when it is read, so a body serialised
by the caller is stored as it is (`write`: many objects in one transaction, no second
serialisation). An
update or delete may name the version it read (`expect`): if the object changed
since, it raises Conflict and nothing is written (optimistic concurrency). Every
write is also appended to a change log, which `changes(since)` returns in order:
that is what watching is. Events (what `describe` shows) have their own table.
Connections are per thread; writes are serialised by SQLite.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caldera.core.errors import CalderaError

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS changes (
    rv INTEGER PRIMARY KEY, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    type TEXT NOT NULL, body TEXT
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, namespace TEXT NOT NULL,
    kind TEXT NOT NULL, object TEXT NOT NULL, node TEXT NOT NULL, reason TEXT NOT NULL, message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_object ON events (namespace, object);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('rv', 0);
"""

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# SQLite's primary result codes for a file that cannot be written (read-only, an I/O error, full, not openable).
_CANNOT_WRITE = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN}
EVENT_KEYS = ("id", "time", "namespace", "kind", "object", "node", "reason", "message")


class Conflict(CalderaError):
    """The object changed (or was created or deleted) since the version the writer read."""


class Unavailable(CalderaError):
    """The file cannot be written (disk full, read-only, an I/O error); the transaction left nothing."""


@dataclass(frozen=True, slots=True)
class Stored:
    kind: str
    namespace: str
    name: str
    rv: int
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Change:
    rv: int
    kind: str
    namespace: str
    name: str
    type: str  # ADDED | MODIFIED | DELETED
    body: dict[str, Any] | None


class SqliteStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._db().executescript(SCHEMA)  # idempotent; executescript commits on its own

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
            self._local.depth = 0
        return db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction; nested uses join the outer one."""
        db = self._db()
        if self._local.depth:
            self._local.depth += 1
            try:
                yield db
            finally:
                self._local.depth -= 1
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            self._local.depth = 1
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                # SQLite may have rolled back already (an I/O error), or kept the transaction open
                # (a COMMIT that failed for want of space): either way nothing of it stays.
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise
            finally:
                self._local.depth = 0
        except sqlite3.OperationalError as e:
            if (e.sqlite_errorcode & 0xFF) in _CANNOT_WRITE:
                raise Unavailable(f"cannot write {self.path}: {e}") from e
            raise

    def transaction(self) -> Any:
        """Group several writes into one commit (`with store.transaction(): ...`)."""
        return self._tx()

    # ------------------------------------------------------------ objects

    def put(self, kind: str, namespace: str, name: str, body: Mapping[str, Any], expect: int | None = None) -> int:
        """Create or update; `expect` 0 means "must not exist", a version means "must still be that version"."""
        with self._tx() as db:
            row = db.execute(
                "SELECT rv FROM objects WHERE kind=? AND namespace=? AND name=?", (kind, namespace, name)
            ).fetchone()
            current = row[0] if row else 0
            if expect is not None and expect != current:
                what = "already exists" if expect == 0 else ("does not exist" if current == 0 else "was modified")
                raise Conflict(f"{kind} {namespace}/{name} {what} (expected version {expect}, found {current})")
            return self.write([(kind, namespace, name, json.dumps(body, sort_keys=True))], [])

    def write(self, puts: Sequence[tuple[str, str, str, str]], deletes: Sequence[tuple[str, str, str]]) -> int:
        """Delete `deletes` (kind, namespace, name), then create or update `puts` (kind, namespace, name,
        the body as JSON text), all in one transaction; the last version it used."""
        with self._tx() as db:
            rv = int(db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()[0])
            changes: list[tuple[int, str, str, str, str, str | None]] = []
            for kind, namespace, name in deletes:
                gone = db.execute(
                    "DELETE FROM objects WHERE kind=? AND namespace=? AND name=?", (kind, namespace, name)
                ).rowcount
                if gone:
                    rv += 1
                    changes.append((rv, kind, namespace, name, DELETED, None))
            existing = _existing(db, [(kind, namespace, name) for kind, namespace, name, _ in puts])
            rows = []
            for kind, namespace, name, text in puts:
                rv += 1
                rows.append((kind, namespace, name, rv, text))
                kind_of_change = MODIFIED if (kind, namespace, name) in existing else ADDED
                existing.add((kind, namespace, name))  # put twice: the second one modifies the first
                changes.append((rv, kind, namespace, name, kind_of_change, text))
            db.executemany(
                "INSERT OR REPLACE INTO objects (kind, namespace, name, rv, body) VALUES (?, ?, ?, ?, ?)", rows
            )
            db.executemany(
                "INSERT INTO changes (rv, kind, namespace, name, type, body) VALUES (?, ?, ?, ?, ?, ?)", changes
            )
            db.execute("UPDATE meta SET value = ? WHERE key='rv'", (rv,))
            return rv

    def delete(self, kind: str, namespace: str, name: str, expect: int | None = None) -> bool:
        with self._tx() as db:
            row = db.execute(
                "SELECT rv FROM objects WHERE kind=? AND namespace=? AND name=?", (kind, namespace, name)
            ).fetchone()
            if row is None:
                if expect:
                    raise Conflict(f"{kind} {namespace}/{name} does not exist")
                return False
            if expect is not None and expect != row[0]:
                raise Conflict(f"{kind} {namespace}/{name} was modified (expected version {expect}, found {row[0]})")
            rv = self._next_rv(db)
            db.execute("DELETE FROM objects WHERE kind=? AND namespace=? AND name=?", (kind, namespace, name))
            db.execute(
                "INSERT INTO changes (rv, kind, namespace, name, type, body) VALUES (?, ?, ?, ?, ?, NULL)",
                (rv, kind, namespace, name, DELETED),
            )
            return True

    def get(self, kind: str, namespace: str, name: str) -> Stored | None:
        row = (
            self._db()
            .execute("SELECT rv, body FROM objects WHERE kind=? AND namespace=? AND name=?", (kind, namespace, name))
            .fetchone()
        )
        return None if row is None else Stored(kind, namespace, name, row[0], _load(row[1], row[0]))

    def list(self, kind: str, namespace: str | None = None) -> list[Stored]:
        if namespace is None:
            rows = self._db().execute(
                "SELECT namespace, name, rv, body FROM objects WHERE kind=? ORDER BY namespace, name", (kind,)
            )
        else:
            rows = self._db().execute(
                "SELECT namespace, name, rv, body FROM objects WHERE kind=? AND namespace=? ORDER BY name",
                (kind, namespace),
            )
        return [Stored(kind, ns, name, rv, _load(body, rv)) for ns, name, rv, body in rows.fetchall()]

    def changes(self, since: int, kind: str | None = None, limit: int = 1000) -> builtins.list[Change]:
        """Every write after version `since`, oldest first (a watch from `since`)."""
        sql = "SELECT rv, kind, namespace, name, type, body FROM changes WHERE rv > ?"
        args: list[Any] = [since]
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        rows = self._db().execute(sql + " ORDER BY rv LIMIT ?", (*args, limit)).fetchall()
        return [Change(rv, k, ns, n, t, _load(b, rv) if b else None) for rv, k, ns, n, t, b in rows]

    def latest(self) -> int:
        return int(self._db().execute("SELECT value FROM meta WHERE key='rv'").fetchone()[0])

    def compact(self, keep: int = 10_000) -> None:
        """Forget all but the last `keep` changes (a watcher further behind must list again)."""
        with self._tx() as db:
            db.execute("DELETE FROM changes WHERE rv <= (SELECT value FROM meta WHERE key='rv') - ?", (keep,))

    # ------------------------------------------------------------ events

    def add_event(self, time: float, namespace: str, kind: str, obj: str, node: str, reason: str, message: str) -> None:
        self.add_events([(time, namespace, kind, obj, node, reason, message)])

    def add_events(self, events: Sequence[tuple[float, str, str, str, str, str, str]]) -> None:
        """Events (time, namespace, kind, object, node, reason, message), in one transaction."""
        with self._tx() as db:
            db.executemany(
                "INSERT INTO events (time, namespace, kind, object, node, reason, message) VALUES (?, ?, ?, ?, ?, ?, ?)",
                events,
            )

    def events(
        self, namespace: str | None = None, objects: tuple[str, ...] = (), since: int = 0, kinds: tuple[str, ...] = ()
    ) -> builtins.list[dict[str, Any]]:
        """Events after id `since`, oldest first; only of `namespace`, `objects` and `kinds` when given."""
        sql = "SELECT id, time, namespace, kind, object, node, reason, message FROM events WHERE id > ?"
        args: list[Any] = [since]
        if namespace is not None:
            sql += " AND namespace = ?"
            args.append(namespace)
        for column, values in (("object", objects), ("kind", kinds)):
            if values:
                sql += f" AND {column} IN ({','.join('?' for _ in values)})"
                args.extend(values)
        rows = self._db().execute(sql + " ORDER BY id", args).fetchall()
        return [dict(zip(EVENT_KEYS, r, strict=True)) for r in rows]

    def recent_events(self, limit: int) -> builtins.list[dict[str, Any]]:
        """The last `limit` events, oldest first."""
        sql = "SELECT id, time, namespace, kind, object, node, reason, message FROM events ORDER BY id DESC LIMIT ?"
        rows = self._db().execute(sql, (limit,)).fetchall()
        return [dict(zip(EVENT_KEYS, r, strict=True)) for r in reversed(rows)]

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _next_rv(db: sqlite3.Connection) -> int:
        db.execute("UPDATE meta SET value = value + 1 WHERE key='rv'")
        return int(db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()[0])


def _load(text: str, rv: int) -> dict[str, Any]:
    """A stored body with its version in its metadata (as Kubernetes shows it)."""
    body: dict[str, Any] = json.loads(text)
    meta = body.get("metadata")
    body["metadata"] = {**meta, "resourceVersion": str(rv)} if isinstance(meta, dict) else {"resourceVersion": str(rv)}
    return body


_ROWS_PER_QUERY = 300  # (kind, namespace, name) triples per query: 900 parameters, below SQLite's old limit of 999


def _existing(db: sqlite3.Connection, idents: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """Which of `idents` (kind, namespace, name) are stored: a query per few hundred, not one each."""
    found: set[tuple[str, str, str]] = set()
    for i in range(0, len(idents), _ROWS_PER_QUERY):
        chunk = idents[i : i + _ROWS_PER_QUERY]
        values = ", ".join(["(?, ?, ?)"] * len(chunk))
        query = f"SELECT kind, namespace, name FROM objects WHERE (kind, namespace, name) IN (VALUES {values})"
        found.update(db.execute(query, [part for ident in chunk for part in ident]).fetchall())
    return found
