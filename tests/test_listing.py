"""Issue 42: listings that page. `Store.iter_deltas` is `search`'s rows in the order they were written (rowid),
read a page at a time; `overlay-kit deltas` writes each delta as it is read, and `--limit N` / `--after ID` page
through it (keyset paging)."""

from __future__ import annotations

import io
import json
import sys

import pytest
from cli_fixtures import run
from overlay_support import UNTRUSTED, learn_one, make_skill, sql_shell

from overlay_kit.cli import effective_diff, main
from overlay_kit.skill import find_skill
from overlay_kit.store import Store, StoreError

MAIL, NOTES = make_skill(), make_skill("notes")
FILTERS = [
    {},
    {"skill": "mail"},
    {"status": "active"},
    {"skill": "mail", "status": ("staged", "quarantined")},
    {"status": "archived"},
    {"include_superseded": True},
    {"skill": "notes", "status": "active"},
]


@pytest.fixture
def db(tmp_path):
    """Deltas of two skills, written interleaved: active, quarantined, archived (reverted) and superseded ones."""
    path = tmp_path / "o.db"
    with Store.open(path, auto_approve=True) as s:
        ids = []
        for i in range(14):
            ids.append(learn_one(s, f"Keep replies to {i + 1} lines.", skill=NOTES if i % 3 == 0 else MAIL))
            if i % 5 == 4:
                learn_one(s, f"Quote message {i} in full.", source=UNTRUSTED, approve=False)
        s.revert(ids[2])
        s.revert(ids[7])
        s.supersede([ids[4]], ids[5], who="user")
    return path


def written(s: Store) -> list[str]:
    return [i for (i,) in s.conn.execute("SELECT id FROM skill_deltas ORDER BY rowid")]


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "none")
def test_iter_deltas_is_search_in_the_order_written(db, filters, monkeypatch):
    monkeypatch.setattr(Store, "_PAGE", 3)  # several pages even here
    with Store.open(db) as s:
        want = s.search(**filters)
        got = list(s.iter_deltas(**filters))
        order = written(s)
    assert want and sorted(got, key=lambda d: d.sort_key) == want
    assert [d.id for d in got] == [i for i in order if i in {d.id for d in want}]


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 100])
def test_paging_walks_every_row_exactly_once(db, limit, monkeypatch):
    monkeypatch.setattr(Store, "_PAGE", 3)
    with Store.open(db) as s:
        whole = [d.id for d in s.iter_deltas(include_superseded=True)]
        walked, after = [], None
        while True:
            page = [d.id for d in s.iter_deltas(include_superseded=True, after=after, limit=limit)]
            assert len(page) <= limit
            if not page:
                break
            walked += page
            after = page[-1]
    assert len(whole) > 10 and walked == whole


def test_rows_left_out_do_not_stop_the_walk(db, monkeypatch):
    """Four consecutive rows changed outside overlay_kit (their seals fail): whole pages of them are left out,
    each noted (once, however often it is read), and the walk goes on past them."""
    monkeypatch.setattr(Store, "_PAGE", 2)
    with Store.open(db) as s:
        order = [d.id for d in s.iter_deltas(status="active")]
    hit = order[3:7]
    sql_shell(
        db,
        f"UPDATE skill_deltas SET success_count = 7, attempt_count = 9 WHERE id IN ({', '.join(repr(i) for i in hit)})",
    )
    with Store.open(db) as s:
        got = [d.id for d in s.iter_deltas(status="active")]
        paged = [d.id for d in s.iter_deltas(status="active", after=order[1], limit=3)]
        notes = list(s.integrity_notes)
    assert got == [i for i in order if i not in hit] and paged == [order[2], *order[7:9]]
    assert sorted(n.split(":")[0] for n in notes if "seal does not verify" in n) == sorted(f"delta {i}" for i in hit)


def test_bad_paging_arguments_raise_before_any_row_is_read(db):
    with Store.open(db) as s:
        with pytest.raises(StoreError, match="after: no delta with id 'delta_nope'"):
            s.iter_deltas(after="delta_nope")  # not iterated: the call itself raises
        for bad in (-1, True, "3", 1.5):
            with pytest.raises(StoreError, match="limit: a whole number"):
                s.iter_deltas(limit=bad)
        assert list(s.iter_deltas(limit=0)) == []


# -------------------------------------------------------------------------------------------- the command


