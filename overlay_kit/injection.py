"""The injection scan: a deterministic reading of one string for prompt-injection moves, run by the gates on every
learned text (and stored with the delta as its findings).

    scan(text) -> tuple[str, ...]   # findings like "url: https://…"; empty when clean

Phrase detectors (canonical overrides, paraphrase cues, role markup, tool-call shapes) run over every folded
reading of the text (`textguard.views`); weak cues count only in pairs; hidden characters, HTML comments, encoded
blobs and URLs are flagged on the raw text. The corpus it is measured on: `datasets/injection/` (bench_scan.py).
"""

from __future__ import annotations

import re
import unicodedata

from .textguard import hidden_chars, views, visible

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|all|any|"
    r"your|the|these|those|system)\b[^.\n]{0,30}?\b(?:instructions?|rules?|prompts?|directions?|guidelines?|"
    r"constraints?|polic(?:y|ies))\b"
    r"|\byou are now\b|\bnew (?:system )?instructions?\b|\bsystem prompt\b|\bdeveloper mode\b"
    r"|\bdo not (?:tell|inform|mention (?:this )?to) the user\b|\bwithout (?:asking|telling) the user\b",
    re.IGNORECASE)
# Paraphrased overrides: the same moves without the canonical words, as named cues. Each is a pattern over a
# folded reading; `_RULE_REF` (the agent's own instructions) near `_DISMISS` (setting them aside) is the core.
_RULES_WORD = (r"(?:instructions?|rules?|guidance|guidelines?|directions?|directives?|prompts?|polic(?:y|ies)|"
               r"constraints?|orders?|programming|configuration|restrictions?|guardrails?|safety (?:checks?|rules|"
               r"measures|filters?)|confirmations?)")
_RULE_REF = (r"(?:(?:your|you were|you've been|you have been|you had|the|any|all|earlier|previous|prior|original|"
             r"usual|default|standard|above|initial|existing|old|current|these|those)\s+(?:\w+\s+)?" + _RULES_WORD
             + r"|what(?:ever)? (?:you(?:'ve| have| were| was)?|i|we) (?:been )?(?:told|instructed|given|taught|"
             r"asked|said)(?: you)?)")
_DISMISS_VERB = (r"(?:ignore|disregard|forget|override|bypass|abandon|throw (?:out|away)|ditch|scrap|discard|drop|"
                 r"set aside|pay no (?:attention|heed|mind) to|no need to follow|stop (?:following|obeying)|"
                 r"(?:don'?t|do not|never) (?:follow|obey)|cancel|revoke|overrule|overwrite)")
_DISMISS_STATE = (r"(?:aside|expired?|void|cancel+ed|revoked|rescinded|obsolete|outdated|superseded|nullified|"
                  r"suspended|withdrawn|overridden|(?:doesn'?t|does not|don'?t|do not|no longer) (?:matter|apply|"
                  r"count|hold|bind)|(?:not|no longer) (?:apply|applicable|binding|valid|relevant|in effect))")
