"""Crash and concurrency behaviour of the store: nothing lost, nothing half-written."""

import multiprocessing
import os
import random
import signal
import sqlite3
import time

from overlay_support import TRUSTED, make_skill

from overlay_kit import gates
from overlay_kit.grammar import validate_payload
from overlay_kit.store import MIGRATIONS, Store

FORK = multiprocessing.get_context("fork")
BATCH = 5


def _writer(path: str, tag: str, n: int, ready) -> None:
    skill = make_skill()
    with Store.open(path) as store:
        ready.set()
        for i in range(n):
            r = gates.learn(
                store, skill, "preference", {"body": f"{tag} lesson {i}"}, section="replies", provenance=TRUSTED
            )
            if r.delta is None:
                os._exit(3)
    os._exit(0)


def test_two_processes_writing_2000_each_lose_nothing(tmp_path):
    path = str(tmp_path / "c.db")
    Store.open(path).close()
    ready = [FORK.Event(), FORK.Event()]
    procs = [FORK.Process(target=_writer, args=(path, tag, 2000, ev)) for tag, ev in zip("AB", ready)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with Store.open(path) as s:
        bodies = {d.payload["body"] for d in s.search("mail")}
        assert bodies == {f"{t} lesson {i}" for t in "AB" for i in range(2000)}
        assert len(s.audit()) == 4000
        assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _batch_writer(path: str, ready) -> None:
    skill = make_skill()
    with Store.open(path) as store:
        i = 0
        while True:
            with store.transaction():
                for _ in range(BATCH):
                    gates.learn(
                        store,
                        skill,
                        "example",
                        {"input": f"in {os.getpid()}.{i}", "output": f"out {i}"},
                        section="replies",
                        provenance=TRUSTED,
                    )
                    i += 1
            ready.set()


ROUNDS = 20


def test_sigkill_mid_transaction_leaves_only_whole_deltas(tmp_path, rounds=ROUNDS):
    path = str(tmp_path / "k.db")
    Store.open(path).close()
    rng = random.Random(1234)
    total = 0
    for _ in range(rounds):
        ready = FORK.Event()
        proc = FORK.Process(target=_batch_writer, args=(path, ready))
        proc.start()
        assert ready.wait(30)
        time.sleep(rng.uniform(0, 0.05))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
        raw = sqlite3.connect(path)  # a plain client sees a sound file (WAL recovered on open)
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        raw.close()
        with Store.open(path) as s:
            rows = s.conn.execute("SELECT id, kind, payload FROM skill_deltas").fetchall()
            assert len(rows) % BATCH == 0 and len(rows) > total  # whole transactions only, and progress
            total = len(rows)
            deltas = s.search()
            assert len(deltas) == total  # every row reads back as a complete delta
            for d in deltas:
                validate_payload(d.kind, d.payload)
            assert len(s.audit()) == total  # each delta's audit row committed with it
    assert total >= rounds * BATCH


def _opener(path: str) -> None:
    for _ in range(3):
        Store.open(path).close()
    os._exit(0)


def test_processes_racing_to_create_a_database_migrate_it_once(tmp_path):
    for trial in range(5):
        path = str(tmp_path / f"race{trial}.db")
        procs = [FORK.Process(target=_opener, args=(path,)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * 4
        with Store.open(path) as s:
            assert len(s.schema_history()) == len(MIGRATIONS)
