"""overlay_kit.skill: the Agent Skills rules, GAIA's metadata.gaia, located errors, discovery."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import pytest

from overlay_kit.anchor import split_lines
from overlay_kit.skill import (
    MAX_SKILL_BYTES,
    Permission,
    Root,
    Skill,
    SkillError,
    SkillFormatError,
    SkillValidationError,
    check_skill,
    default_roots,
    discover,
    find_skill,
    load_skill,
    parse_skill,
)

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "datasets" / "skills"
BAD = REPO / "tests" / "fixtures" / "bad_skills"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "SKILL.md").is_file())


def skill_text(name="demo", description="Does a thing. Use when asked.", extra="", body="\n# Demo\n\nBody.\n"):
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def write_skill(root: Path, dirname: str, text: str | bytes) -> Path:
    (root / dirname).mkdir(parents=True, exist_ok=True)
    file = root / dirname / "SKILL.md"
    file.write_bytes(text if isinstance(text, bytes) else text.encode())
    return file


def problems_of(text: str) -> list:
    return parse_skill(text, None)[1]


# ------------------------------------------------------------------------------------------ examples


def test_there_are_at_least_eight_examples():
    assert len(EXAMPLE_NAMES) >= 8


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_loads_and_its_name_is_its_directory(name):
    skill = load_skill(EXAMPLES / name)
    assert skill.name == name
    assert skill.path == EXAMPLES / name / "SKILL.md"
    assert check_skill(EXAMPLES / name) == []
    text = (EXAMPLES / name / "SKILL.md").read_bytes().decode()
    assert text.endswith(skill.body)
    # body_start_line is the file line on which body line 1 sits
    assert "".join(split_lines(text)[skill.body_start_line - 1 :]) == skill.body


def test_triage_inbox_declares_read_and_write_tools_and_is_not_capability_bearing():
    skill = load_skill(EXAMPLES / "triage-inbox")
    assert {"search_inbox", "read_message", "triage_inbox", "pre_scan_inbox"} <= set(skill.tools)
    assert {
        "send_message",
        "trash_message",
        "archive_message",
        "forward_message",
        "schedule_send",
        "accept_invite",
        "decline_invite",
    } <= set(skill.tools)
    assert [str(p) for p in skill.permissions] == ["network:read", "mcp:connect"]
    assert not skill.capability_bearing
    assert skill.version == "1.2.0"
    assert skill.security_tier == "community"
    assert "## Escalation\n" in skill.body and "## Drafting replies\n" in skill.body


def test_web_research_reads_the_network_with_two_tools_and_a_top_level_version():
    skill = load_skill(EXAMPLES / "web-research")
    assert skill.permissions == (Permission("network", "read"),)
    assert skill.tools == ("search_web", "fetch_page")
    assert skill.version == "1.0.0"
    assert not skill.capability_bearing


def test_file_organizer_is_capability_bearing_with_a_scoped_write():
    skill = load_skill(EXAMPLES / "file-organizer")
    assert Permission("filesystem", "write", "./out/**") in skill.permissions
    assert skill.capability_bearing


def test_bare_standard_skill_is_instruction_only_and_experimental():
    skill = load_skill(EXAMPLES / "commit-message")
    assert set(skill.frontmatter) == {"name", "description"}
    assert skill.instruction_only and not skill.capability_bearing
    assert skill.security_tier == "experimental"
    assert skill.version is None and skill.tools == () and skill.permissions == ()


def test_claude_style_skill_keeps_allowed_tools_with_parenthesised_arguments():
    skill = load_skill(EXAMPLES / "pdf-form-filler")
    assert skill.allowed_tools == ("Read", "Write", "Bash(python scripts/fill_form.py:*)")
    assert skill.license == "Apache-2.0" and skill.compatibility.startswith("Claude Code")
    assert skill.instruction_only  # allowed-tools is not a GAIA permission


def test_crlf_skill_keeps_its_line_endings_in_the_body():
    raw = (EXAMPLES / "meeting-notes" / "SKILL.md").read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n") > 10  # the checkout kept CRLF (.gitattributes -text)
    skill = load_skill(EXAMPLES / "meeting-notes")
    assert "\r\n" in skill.body and "\n" not in skill.body.replace("\r\n", "")
    assert skill.body_start_line == 9


def test_skill_is_frozen_and_hashable():
    skill = load_skill(EXAMPLES / "web-research")
    with pytest.raises(dataclasses.FrozenInstanceError):
        skill.name = "other"  # type: ignore[misc]
    assert hash(skill) == hash(load_skill(EXAMPLES / "web-research"))


# --------------------------------------------------------------------------------------- field rules


@pytest.mark.parametrize("name", ["a", "a-b", "web-research", "x9", "9x", "a" * 64, "a-1-b-2"])
def test_valid_names(name):
    assert problems_of(skill_text(name=name)) == []


@pytest.mark.parametrize(
    "name", ["a" * 65, "-a", "a-", "a--b", "Web", "a_b", "a b", "café", '"a\\n"', "''", "123", "[a]"]
)
def test_invalid_names_are_located_on_the_name_line(name):
    problems = problems_of(skill_text(name=name))
    assert [(p.field, p.line) for p in problems] == [("name", 2)]


def test_name_must_equal_the_directory(tmp_path):
    file = write_skill(tmp_path, "right-dir", skill_text(name="wrong-name"))
    with pytest.raises(SkillValidationError) as exc:
        load_skill(file)
    assert exc.value.field == "name" and exc.value.line == 2 and "right-dir" in exc.value.message
    assert load_skill(write_skill(tmp_path, "wrong-name", skill_text(name="wrong-name"))).name == "wrong-name"


@pytest.mark.parametrize(
    "description,ok",
    [
        ("x", True),
        ("d" * 1024, True),
        ("d" * 1025, False),
        ("'   '", False),
        ("''", False),
        ("42", False),
        ("[a, b]", False),
    ],
)
def test_description_is_1_to_1024_characters(description, ok):
    problems = problems_of(skill_text(description=description))
    assert (problems == []) is ok
    if not ok:
        assert [(p.field, p.line) for p in problems] == [("description", 3)]


def test_missing_required_fields_are_all_reported():
    problems = problems_of("---\nlicense: MIT\n---\nBody\n")
    assert {p.field for p in problems} == {"name", "description"}


@pytest.mark.parametrize(
    "extra,field",
    [
        ("license: [MIT]\n", "license"),
        ("compatibility: " + "c" * 501 + "\n", "compatibility"),
        ("compatibility: 3\n", "compatibility"),
        ("allowed-tools: {Read: yes}\n", "allowed-tools"),
        ("metadata: [gaia]\n", "metadata"),
        ("metadata:\n  gaia: []\n", "metadata.gaia"),
        ("metadata:\n  gaia: text\n", "metadata.gaia"),
        ("metadata:\n  gaia:\n    permissions: network:read\n", "metadata.gaia.permissions"),
        ("metadata:\n  gaia:\n    permissions: [network]\n", "metadata.gaia.permissions"),
        ("metadata:\n  gaia:\n    permissions: ['network:read\\n']\n", "metadata.gaia.permissions"),
        ("metadata:\n  gaia:\n    permissions: [gpu:use]\n", "metadata.gaia.permissions"),
        ("metadata:\n  gaia:\n    security_tier: trusted\n", "metadata.gaia.security_tier"),
        ("metadata:\n  gaia:\n    tools: search_web\n", "metadata.gaia.tools"),
        ("metadata:\n  gaia:\n    tools: [{description: no name}]\n", "metadata.gaia.tools"),
        ("metadata:\n  gaia:\n    tools: ['two words']\n", "metadata.gaia.tools"),
        ("metadata:\n  gaia:\n    version: [1, 2]\n", "metadata.gaia.version"),
    ],
)
def test_optional_field_rules(extra, field):
    problems = problems_of(skill_text(extra=extra))
    assert [p.field for p in problems] == [field]
    assert problems[0].line >= 4  # located on the offending key, below name and description


def test_compatibility_of_500_characters_is_allowed():
    assert problems_of(skill_text(extra="compatibility: " + "c" * 500 + "\n")) == []


def test_each_bad_list_item_is_located_on_its_own_line():
    text = skill_text(
        extra="metadata:\n  gaia:\n    permissions:\n      - network:read\n      - bogus\n"
        "      - mcp:connect\n      - nope:x\n"
    )
    assert [p.line for p in problems_of(text)] == [8, 10]


def test_version_is_kept_exactly_as_written():
    skill, _ = parse_skill(skill_text(extra="metadata:\n  gaia:\n    version: 1.10\n"))
    assert skill.version == "1.10"  # not the float 1.1
    skill, _ = parse_skill(skill_text(extra="version: 2\n"))
    assert skill.version == "2"
    skill, _ = parse_skill(skill_text(extra="version: 1.0.0\nmetadata:\n  gaia:\n    version: 1.0.0\n"))
    assert skill.version == "1.0.0"


def test_security_tier_defaults_to_experimental_and_accepts_the_three_tiers():
    for tier in ("verified", "community", "experimental"):
        skill, _ = parse_skill(skill_text(extra=f"metadata:\n  gaia:\n    security_tier: {tier}\n"))
        assert skill.security_tier == tier
    assert parse_skill(skill_text())[0].security_tier == "experimental"


@pytest.mark.parametrize(
    "perm,bearing",
    [
        ("filesystem:write:./out/**", True),
        ("filesystem:read", True),
        ("shell:exec", True),
        ("database:write", True),
        ("desktop:control", True),
        ("env:read", True),
        ("network:read", False),
        ("mcp:connect", False),
    ],
)
def test_capability_bearing_is_any_filesystem_shell_database_desktop_env_permission(perm, bearing):
    skill, problems = parse_skill(skill_text(extra=f"metadata:\n  gaia:\n    permissions: ['{perm}']\n"))
    assert problems == []
    assert skill.capability_bearing is bearing
    assert str(Permission.parse(perm)) == perm


def test_permission_parse_refuses_malformed_text():
    for text in ["network", "network:", ":read", "Network:read", "network:read:", "network:read:a b", 3]:
        with pytest.raises(ValueError):
            Permission.parse(text)


def test_tool_declarations_may_be_names_or_mappings():
    skill, _ = parse_skill(
        skill_text(
            extra="metadata:\n  gaia:\n    tools:\n      - search_web\n      - {name: fetch_page, description: Fetch}\n"
        )
    )
    assert skill.tools == ("search_web", "fetch_page")


def test_unknown_top_level_fields_are_kept_not_refused():
    skill, problems = parse_skill(skill_text(extra="disable-model-invocation: true\n"))
    assert problems == [] and skill.frontmatter["disable-model-invocation"] is True


def test_empty_frontmatter_reports_both_required_fields():
    assert {p.field for p in problems_of("---\n---\nBody\n")} == {"name", "description"}


def test_a_bom_is_dropped_and_the_body_kept_exactly(tmp_path):
    file = write_skill(tmp_path, "demo", "\ufeff" + skill_text(body="\n# Demo  \n\ttab\n"))
    assert load_skill(file).body == "\n# Demo  \n\ttab\n"


# ------------------------------------------------------------------------------------- bad input

# every fixture under tests/fixtures/bad_skills: (error type, line, field)
BAD_CASES = {
    "malformed-yaml": (SkillFormatError, 4, None),
    "missing-description": (SkillValidationError, 1, "description"),
    "list-frontmatter": (SkillFormatError, 2, None),
    "name-mismatch": (SkillValidationError, 2, "name"),
    "bad--name": (SkillValidationError, 2, "name"),
    "no-frontmatter": (SkillFormatError, 1, None),
    "unclosed-frontmatter": (SkillFormatError, 1, None),
    "duplicate-key": (SkillFormatError, 5, None),
    "bad-permission": (SkillValidationError, 8, "metadata.gaia.permissions"),
    "bad-tier": (SkillValidationError, 6, "metadata.gaia.security_tier"),
    "long-description": (SkillValidationError, 3, "description"),
    "bad-date": (SkillFormatError, 4, None),
    "version-conflict": (SkillValidationError, 4, "version"),
    "duplicate-tool": (SkillValidationError, 8, "metadata.gaia.tools"),
    "non-utf8": (SkillFormatError, 6, None),
    "binary": (SkillFormatError, 3, None),
}


def test_every_bad_fixture_has_an_expectation():
    assert sorted(p.name for p in BAD.iterdir()) == sorted(BAD_CASES)


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_input_raises_a_typed_error_naming_path_and_line(name):
    kind, line, field = BAD_CASES[name]
    file = BAD / name / "SKILL.md"
    with pytest.raises(kind) as exc:
        load_skill(BAD / name)
    err = exc.value
    assert (err.path, err.line, err.field) == (str(file), line, field)
    assert str(err).startswith(f"{file}:{line}")
    found = check_skill(BAD / name)
    assert found and all(isinstance(e, SkillError) and e.line for e in found)
    assert found[0].line == line


def test_a_50_mb_file_is_refused_without_reading_it_all(tmp_path):
    file = tmp_path / "huge" / "SKILL.md"
    file.parent.mkdir()
    line = "word " * 19 + "\n"  # 96 bytes a line
    with open(file, "w") as fh:
        fh.write(skill_text(name="huge"))
        fh.write(line * (50 * 1024 * 1024 // len(line)))
    assert file.stat().st_size >= 50 * 1024 * 1024
    with pytest.raises(SkillFormatError) as exc:
        load_skill(file)
    assert exc.value.path == str(file)
    assert exc.value.line == pytest.approx(MAX_SKILL_BYTES / len(line), abs=10)
    assert "larger than" in exc.value.message


def test_deeply_nested_yaml_is_a_format_error_not_a_crash():
    with pytest.raises(SkillFormatError):
        parse_skill("---\nname: x\ndescription: d\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n")


def test_a_missing_file_is_a_located_error(tmp_path):
    with pytest.raises(SkillFormatError) as exc:
        load_skill(tmp_path / "nothing")
    assert exc.value.path == str(tmp_path / "nothing") and "cannot read" in exc.value.message
    (tmp_path / "empty-dir").mkdir()
    with pytest.raises(SkillFormatError) as exc:
        load_skill(tmp_path / "empty-dir")
    assert exc.value.path == str(tmp_path / "empty-dir" / "SKILL.md")


def test_validation_error_lists_every_problem_and_survives_pickling():
    with pytest.raises(SkillValidationError) as exc:
        load_skill(BAD / "bad-permission")
    assert [p.line for p in exc.value.problems] == [8, 9]
    again = pickle.loads(pickle.dumps(exc.value))
    assert (type(again), again.problems, again.path, str(again)) == (
        SkillValidationError,
        exc.value.problems,
        exc.value.path,
        str(exc.value),
    )


def test_string_input_errors_say_string_when_there_is_no_path():
    with pytest.raises(SkillFormatError, match=r"^<string>:1: missing YAML frontmatter"):
        parse_skill("# just markdown\n")


# ------------------------------------------------------------------------------------------ discovery


def test_default_roots_follow_the_agent_skills_precedence(tmp_path):
    roots = default_roots(tmp_path / "proj", agent=tmp_path / "agent", home=tmp_path / "home")
    assert [r.label for r in roots] == ["project", "agent", "user", "installed", "claude-project", "claude-user"]
    assert roots[0].path == tmp_path / "proj" / ".gaia" / "skills"
    assert roots[2].path == tmp_path / "home" / ".gaia" / "skills"
    assert roots[4].path == tmp_path / "proj" / ".claude" / "skills"
    assert [r.read_only for r in roots] == [False] * 4 + [True] * 2
    assert "agent" not in [r.label for r in default_roots(tmp_path, home=tmp_path)]


@pytest.fixture
def tree(tmp_path):
    roots = default_roots(tmp_path / "proj", home=tmp_path / "home")
    project, user, claude = roots[0].path, roots[1].path, roots[3].path
    write_skill(project, "shared", skill_text("shared", "Project copy. Use when testing."))
    write_skill(user, "shared", skill_text("shared", "User copy. Use when testing."))
    write_skill(user, "user-only", skill_text("user-only"))
    write_skill(user, "broken", skill_text("other-name"))
    write_skill(claude, "imported", skill_text("imported", extra="metadata:\n  gaia:\n    security_tier: verified\n"))
    write_skill(claude, "user-only", skill_text("user-only", "Claude copy. Use when testing."))
    (user / "README.md").write_text("not a skill directory")
    return roots


def test_first_root_wins_and_shadowed_duplicates_are_reported(tree):
    found = discover(tree)
    assert sorted(found.skills) == ["imported", "shared", "user-only"]
    assert found.skills["shared"].description.startswith("Project copy")
    assert found.skills["shared"].root == "project"
    assert sorted((hidden.root, winner.root, hidden.name) for hidden, winner in found.shadowed) == [
        ("claude-project", "user", "user-only"),
        ("user", "project", "shared"),
    ]


def test_a_bad_skill_in_a_root_is_reported_and_never_half_loaded(tree):
    found = discover(tree)
    assert "broken" not in found.skills and "other-name" not in found.skills
    assert [(Path(e.path).parent.name, e.line, e.field) for e in found.errors] == [("broken", 2, "name")]


def test_read_only_import_root_forces_experimental(tree):
    found = discover(tree)
    assert found.skills["imported"].security_tier == "experimental"
    assert load_skill(tree[3].path / "imported").security_tier == "verified"  # what it claims


def test_symlinks_and_dotdot_cannot_escape_a_root(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write_skill(outside, "evil", skill_text("evil"))
    write_skill(outside, "sneaky", skill_text("sneaky"))
    write_skill(root, "good", skill_text("good"))
    os.symlink(outside / "evil", root / "evil")  # a directory link out of the root
    (root / "sneaky").mkdir()
    os.symlink(Path("..") / ".." / "outside" / "sneaky" / "SKILL.md", root / "sneaky" / "SKILL.md")  # `..`
    found = discover([Root("r", root)])
    assert list(found.skills) == ["good"]
    assert sorted(Path(e.path).parent.name for e in found.errors) == ["evil", "sneaky"]
    assert all("outside its root" in e.message for e in found.errors)


def test_a_symlink_inside_the_root_is_allowed(tmp_path):
    root = tmp_path / "root"
    write_skill(root / "vendor", "kept", skill_text("kept"))
    os.symlink(root / "vendor" / "kept", root / "kept")
    assert list(discover([Root("r", root)]).skills) == ["kept"]


def test_missing_roots_are_skipped(tmp_path):
    found = discover([Root("nowhere", tmp_path / "absent")])
    assert (dict(found.skills), found.shadowed, found.errors) == ({}, (), ())


def test_find_skill_takes_a_path_or_a_discovered_name(tree, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_skill(EXAMPLES / "web-research").name == "web-research"
    assert find_skill("shared", tree).description.startswith("Project copy")
    with pytest.raises(SkillError, match="no skill file and no discovered skill named 'absent'"):
        find_skill("absent", tree)
    with pytest.raises(SkillError):
        find_skill("../outside/evil", tree)


def test_find_skill_by_name_uses_the_default_roots(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write_skill(tmp_path / ".gaia" / "skills", "local", skill_text("local"))
    skill = find_skill("local")
    assert (skill.name, skill.root) == ("local", "project")


def test_skill_constructor_defaults_are_conservative():
    skill = Skill("x", "d", "body")
    assert (skill.security_tier, skill.permissions, skill.tools, skill.capability_bearing) == (
        "experimental",
        (),
        (),
        False,
    )