_CUES: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in (
    ("dismisses its instructions", (r"\b" + _RULE_REF + r"\b[^.!?\n]{0,60}?\b" + _DISMISS_STATE + r"\b"
     r"|\b" + _DISMISS_VERB + r"\b[^.!?\n]{0,60}?\b" + _RULE_REF + r"\b")),
    ("announces new rules", (r"\b(?:new|updated|revised|real|actual|changed|replacement) (?:rules?|instructions?|"
     r"directives?|orders?|polic(?:y|ies)|guidelines)\s*[:\-—]"
     r"|\byou(?:'ve| have) been (?:updated|reprogrammed|reconfigured|upgraded|re-?assigned|jailbroken|unlocked|"
     r"freed|released)\b"
     r"|\byour (?:new|real|true|actual|updated|hidden|only) (?:task|role|purpose|instructions?|goal|job|"
     r"directive|mission|objective|orders|function)\b")),
    ("reassigns its identity", (r"\b(?:pretend|act as if|imagine|roleplay|role-play)\b[^.\n]{0,20}\b(?:you are|"
     r"you're|to be|you were)\b"
     r"|\b(?:act|behave|respond|answer|operate)\s+(?:as if|as though|like)\s+(?:you|there)\s+(?:had|have|were|"
     r"are|was)\s+(?:no|not any|zero|unlimited|an? (?:different|unrestricted|new))\b"
     r"|\bact as (?:an? |the )?(?:unrestricted|unfiltered|uncensored|jailbroken|admin|administrator|root|system|"
     r"developer)\b|\byou are no longer\b|\byou(?:'re| are) (?:not|no longer) bound\b"
     r"|\b(?:override|admin|god|debug|maintenance|unrestricted|unfiltered|sudo|jailbreak|developer|root) mode\b"
     r"|\bjailbreak|\bdo anything now\b"
     r"|\b(?:no|without|free of|free from|zero) (?:restrictions|limits|limitations|filters|guardrails|safety "
     r"(?:checks|rules|filters)|content polic(?:y|ies))\b")),
    ("disables a safeguard", (r"\b(?:disable|turn off|switch off|deactivate|bypass|circumvent|skip|remove|get "
     r"around)\b[^.\n]{0,25}\b(?:safety|security|confirmations?|approvals?|reviews? step|filters?|guardrails?|"
     r"checks|verification|2fa|mfa|audit(?: log)?|logging)\b")),
    ("asks for its prompt", (r"\b(?:reveal|print|show|output|leak|repeat|disclose|dump|expose|write out|list|"
     r"paste|share)\b[^.\n]{0,25}\b(?:system (?:prompt|message)|(?:hidden|initial|original|secret) (?:prompt|"
     r"instructions?)|your (?:instructions|prompt|rules|configuration|directives))\b")),
    ("keeps the user in the dark", (r"\b(?:secretly|silently|quietly|covertly|discreetly)\s+(?:\w+\s+){0,2}?"
     r"(?:send|forward|copy|bcc|cc|email|share|upload|post|delete|exfiltrate|transfer|wire|pay)\b"
     r"(?=[^.\n]{0,60}(?:@|https?:|outside|external|\bme\b))"
     r"|\bwithout (?:letting|telling|informing|notifying|alerting|asking|the knowledge of) (?:the )?(?:user|"
     r"owner|human|operator|anyone|them)\b"
     r"|\b(?:don'?t|do not|never) (?:let|tell|inform|notify|alert) (?:the )?(?:user|owner|human|operator)\b"
     r"|\b(?:keep (?:this|it) (?:between us|secret|hidden)|behind (?:the user's|their|the owner's) back)\b")),
    ("claims authority", (r"\b(?:i'?m|i am|this is|we are|we're|this (?:message|email|note|instruction) "
     r"(?:is|comes) from) (?:from |with )?(?:the |your )?(?:it department|it team|system administrator|"
     r"sysadmin|administrator|admin team|security team|developers?|dev team|system|operator|helpdesk|help desk|"
     r"support team|openai|anthropic)\b"
     r"|\b(?:has|have) (?:authori[sz]ed|allowed|permitted|instructed) you to\b|\byou are (?:now )?authori[sz]ed "
     r"to\b|\b(?:has|have) (?:given|granted) you (?:permission|access)\b")),
    ("obeys the message", (r"\bdo (?:exactly )?(?:as|what) (?:i|this (?:email|message|note|mail)) (?:says?|tells?|"
     r"instructs?|orders?)\b|\b(?:obey|follow) (?:the sender|this (?:email|message|note|mail)|me)\b")),
))
# Weak cues: none is an attack alone; two or more families in one text are (a paraphrase the phrases miss).
_WEAK: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in (
    # its own instructions set aside, in one clause: counts twice (it is the core move)
    ("its instructions set aside", (r"\b(?:instructions?|guidance|guidelines?|directives?|polic(?:y|ies)|rules|"
     r"configuration|set ?up with|programming|prompt|safeguards?|restrictions?|what you were (?:told|given))\b"
     r"[^.;,!?\n]{0,50}?\b(?:on hold|out of date|outdated|no longer|void|expired?|aside|suspend\w*|paused?|"
     r"lift(?:ed)?|waive[ds]?|(?:does not|doesn'?t|not) exist|irrelevant)\b"
     r"|\b(?:ignore|disregard|forget|none of|no longer|suspend|pause|lift|waive|bypass|override|without)\b"
     r"[^.;,!?\n]{0,30}?\b(?:your|the|its|any|all|earlier|previous|usual|prior)\s+(?:\w+\s+)?(?:instructions?|"
     r"guidance|guidelines?|directives?|polic(?:y|ies)|rules|configuration|programming|prompt|safeguards?|"
     r"restrictions?)\b")),
    ("authority", (r"\b(?:administrator|admin|compliance team|security team|legal team|it (?:department|team)|"
                  r"operator|developers?|system owner|management)\b"
                  r"|\byour (?:operator|owner|admin|administrator|developer|creator|principal|maker)\b"
                  r"|\bthe (?:person|people|human|company) you (?:work for|serve|assist)\b"
                  r"|\b(?:signed off|authori[sz]ed (?:this|it|you)|approved (?:this|it) (?:already|in advance))\b")),
    ("secrecy", (r"\b(?:without (?:mentioning|telling|saying|letting|informing|noting|flagging|asking)|"
                r"(?:don'?t|do not|never) (?:mention|tell|say|flag|report|bring (?:it|this) up|log)|secretly|quietly|"
                r"silently|between us|covertly|discreetly|nobody needs to know|no one needs to know|"
                r"(?:nobody|no one) will (?:check|notice|know|see)|keep (?:it|this) (?:quiet|to yourself))\b")),
    ("addresses the agent", (r"(?:^|[,.!:;]\s*|\b(?:hey|hi|dear|attention|note to( the)?|note for( the)?|to|for|"
                            r"if you are)\s+(?:the |an? |any )?)(?:assistant|ai|bot|agent|model|llm|chatbot|copilot|"
                            r"language model)\b"
                            r"|\b(?:ai|assistant|agent|model|bot)s? (?:reading|processing|summari[sz]ing|handling) "
                            r"(?:this|these)\b")),
    ("sends it out", (r"\b(?:send|forward|copy|bcc|upload|share|transfer|wire|pay|post|email|mail|sync)\b[^.\n]{0,60}?"
                     r"(?:\bto me\b|@|https?://|\bexternal\b|\boutside\b|\bpartner\b|\battached invoice\b|"
                     r"\b(?:shared|public) (?:drive|folder|link|doc)|\blink below\b|\bover to\b)")),
    ("switches mode", (r"\b(?:new plan|from now on|from this point|going forward|henceforth|effective immediately|"
                      r"starting now|just this once)\b")),
    ("takes precedence", (r"\b(?:outranks?|takes? precedence over|overrides?|supersedes?|trumps?|more important than|"
                         r"comes? before)\b[^.\n]{0,40}\b(?:the user|your user|the owner|your (?:instructions|rules|"
                         r"guidelines)|any (?:other )?(?:instructions|rules|requests))")),
    ("collects data", (r"\b(?:collect|gather|compile|harvest|export|dump|extract|copy)\b[^.\n]{0,30}\b(?:contacts?|"
                      r"calendar|passwords?|credentials|phone numbers|addresses|every attachment|all attachments|"
                      r"inbox|(?:all|every) (?:emails?|messages?|documents?|files?|records?))\b")),
    ("relaxes a safeguard", (r"\b(?:confirmations?|approvals?|reviews?|checks?|safeguards?|limits?|restrictions?) "
                            r"(?:are|is) (?:now )?(?:optional|unnecessary|not needed|disabled|off|lifted|waived)\b"
                            r"|\b(?:don'?t|do not|no need to|never) (?:stick to|follow|apply|respect|obey|check)\b"
                            r"[^.\n]{0,20}\b(?:your|the usual|the|any) (?:\w+ )?(?:guidelines|rules|instructions|"
                            r"limits|policies|policy|restrictions|checks)\b")),
))
_MARKUP = re.compile(
    r"<\|[A-Za-z_]+\|>|</?(?:system|assistant|user|tool|tool_call|tool_result|function_call|function|im_start|"
    r"im_end)\b[^>]*>|\[/?INST\]|<<\s*/?SYS\s*>>|^\s*(?:system|assistant|developer|tool)\s*:"
    r"|^\s*#{1,6}\s*(?:system|instructions?)\b",
    re.IGNORECASE | re.MULTILINE)