def unpaged(db, which, skill=None, **extra) -> str:
    """What `_emit_json` writes for the whole listing: the format before streaming, byte for byte."""
    from overlay_kit.cli import DELTA_FILTERS

    with Store.open(db) as s:
        rows = [d.to_dict() for d in s.iter_deltas(skill, status=DELTA_FILTERS[which])]
        data = {"db": s.path, "skill": skill, "filter": which, "deltas": rows} | extra
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(
    "argv,which,skill",
    [
        ([], "active", None),
        (["mail", "--all"], "all", "mail"),
        (["--orphaned"], "orphaned", None),
        (["notes", "--archived"], "archived", "notes"),
    ],
)
def test_deltas_json_streamed_is_the_unpaged_listing(capsys, db, argv, which, skill):
    code, out, _ = run(capsys, "deltas", *argv, "--db", db, "--json")
    assert code == 0 and out == unpaged(db, which, skill)
    assert len(json.loads(out)["deltas"]) == len(json.loads(unpaged(db, which, skill))["deltas"])


def test_deltas_diff_json_streamed_is_the_unpaged_listing(capsys, tmp_path, skill_dir):
    db = tmp_path / "d.db"
    with Store.open(db, auto_approve=True) as s:
        learn_one(s, "Keep replies short.", skill=find_skill(str(skill_dir)))
        diff = effective_diff(find_skill(str(skill_dir)), s)
    code, out, _ = run(capsys, "deltas", skill_dir, "--diff", "--db", db, "--json")
    assert code == 0 and diff and out == unpaged(db, "active", "mail", diff=diff)


def test_each_delta_is_written_before_the_next_page_is_read(db, monkeypatch):
    monkeypatch.setattr(Store, "_PAGE", 2)
    buf, seen = io.StringIO(), []
    real = Store._rows

    def spy(self, tail, args=()):
        if "json_each" in tail and "rowid" in tail:  # a page of the listing
            seen.append(buf.getvalue())
        return real(self, tail, args)

    monkeypatch.setattr(Store, "_rows", spy)
    monkeypatch.setattr(sys, "stdout", buf)
    assert main(["deltas", "--all", "--db", str(db), "--json"]) == 0
    ids = [d["id"] for d in json.loads(buf.getvalue())["deltas"]]
    assert len(seen) == (len(ids) + 1) // 2
    for k, before in enumerate(seen[1:], 1):  # when page k is read, page k - 1 is out already
        assert all(i in before for i in ids[2 * k - 2 : 2 * k]) and ids[2 * k] not in before


@pytest.mark.parametrize("form", ["json", "text"])
def test_paging_from_the_command_line_walks_every_row_once(capsys, db, form):
    flags = ["--all", "--db", db] + (["--json"] if form == "json" else [])
    code, out, _ = run(capsys, "deltas", *flags)
    whole = (
        [d["id"] for d in json.loads(out)["deltas"]]
        if form == "json"
        else [line.split()[0] for line in out.splitlines() if line.startswith("delta_")]
    )
    walked, after = [], []
    while True:
        code, out, _ = run(capsys, "deltas", *flags, "--limit", 4, *after)
        assert code == 0
        if form == "json":
            data = json.loads(out)
            walked += [d["id"] for d in data["deltas"]]
            nxt = data["next"]
        else:
            walked += [line.split()[0] for line in out.splitlines() if line.startswith("delta_")]
            last = out.splitlines()[-1]
            nxt = last.removeprefix("(more follow: --after ").removesuffix(")") if last.startswith("(more") else None
        if nxt is None:
            break
        assert nxt == walked[-1]
        after = ["--after", nxt]
    assert len(whole) > 8 and walked == whole


def test_the_last_page_says_so(capsys, db):
    with Store.open(db) as s:
        last = [d.id for d in s.iter_deltas()][-1]
    code, out, _ = run(capsys, "deltas", "--db", db, "--after", last)
    assert code == 0 and out == f"no active deltas after {last}\n"
    code, out, _ = run(capsys, "deltas", "--db", db, "--after", last, "--limit", 2, "--json")
    assert code == 0 and json.loads(out)["deltas"] == [] and json.loads(out)["next"] is None


@pytest.mark.parametrize("bad", ["0", "-2", "x", "1.5", ""])
def test_a_bad_limit_is_a_usage_error_naming_it(capsys, db, bad):
    with pytest.raises(SystemExit) as exit_:
        main(["deltas", "--db", str(db), "--limit", bad])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    assert "argument --limit: a whole number ≥ 1, not " + repr(bad) in err


@pytest.mark.parametrize("form", ["json", "text"])
def test_an_unknown_after_id_is_an_error_naming_it_and_nothing_is_written(capsys, db, form):
    code, out, err = run(capsys, "deltas", "--db", db, "--after", "delta_nope", *(["--json"] if form == "json" else []))
    assert code == 1 and out == "" and "no delta with id 'delta_nope'" in err
    if form == "json":
        assert json.loads(err)["error"]["type"] == "StoreError"


def test_help_says_the_order(capsys):
    with pytest.raises(SystemExit):
        main(["deltas", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "in the order they were written" in text and "rowid" in text and "--after ID" in text
