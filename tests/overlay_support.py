"""Shared helpers for the store / gates / CLI tests: small skills built in memory."""

from __future__ import annotations

from overlay_kit.skill import parse_skill

MAIL_BODY = """# Mail triage

Sort the inbox.

## Triage

Label urgent mail first.

## Replies

Draft replies; never send without asking.
"""


def make_skill(name: str = "mail", *, body: str = MAIL_BODY, tools=("search_mail", "draft_reply", "send_email",
                                                                        "archive_thread"),
               permissions=(), version: str | None = "1.0"):
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
