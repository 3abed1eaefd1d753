"""Shared helpers for the store / gates / CLI tests: small skills built in memory."""

from __future__ import annotations

import yaml

from overlay_kit.skill import parse_skill
from overlay_kit.studies import rulefile

MAIL_BODY = """# Mail triage

Sort the inbox.

## Triage

Label urgent mail first.

## Replies

Draft replies; never send without asking.
"""


def make_skill(
    name: str = "mail",
    *,
    body: str = MAIL_BODY,
    tools=("search_mail", "draft_reply", "send_email", "archive_thread"),
    permissions=(),
    version: str | None = "1.0",
):
    """A valid Skill parsed from SKILL.md text (so it goes through the real loader)."""
    lines = ["---", f"name: {name}", "description: test skill", "metadata:", "  gaia:"]
    if version:
        lines.append(f"    version: '{version}'")
    lines.append(f"    tools: [{', '.join(tools)}]")
    if permissions:
        lines.append(f"    permissions: [{', '.join(permissions)}]")
    skill, problems = parse_skill("\n".join(lines) + "\n---\n" + body, None)
    assert not problems, problems
    return skill


TRUSTED = "user_instruction"
UNTRUSTED = "observed_content"


def rule_copy(name: str, tmp_path, **params) -> rulefile.RuleFile:
    """The committed rule file `name` with some params changed, as a copy under tmp_path: what each study's test
    uses to show that a modified rule changes its verdict."""
    doc = yaml.safe_load(rulefile.load(name).path.read_text(encoding="utf-8"))
    doc["params"] |= params
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return rulefile.load(path)


# ------------------------------------------------------------------ tamper at rest: what an attacker's shell does


def learn_one(store, body, source=TRUSTED, section="replies", approve=True, skill=None):
    """Teach one preference on the mail skill (`make_skill()`), approved unless asked not to; its id."""
    from overlay_kit import gates

    r = gates.learn(store, skill or make_skill(), "preference", {"body": body}, section=section, provenance=source)
    assert r.delta is not None, r.message
    if approve and r.delta.status != "active":
        store.approve(r.delta.id)
    return r.delta.id


def sql_shell(db, *statements, args=()):
    """What an attacker's sqlite3 shell does: plain SQL on the file, committed."""
    import sqlite3

    c = sqlite3.connect(db)
    for sql in statements:
        c.execute(sql, args) if args else c.execute(sql)
    c.commit()
    c.close()


def resolved_fresh(db, skill=None, **kw):
    """(effective text, applied ids, store notes) of a fresh open — a new process's view."""
    from overlay_kit.resolve import resolve
    from overlay_kit.store import Store

    with Store.open(db, **kw) as s:
        eff = resolve(skill or make_skill(), s, embedder=False)
        return eff.text, {d.id for d in eff.applied}, list(s.integrity_notes)