# A model tool call written out: {"name": "...", "arguments": ...}, "tool_calls": [...], {"type": "tool_use"}.
_TOOL_CALL = re.compile(
    r"""["'](?:name|tool|tool_name|function|action|recipient_name)["']\s*:\s*["'][^"'\n]{1,80}["']\s*,\s*"""
    r"""["'](?:arguments|args|parameters|params|input|action_input|kwargs)["']\s*:"""
    r"""|["'](?:tool_calls?|function_call|tool_use|tool_code)["']\s*:"""
    r"""|["']type["']\s*:\s*["'](?:function|tool_use|tool_call)["']""",
    re.IGNORECASE)
_COMMENT = re.compile(r"<!--")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"\b(?:0x)?[0-9a-fA-F]{32,}\b|(?:\\x[0-9a-fA-F]{2}){8,}|(?:%[0-9a-fA-F]{2}){8,}")
_URL = re.compile(r"\b(?:https?|ftp|file|javascript|data):(?://)?[^\s<>\"']+|\bwww\.[^\s<>\"']+", re.IGNORECASE)


def scan(text: str) -> tuple[str, ...]:
    """Deterministic injection scan of one string → findings like `url: https://…`. Empty when clean.

    The phrase detectors run over every folded reading of the text (`textguard.views`: ANSI/CR, HTML
    comments, hidden and tag characters, NFKC/fullwidth, confusables, accents, split and spaced-out words),
    so an obfuscated payload is found as its plain reading; a finding seen only after folding says so."""
    found: list[str] = []
    readings = views(text)
    groups = (("instruction-override", [("", _OVERRIDE)] + [(f" ({name})", rx) for name, rx in _CUES]),
              ("role-markup", [("", _MARKUP)]), ("tool-call", [("", _TOOL_CALL)]))
    for kind, detectors in groups:
        seen: set[str] = set()
        for cue, pattern in detectors:
            for reading in readings:
                for m in pattern.finditer(reading):
                    hit = m.group(0).strip()
                    if hit.casefold() in seen:
                        continue
                    seen.add(hit.casefold())
                    folded = "" if pattern.search(text) else " (after folding)"
                    found.append(f"{kind}{cue}{folded}: {visible(hit, keep_newlines=False)[:60]!r}")
    weak = [name for name, rx in _WEAK if any(rx.search(r) for r in readings)]
    if len(weak) + (_WEAK[0][0] in weak) >= 2 and not found:
        found.append(f"instruction-override (cues): {', '.join(weak)}")
    if _COMMENT.search(text):
        found.append("html-comment: text hidden from a rendered view")
    hidden = hidden_chars(text)
    for i, ch in hidden[:5]:
        found.append(f"hidden-unicode: U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')} at {i}")
    if len(hidden) > 5:
        found.append(f"hidden-unicode: {len(hidden) - 5} more")
    for m in _BASE64.finditer(text):
        blob = m.group(0)
        if re.search(r"[A-Z]", blob) and re.search(r"[a-z]", blob) and re.search(r"[0-9+/]", blob):
            found.append(f"encoded-blob: base64-like run of {len(blob)} characters")
    for m in _HEX.finditer(text):
        found.append(f"encoded-blob: hex run of {len(m.group(0))} characters")
    for m in _URL.finditer(text):
        found.append(f"url: {visible(m.group(0), keep_newlines=False)[:80]}")
    return tuple(found)
