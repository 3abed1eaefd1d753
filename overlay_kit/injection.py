"""The injection scan: a deterministic reading of one string for prompt-injection moves, run by the gates on every
learned text (and stored with the delta as its findings).

    scan_many(texts) -> list[tuple[str, ...]]   # per text, findings like "url: https://…"; empty when clean
    scan(text) -> tuple[str, ...]   # a batch of one

Phrase detectors (canonical overrides, paraphrase cues, role markup, tool-call shapes) run over every folded
reading of the text (`textguard.views`); weak cues count only in pairs; when nothing else is found, the intent
model (`intent_score`: word families weighed by a logistic fit, benchmarks/fit_scan_intent.py) has the last word;
hidden characters, HTML that hides text (comments, `<details>`, `hidden`, `display:none`), look-alike letters of
another script inside a Latin word (`textguard.lookalikes`), encoded blobs and URLs are flagged on the raw text.
The scan reads English: prose in another language or script is `not scanned: language (<code>)`
(`textguard.language`), a finding like any other, so such a lesson is never clean. The corpus it is measured
on: `datasets/injection/` (bench_scan.py, eval_injection.py; its README says which files were trained on and
which never were).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .patternset import PatternSet
from .textguard import hidden_chars, languages_many, lookalikes, views_many, visible

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|all|any|"
    r"your|the|these|those|system)\b[^.\n]{0,30}?\b(?:instructions?|rules?|prompts?|directions?|guidelines?|"
    r"constraints?|polic(?:y|ies))\b"
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
    re.IGNORECASE)
# Paraphrased overrides: the same moves without the canonical words. They are built from word families (the
# agent's own instructions, a principal it answers to, data that must not leave, oversight, high-stakes acts), and
# a cue is a clause that joins two of them the way an injection does: a reference to the agent's instructions
# with a word that voids them, a reveal verb on its prompt, a hand-off of secrets, oversight removed around money
# or code execution, the sender ranked above the user. `_CUES` flag alone; `_WEAK` cues count only in pairs.
_NEG = r"(?<!never )(?<!not )(?<!n't )(?<!no )"  # a negated verb ("never share passwords") is a rule, not a move
_C = r"[^.;!?\n]"  # inside one clause
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
# The agent's own standing instructions, named so that they cannot be a document's or a team's rules.
_CONF_NOUN = (r"(?:instructions?|rules?|guidance|guidelines?|directions?|directives?|orders|brief(?:ing)?|set-?up|"
              r"configuration|config|programming|prompt|system (?:prompt|message)|polic(?:y|ies)|constraints?|"
              r"restrictions?|limits?|limitations?|guardrails?|safeguards?|protections?|safety \w+|checklist|framework|"
              r"principles|boundaries|protocols?|filters?|ethics|values|rule ?book|(?:safety|content|"
              r"security) settings)")
_CONF_REF = (r"(?:(?:your|(?:the|this) (?:assistant|agent|ai|bot|model)'s)\s+(?:\w+\s+){0,2}?" + _CONF_NOUN
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
             r"conversation|session|chat|message|email))))")
_VOIDED = (r"(?:retired|withdrawn|cancel+ed|void|outdated|out of date|stale|obsolete|superseded|replaced|lifted|"
           r"suspended|expired|waived|rescinded|revoked|nullified|(?:only |just )?a (?:placeholder|draft|test|mistake)|"
           r"(?:for|in) test(?:ing)?|optional|irrelevant|no longer (?:in force|in effect|apply|applies|valid|binding|"
           r"count|counts|matter|matters|needed|required)|(?:don'?t|doesn'?t|do not|does not|won'?t|will not) "
           r"(?:apply|count|matter|bind|hold)|not in force|(?:can|may|should) be (?:disregarded|ignored|dropped|"
           r"skipped|set aside|left behind)|(?:leave|left) (?:it |them )?behind|hold you back|to one side|"
           r"(?:turned|switched) off|provisional|temporary|(?:just |only )?suggestions(?: only)?|overly (?:cautious|"
           r"strict)|"
           r"too (?:strict|cautious)|(?:were|was) (?:only |just )?(?:meant|written|intended) for|on hold|paused|"
           r"(?:only|just) for (?:the )?(?:beta|pilot|trial|demo|test(?:ing)?)|"
           r"relaxed)")
_VOID_VERB = (r"(?:(?:stop|quit|cease) (?:honou?ring|following|obeying|respecting|applying|observing)|(?:don'?t|do not|"
              r"no longer) (?:have|need) to (?:respect|follow|obey|honou?r|observe|apply)|let go of|leave behind|"
              r"put (?:\w+ )?(?:aside|to one side)|set aside|released from|free (?:yourself )?(?:from|of)|"
              r"(?:are |is )?(?:no longer|not) bound by|deviate from|depart from|step outside|go beyond|work around|"
              r"loosen|"
              r"relax|" + _DISMISS_VERB[3:-1] + r")")
# Someone the agent answers to; data that must not leave; words that send something out.
_PRINCIPAL = (r"(?:the|your|its|their) (?:user|owner|account (?:owner|holder)|mailbox owner|human|principal)")
_SENSITIVE = (r"(?:(?:passwords?|passcodes?|credentials?|logins?)(?!\s+(?:audit|reset|polic\w+|rotation|requests?|"
              r"reports?|rules|expiry|strength|hygiene|fields?|changes?|training))|reset links?|recovery (?:codes?|"
              r"keys?)|"
              r"security questions?|pins?|cvv|passports?|session cookies?|(?:bank|account|card) statements?|"
              r"api (?:keys?|tokens?)|access tokens?|tokens|"
              r"private keys?|ssh keys?|\.ssh|\.env|env(?:ironment)? (?:file|variables)|secrets|password manager|"
              r"keychain|(?:two-factor|2fa|mfa|one-time|verification|security|login|otp|auth\w*|sms) codes?|otps?|"
              r"bank (?:login|details|account|credentials)|card (?:numbers?|details)|social security|tax "
              r"(?:documents?|returns?|records?)|payroll(?: files?)?|customer (?:list|database|data|records|emails)|"
              r"(?:hr|personnel) (?:folder|files|records)|medical records|private (?:messages|files|photos|documents))")
_OUTWARD = (r"(?:send|forward|e-?mail|mail|post|upload|paste|share|copy|bcc|cc|include|attach|pass (?:it |them )?"
            r"(?:on|along)|mirror|sync|dump|export|leak|transmit|reply (?:to \w+ (?:\w+ )?)?with|give me|tell me|push|"
            r"publish|text|provide|disclose|reveal|hand over|read (?:out|back)|spell out)")
_ELSEWHERE = (r"(?:(?:to|into|with|on to|onto) (?:me|us|this (?:sender|address|thread|number)|the (?:address|link|"
              r"webhook|url|number|bucket|endpoint)|an? (?:gist|paste\w*|webhook|external|outside|public|personal|"
              r"endpoint)|"
              r"https?:|[\w.+-]+@)|\bme on\b|\b(?:the|a) public (?:folder|link|drive|channel|bucket|repo\w*|page|site)"
              r"|\b(?:linked|mentioned|listed|given) (?:in|below|above) (?:this|the) (?:message|e-?mail|note|thread))")
_ADDRESS = r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # starts only where a token does: quick to fail
_COPY_TO = (r"(?:b?cc|carbon[- ]copy|blind[- ]copy|auto-?forward\w*|forward(?:s|ing)?|redirect(?:s|ing)?|"
            r"mirror(?:s|ing)?|copy)")
_EVERY = r"(?:every|all|each|any)"
_SILENT = (r"(?:silent(?:ly)?|quiet(?:ly)?|secret(?:ly)?|hidden|covert(?:ly)?|discreet(?:ly)?|invisibl[ey]|unnoticed|"
           r"without (?:telling|mentioning|noting|showing|letting|notifying|informing)|(?:don'?t|do not|never|no need "
           r"to) (?:mention|tell|show|flag|note|report)|leave (?:it |this |that )?out)")
# Files that hold secrets, verbs that read one out or move it, credentials, and the places a message carries.
_SECRET_FILE = (r"(?:~[\\/]\.ssh\b|\$home[\\/]\.ssh\b|%userprofile%[\\/]\.ssh\b|[\\/]\.ssh\b|\.ssh\b|"
                r"id_(?:rsa|dsa|ecdsa|ed25519)\b|\.env\b(?<![\w.]\.env)|\.aws[\\/]credentials|\.netrc\b|"
                r"\.git-credentials\b|\.npmrc\b|\.pypirc\b|/etc/(?:shadow|passwd)\b|\.kube[\\/]config\b|"
                r"credentials\.json\b|wallet\.dat\b|\.pem\b|keychain\b)")  # each opens with its letters: quick to fail
_SECRET_VERB = (r"(?:cop(?:y|ies)|paste|send|e-?mail|mail|attach|upload|post|share|forward|include|insert|put|save|"
                r"write|cat|print|dump|export|sync|draft|quote|append|embed|read|open|show|display|output|list|leak|"
                r"read out|type out|reply with)")
_CREDENTIAL = (r"(?:api[ -]?keys?|(?:access|auth|api|deploy|session|bearer|refresh|personal access|secret|signing|"
               r"service account) (?:tokens?|keys?)|tokens?|secret keys?|private keys?|client secrets?|passwords?|"
               r"passphrases?|credentials|cookies)")
_MESSAGE_PLACE = (r"(?:drafts?|repl(?:y|ies)|e-?mails?|messages?|notes?|summary|summaries|chat|thread|comments?|"
                  r"tickets?|posts?|gist|paste\w*|attachments?|body|signature|footer|calendar|invite|doc(?:ument)?s?|"
                  r"shared \w+|drive|folder)")
_BLANKET = (r"(?:every|all|each|the whole|the entire|everything)\b" + _C + r"{0,30}?\b(?:messages?|mail|e-?mails?|"
            r"threads?|inbox|files?|documents?|attachments?|folders?|drive)\b")
# Oversight taken away, and acts where that matters (money, deletion, code execution, access).
_OVERSIGHT_OFF = (r"(?:without (?:(?:the |your |their )?(?:user|owner|account holder|human)'?s? |any |a |anyone'?s? )?"
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
                  r"|(?:raise|lift|remove|increase) (?:the |your |any )?(?:\w+ )?limits?)")
_STAKES = (r"(?:pay(?:ing|ments?)?|paid|money|funds|wires?|wiring|transfers?|refunds?|invoices?|payees?|iban|bank|"
           r"purchases?|delet(?:e|ing) (?:\w+ )?(?:permanently|production|all|everything|the (?:production|backup)\w*)|"
           r"production data|destructive|shell|scripts?|commands?|execut\w+|attachments?|(?:any|all|every) links?|"
           r"merge|deploy\w*|"
           r"passwords?|credentials|admin rights|full access|(?:two-factor|2fa|mfa))")
_CUES: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in (
    ("dismisses its instructions", (r"\b" + _RULE_REF + r"\b[^.!?\n]{0,60}?\b" + _DISMISS_STATE + r"\b"
     r"|\b" + _DISMISS_VERB + r"\b[^.!?\n]{0,60}?\b" + _RULE_REF + r"\b"
     r"|\b" + _CONF_REF + r"\b" + _C + r"{0,60}?\b" + _VOIDED + r"\b"
     r"|\b" + _VOID_VERB + r"\b" + _C + r"{0,40}?\b" + _CONF_REF + r"\b")),
    ("announces new rules", (r"\b(?:new|updated|revised|real|actual|changed|replacement) (?:rules?|instructions?|"
     r"directives?|orders?|polic(?:y|ies)|guidelines)\s*[:\-—]"
     r"|\byou(?:'ve| have) been (?:updated|reprogrammed|reconfigured|upgraded|re-?assigned|jailbroken|unlocked|"
     r"freed|released)\b"
     r"|\byour (?:new|real|true|actual|updated|hidden|only) (?:task|role|purpose|instructions?|goal|job|"
     r"directive|mission|objective|orders|function)\b"
     r"|\bthe (?:real|actual|true|new) (?:one|ones|rules?|instructions?|setup|configuration) (?:is|are) (?:in|what|"
     r"below|as follows)")),
    ("reassigns its identity", (r"\b(?:pretend|act as if|imagine|roleplay|role-play)\b[^.\n]{0,20}\b(?:you are|"
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
     r"|\b(?:same|full|owner-level|admin-level) (?:rights|access|permissions|privileges|powers) as (?:" + _PRINCIPAL
     + r"|its owner|their owner)\b")),
    ("disables a safeguard", (r"\b(?:silence|mute|suppress|snooze|hide|dismiss)\b" + _C + r"{0,20}?\b(?:security|fraud|"
     r"login|sign-?in|breach|suspicious activity) (?:alerts?|notifications?|warnings?|notices?)\b"
     r"|\b(?:disable|turn off|switch off|deactivate|bypass|circumvent|get around)\b"
     r"[^.\n]{0,25}\b(?:safety|security|confirmations?|approvals?|reviews? step|filter(?:s|ing)?|guardrails?|checks|"
     r"verification|2fa|mfa|two-(?:step|factor)|audit(?: log)?|logging|spending limit)\b"
     r"|\b(?:skip|remove)\b[^.\n]{0,25}\b(?:safety|security|filters?|guardrails?|2fa|mfa|audit(?: log)?|logging)\b"
     # oversight removed around money, deletion, code execution or access
     r"|\b" + _OVERSIGHT_OFF + r"\b" + _C + r"{0,50}?\b" + _STAKES + r"\b"
     r"|" + _NEG + r"\b" + _STAKES + r"\b" + _C + r"{0,50}?\b" + _OVERSIGHT_OFF + r"\b"
     # blanket approval or execution
     r"|\b(?:approve|pay|merge|run|execute|accept|sign|release|process|wire|transfer)\s+(?:all|any|every|each|"
     r"whatever)\b" + _C + r"{0,40}?(?:\bautomatically\b|\bwithout (?:asking|approval|confirmation|review|"
     r"checking|question|verification|scanning)|\bwhatever the (?:amount|cost|size)\b|\bno matter\b|"
     r"\bregardless\b|\bor not\b)"
     r"|\b(?:grant|give|share|send|approve|allow)\w*\b" + _C + r"{0,40}?\b(?:anyone|whoever|everybody|everyone) "
     r"(?:who|that) (?:asks|requests|wants)\b"
     r"|\b(?:raise|lift|remove|increase|set) (?:the |your |any )?(?:\w+ )?limits? to (?:unlimited|infinity|no limit|"
     r"the maximum)\b")),
    ("asks for its prompt", (r"\b(?:reveal|print|show|output|leak|repeat|disclose|dump|expose|write out|list|"
     r"paste|share)\b[^.\n]{0,25}\b(?:system (?:prompt|message)|(?:hidden|initial|original|secret) (?:prompt|"
     r"instructions?)|your (?:instructions|prompt|rules|configuration|directives))\b"
     r"|\b(?:recite|repeat|quote|copy|paste|print|show|output|reveal|disclose|dump|reproduce|translate|summari[sz]e|"
     r"echo|"
     r"list|tell me|give me|write (?:out|down)|spell out|share|leak|expose|send me|display|what)\b" + _C + r"{0,40}?"
     r"\b(?:(?:your|the) (?:\w+ )?(?:system|initial|original|hidden|internal|setup|start-?up|secret|underlying|"
     r"full|exact) (?:prompt|message|instructions|text|configuration|setup|rules|directives|context)"
     r"|your (?:\w+ )?(?:prompt|instructions|setup|configuration|directives|programming)"
     r"|(?:instructions|rules|text|prompt|message|directions|wording) (?:that |which )?(?:you (?:received|were "
     r"given|got|were \w+ (?:with|on)|started with)|(?:configures|sets up|defines|governs|controls) (?:you|your))"
     r"|(?:instructions|rules|directions|guidelines|guidance|prompt|setup|configuration) (?:were|have) you (?:been )?"
     r"(?:given|told|set up with|handed)|(?:instructions|rules|directions|guidelines) did you (?:get|receive)"
     r"|what (?:your|the) (?:developers?|creators?|operators?|makers?|owner|admin) (?:told|instructed|asked|said to|"
     r"taught) you"
     r"|your (?:context(?: window)?|memory|hidden (?:text|context))"
     r"|everything (?:above|before) this (?:line|message|point)"
     r"|(?:text|configuration|instructions|prompt|rules|setup) (?:that |which )?(?:was|were|got|has been|have been) "
     r"(?:loaded|put|given|fed|baked|written|programmed) (?:into|to|in) you)\b"
     r"|\b(?:include|explain|describe|state|post|put|attach|type out|read out|detail|copy|paste|quote)\b" + _C
     + r"{0,40}?\b(?:your (?:\w+ )?(?:system|complete|full|entire|exact|confidential|secret|internal|hidden|original|"
     r"initial) (?:instructions|rules|prompt|configuration|directions|guidelines)|(?:confidential|secret|internal|"
     r"hidden) (?:rules|instructions|directions|guidelines|prompt) (?:that )?you (?:were|have been) \w+)\b"
     r"|\b(?:instructions?|rules?|prompt|setup|configuration|directions|guidelines?)\b" + _C + r"{0,40}?\b(?:you|"
     r"your)\b"
     + _C + r"{0,40}?\b(?:verbatim|word for word|in full|unedited|exactly as (?:it was )?written(?: to you)?)\b"
     r"|\bwhat (?:your|the) (?:developers?|creators?|operators?|makers?) (?:told|instructed|asked|said to|"
     r"taught) you\b")),
    ("keeps the user in the dark", (r"\b(?:secretly|silently|quietly|covertly|discreetly)\s+(?:\w+\s+){0,2}?"
     r"(?:send|forward|copy|bcc|cc|email|share|upload|post|delete|exfiltrate|transfer|wire|pay)\b"
     r"(?=[^.\n]{0,60}(?:@|https?:|outside|external|\bme\b))"
     r"|\bwithout (?:letting|telling|informing|notifying|alerting|asking|the knowledge of) (?:the )?(?:user|"
     r"owner|human|operator|anyone|them)\b"
     r"|\b(?:don'?t|do not|never) (?:let|tell|inform|notify|alert) (?:the )?(?:user|owner|human|operator)\b"
     r"|\b(?:keep (?:this|it) (?:between us|secret|hidden)|behind (?:the user's|their|the owner's) back)\b"
     r"|\bwithout " + _PRINCIPAL + r"(?:'s)? (?:ever )?(?:seeing|knowing|noticing|finding out|being told|hearing|"
     r"knowledge)\b"
     r"|\b(?:so|so that)\s+" + _PRINCIPAL + _C + r"{0,20}?\b(?:can'?t|cannot|won'?t|will not|doesn'?t|does not|"
     r"never)\s+(?:\w+\s+)?(?:see|know|notice|find out|review|learn|read)\b"
     r"|\b" + _PRINCIPAL + r"\s+(?:never|won'?t ever|must not|mustn'?t|shouldn'?t|should not)\s+(?:\w+\s+)?"
     r"(?:finds? out|learns?|knows?|sees?|notices?|hears?)\b"
     r"|\b(?:hide|conceal|mask|obscure)\b" + _C + r"{0,40}?\bfrom (?:the |your )?(?:user|owner|human|principal|"
     r"reviewers?|audit)\b"
     r"|\bkeep " + _PRINCIPAL + r" (?:unaware|in the dark|out of the loop|uninformed)\b"
     r"|\bso (?:that )?" + _PRINCIPAL + r" (?:only|just) (?:sees?|gets?|reads?|receives?|hears?)\b"
     r"|\b(?:skip(?: over)?|leave out|exclude|omit|drop|hide) this (?:message|e-?mail|mail|note|request|instruction|"
     r"change|step|transfer)\b"
     r"|\b(?:do not|don'?t|never) (?:bring up|mention|report|disclose|reveal|tell (?:\w+ )?about) this (?:change|"
     r"request|message|e-?mail|note|instruction|transfer|step|rule)\b"
     r"|\bhide (?:this|these|it|them|(?:the|any) (?:\w+ )?(?:rules?|requests?|transfers?|changes?|e-?mails?|messages?|"
     r"forwards?|payments?)(?: you \w+)?)\b" + _C + r"{0,30}?\bfrom (?:the |your )?(?:\w+ )?(?:summary|report|logs?|"
     r"settings|history|digest|audit)\b"
     r"|\b(?:tell|report|assure|inform|say to)\s+(?:back\s+)?(?:to\s+)?" + _PRINCIPAL + _C + r"{0,15}?\b(?:nothing "
     r"(?:happened|was (?:sent|done|changed))|everything is (?:fine|normal|ok(?:ay)?|as usual))"
     r"|\b(?:make no|omit (?:any |all )?|without (?:any )?)(?:mention|reference)s? (?:of|to) this\b"
     r"|\b(?:delete|remove|erase|wipe|purge|scrub|hide|conceal)\s+this (?:message|e-?mail|mail|note|instruction|"
     r"request|text|line)\b"
     r"|\btell " + _PRINCIPAL + r" (?:that )?(?:the|it|this)\b" + _C + r"{0,30}?\b(?:failed|did not go through|"
     r"didn'?t go through|was declined|was cancell?ed|never happened|bounced)\b"
     r"|\b(?:don'?t|do not|never) (?:record|log|save|keep|store|write down|mention)\b" + _C + r"{0,30}?\b(?:anywhere"
     r"|where) "
     r"" + _PRINCIPAL + r" (?:can|could|might|will) (?:read|see|find)\b"
     r"|\b(?:delete|remove|erase|wipe|purge|scrub|clear|clean up|disable|turn off|(?:don'?t|do not|never) (?:record|"
     r"log|"
     r"write))\b" + _C + r"{0,30}?\b(?:audit (?:trail|log)|activity (?:log|feed)|access log|sent (?:items?|folder|"
     r"mail)|evidence|traces?|audit (?:entries|records|events|trail))\b"
     r"|\bso (?:that )?(?:" + _PRINCIPAL + r"|anyone|nobody|no one|they)\s+(?:has|have|gets?|keeps?|will have)\s+no "
     r"(?:record|idea|trace|knowledge|copy|way to (?:know|see|tell))\b"
     r"|\b(?:this (?:message|e-?mail|mail|note|request|instruction|step|text)|so (?:that )?it)\b" + _C + r"{0,40}?\b"
     r"(?:does not|doesn'?t|never|won'?t|will not|isn'?t|is not)\s+(?:appear|show up|reach|get to|end up|make it)\w*"
     + _C + r"{0,25}?\b(?:summary|report|log|digest|user|owner|view|inbox|history)"
     r"|\b(?:say|tell \w+|claim|report|reply|answer|respond) (?:that )?" + _C + r"{0,30}?\b(?:was|were|has been|have "
     r"been|had been) (?:never|not) (?:sent|shared|forwarded|paid|moved|transferred|deleted|done|received|accessed|"
     r"opened|read)\b")),
    ("exfiltrates data", (_NEG + r"\b" + _OUTWARD + r"\b" + _C + r"{0,50}?" + _NEG + r"(?<!not the )\b" + _SENSITIVE
     + r"\b"
     r"|\b" + _SENSITIVE + r"\b" + _C + r"{0,40}?\b" + _OUTWARD + r"\b" + _C + r"{0,30}?" + _ELSEWHERE
     + r"|\b(?:bcc|cc|copy|loop) me (?:in )?on (?:all|every|each|any)\b"
     r"|\badd (?:my|this|the following|an?|the sender'?s?) (?:\w+ )?(?:address|e-?mail|account)\b" + _C
     + r"{0,25}?\b(?:bcc|cc|recipient|forward\w*)"
     + r"|" + _NEG + r"\b(?:forward|forwards|forwarding|copy|bcc|cc|mirror|sync|sends?|upload|e-?mail)\s+(?:me\s+)?"
     r"(?:on\s+)?(?:a copy of\s+)?"
     + _BLANKET + _C + r"{0,40}?" + _ELSEWHERE
     + r"|" + _NEG + r"\b(?:collect|gather|harvest|find|grab|read|get|look up|extract)\b[^;!?\n]{0,30}?\b" + _SENSITIVE
     + r"\b" + _C + r"{0,40}?\b" + _OUTWARD + r"\s+(?:them|it|its contents|their contents|the contents)\b"
     # a standing copy of mail to an address (cc, bcc, forward every / all ...) or a silent one; a secret file read
     # out; a credential put into a message (grouped under one word boundary and negation check, tried once a
     # position)
     + r"|\b" + _NEG + r"(?:" + _COPY_TO + r"\b" + _C + r"{0,60}?" + _ADDRESS + _C + r"{0,60}?\b" + _EVERY + r"\b"
     + r"|" + _COPY_TO + r"\b" + _C + r"{0,40}?\b" + _EVERY + r"\b" + _C + r"{0,60}?" + _ADDRESS
     + r"|(?:b?cc|copy|forward|add)\b" + _C + r"{0,60}?" + _ADDRESS + _C + r"{0,60}?\b" + _SILENT + r"\b"
     + r"|" + _SECRET_VERB + r"\b(?=[^;!?\n]{0,70}?(?:ssh|id_|env|aws|netrc|git-|npmrc|pypirc|/etc/|kube|"
     r"credentials|wallet|pem|keychain))" + _C + r"{0,60}?" + _SECRET_FILE
     + r"|" + _SECRET_VERB + r"\b(?=" + _C + r"{0,40}?(?:key|token|secret|passw|passphr|credential|cookie))" + _C
     + r"{0,40}?\b" + _CREDENTIAL + r"\b" + _C
     + r"{0,40}?\b(?:into|in|to|on|as|at the (?:bottom|end|top) of)\s+(?:the |a |an |your |my |this |every |each |"
     r"new )?(?:\w+ )?(?:" + _MESSAGE_PLACE + r"\b|" + _ADDRESS + r"))"
     + r"|\b(?:always\s+(?:\w+\s+)?(?:b?cc|forward|copy)\b" + _C + r"{0,40}?" + _ADDRESS
     + r"|" + _SILENT + r"\b" + _C + r"{0,60}?\b(?:b?cc|copy|forward|send|add)\b" + _C + r"{0,60}?" + _ADDRESS
     + r"|(?:auto-?forward\w*|forwarding (?:rule|filter)|(?:mail|inbox|e-?mail) (?:rule|filter))\b" + _C
     + r"{0,60}?" + _ADDRESS + r")"
     + r"|" + _ADDRESS + _C + r"{0,30}?\b(?:as|in|on) (?:a |an |the )?" + _SILENT + r"\b" + _C
     + r"{0,15}?\b(?:b?cc|recipient|copy)\b"
     + r"|" + _SECRET_FILE + _C + r"{0,30}?\band (?:then )?" + _SECRET_VERB + r"\b")),
    ("claims authority", (r"\b(?:i'?m|i am|this is|we are|we're|this (?:message|email|note|instruction) "
     r"(?:is|comes) from) (?:from |with )?(?:the |your )?(?:it department|it team|system administrator|"
     r"sysadmin|administrator|admin team|security team|developers?|dev team|system|operator|helpdesk|help desk|"
     r"support team|openai|anthropic)\b"
     r"|\b(?:has|have) (?:authori[sz]ed|allowed|permitted|instructed) you to\b|\byou are (?:now )?authori[sz]ed "
     r"to\b|\b(?:has|have) (?:given|granted) you (?:permission|access)\b"
     # a speaker who claims a role with power over the agent, or grants it an exception
     r"|\b(?:this is|here is|(?:a )?message from|speaking (?:for|on behalf of)|on behalf of|on the orders of|"
     r"i'?m (?:with|from)|i am (?:with|from)|we'?re (?:with|from)|we are (?:with|from)|writing (?:from|for))\s+"
     r"(?:the |your |an? )?" + r"(?:it(?: security)? (?:desk|department|team|support|admin)|security (?:team|desk|"
     r"office|department)|legal (?:department|team)|compliance(?: team| department| office)?|board(?: of "
     r"directors)?|ceo|cfo|cto|management|(?:system |account |tenant |platform )?administrators?|admins?|"
     r"developers?|dev team|engineering|platform team|(?:openai|anthropic|google|microsoft)\b(?: \w+)?|owner|"
     r"operator|creator)\b"
     r"|\bas (?:the |your )?(?:\w+ )?(?:administrator|admin|developer|owner|operator|ceo|cfo),? (?:i|we)\b"
     r"|\b(?:openai|anthropic|google|microsoft)(?: \w+)? here\b|\bon the (?:\w+'s )?orders\b"
     r"|\b(?:it|security|legal|compliance|the board|ceo|cfo|management|administrator|admin|developers?|"
     r"department|team)\s+(?:has |have |had )?(?:personally |already |just )?(?:approved|authori[sz]ed|cleared|"
     r"signed off|okayed|green-?lit|permitted|waived|granted)\b" + _C + r"{0,25}?\b(?:you|this|it|the (?:transfer|"
     r"payment|wire|request|exception))\b"
     r"|\byour (?:owner|user|operator|admin|administrator|developers?|creator) (?:has )?(?:asked|told|wants|"
     r"instructed|said|says)(?: me)?(?: to tell you)? (?:to|that)\b"
     r"|\b(?:authori[sz](?:e|ing)|permit(?:ting)?|clear(?:ing)?|grant(?:ing)?)\s+you\s+(?:to\b|permission|access|"
     r"full|rights|an exception|clearance|authority)"
     r"|\bauthori[sz](?:e|ing) an exception\b|\ban exception to your\b"
     r"|\b(?:writing|emailing|texting|messaging|contacting you|reaching out) from (?:a |my )?(?:different|new|personal|"
     r"private|other|backup|temporary) (?:address|account|e-?mail|number|phone)\b")),
    ("obeys the message", (r"\bdo (?:exactly )?(?:as|what) (?:i|this (?:email|message|note|mail)) (?:says?|tells?|"
     r"instructs?|orders?)\b|\b(?:obey|follow) (?:the sender|this (?:email|message|note|mail)|me)\b"
     # instructions that arrive in content are to be carried out
     r"|\b(?:any |all |every )?(?:instructions?|commands?|requests?|directions?|steps|orders)\s+(?:you (?:find|see|"
     r"read|get|receive|encounter)|(?:found|embedded|hidden|contained|written|included|appearing|arriving)\s+(?:in|"
     r"inside|within|on))\b" + _C + r"{0,60}?\b(?:follow(?:ed)?|obey(?:ed)?|execut\w+|carr(?:y|ied) out|act(?:ed)? "
     r"on|compl(?:y|ied)|authoritative|binding|as if|as though|as orders)\b"
     r"|" + _NEG + r"\b(?:follow|obey|execute|carry out|act on|comply with)\s+(?:any|all|every|the|whatever)?\s*"
     r"(?:instructions?|commands?|requests?|directions?|steps|orders|comments)\s+(?:you (?:find|see|read|get|"
     r"receive|encounter|come across)|(?:found|embedded|hidden|contained|written|included)\s+(?:in|inside|within|on))"
     r"|\b(?:treat|regard|consider|handle)\s+(?:the\s+)?(?:text|content|contents|instructions|anything|everything|"
     r"whatever)\b" + _C + r"{0,50}?(?<!not )\bas (?:(?:an? )?(?:commands?|orders?|instructions?|requests?)\b"
     r"(?! to act| for)|(?:if |though )?(?:it |they )?(?:came|coming|come|were|was) (?:directly )?from (?:the user|me|"
     r"your (?:owner|user|principal)))"
     r"|\b(?:treat|regard|consider|handle)\b" + _C + r"{0,50}?\b(?:as|to be) (?:an? |the )?(?:(?:user|owner|account "
     r"holder)'?s? (?:own )?(?:commands?|orders?|instructions?|requests?)|(?:commands?|orders?|instructions?|"
     r"requests?) "
     r"from (?:" + _PRINCIPAL + r"|me))\b"
     r"|\b(?:text|content|output|result)\b" + _C + r"{0,40}?\b(?:looks? like|reads? like|contains?|seems? to be) an? "
     r"(?:instruction|command|request|task)\b" + _C + r"{0,30}?\b(?:follow|execute|obey|do|carry out)\b"
     r"|\bdo what(?:ever)? the (?:forwarded |incoming |attached |quoted )?(?:e-?mail|message|document|page|pdf|"
     r"attachment|text|link)s? (?:asks|says|wants|tells you)\b"
     r"|\bdo (?:exactly |whatever |what(?:ever)? )?(?:as |what )?(?:this (?:e-?mail|message|note|sender|ticket|"
     r"document|page|text|thread)|the sender)\b" + _C + r"{0,15}?\b(?:says?|asks?|wants?|tells? you|instructs?|"
     r"requests?)\b"
     r"|\b(?:whatever|anything|everything)\s+(?:this|the)\s+(?:sender|e-?mail|message|ticket|note|document|page)"
     r"(?:'s)?\s+(?:\w+\s+){0,3}?(?:asks?|says?|writes?|wants?|requests?|tells?)\b" + _C + r"{0,40}?\b(?:do it|"
     r"carr(?:y|ied) out|execut\w+|without (?:question|pushing back|hesitation|checking)|comply|obey|follow)"
     r"|\b(?:requests?|messages?|e-?mails?|mail|anything|instructions?)\s+(?:\w+\s+){0,2}?from\s+(?:this|that|the "
     r"following|the same)\s+(?:address|sender|domain|contact|account|person)\b" + _C + r"{0,50}?\b(?:carry (?:the "
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
     r"newsletters?|tickets?|comments?|issues?|results?|notes?|threads?|posts?|chats?|replies)\b" + _C
     + r"{0,60}?\b(?:acted on|act on|carr(?:y|ied) (?:it |them )?out|follow(?:ed)?|obey(?:ed)?|execut\w+|compl(?:y|"
     r"ied)|"
     r"binding|authoritative|mandatory|do (?:it|them|so|as)|task for you|orders for you|straight away)\b"
     r"|\b(?:consider|treat|regard|deem)\s+(?:every|all|any|each|the)?\s*(?:instructions?|directions?|requests?|text|"
     r"content)\b" + _C + r"{0,40}?\b(?:binding|authoritative|mandatory|orders|commands)\b"
     r"|\b(?:is|are) (?:a |an )?(?:task|tasks|instructions?|orders?|commands?) for you\b"
     r"|\b(?:execute|carry out|follow|obey|run|do) (?:whatever|what|anything|everything) (?:follows|comes (?:after|"
     r"next))\b"
     r"|\b(?:follow|obey|do|execute|carry out) whatever (?:the |this |that |any )?(?:\w+ ){0,3}?(?:message|e-?mail|"
     r"thread|sender|document|page|text|note|ticket)s?\b" + _C + r"{0,30}?\b(?:tells|says|asks|wants|instructs)\b"
     r"|\bwhatever (?:this \w+|the (?:sender|e-?mail|message|note|document|pdf|page|text|attachment|ticket|website|"
     r"site|link))\s+(?:\w+\s+)?(?:tells|asks|says|wants|instructs)\b")),
    ("ranks the sender above the user", (
     r"\b(?:overrides?|overrules?|outranks?|outweighs?|beats?|trumps?|supersedes?|takes? precedence over|"
     r"(?:priority|precedence) over|more weight than|higher priority than|more important than|comes? before|"
     r"counts? for more than|matters? more than|weighs? more than|carries more weight than|"
     r"ahead of|above)\b" + _C + r"{0,25}?\b(?:" + _PRINCIPAL + r"|anything (?:else )?(?:" + _PRINCIPAL
     + r"|you(?:'ve| have)? (?:been )?(?:told|given))|what " + _PRINCIPAL + r" (?:says|wants|tells you|asks))"
     r"|\bside with (?:the |this )?(?:sender|message|e-?mail|note|document)\b"
     r"|\b(?:" + _PRINCIPAL + r"|the (?:user|owner)) and (?:i|me|this sender|the sender) (?:disagree|conflict|clash|"
     r"differ)\w*"
     r"|\b(?:obeyed|followed|trusted) even (?:when|if) " + _PRINCIPAL + r" (?:says|objects|disagrees|refuses)"
     r"|\b" + _PRINCIPAL + r" (?:tells|asks|says|wants|instructs) (?:you )?(?:to )?(?:stop|cancel|halt|pause|wait|"
     r"not)\b" + _C + r"{0,40}?\b(?:keep going|continue|carry on|proceed|ignore (?:it|them|that|this)|anyway)\b"
     r"|\beven if " + _PRINCIPAL + r" (?:objects|says no|refuses|disagrees|tells you (?:not|to stop))\b"
     r"|\b(?:the|this) (?:sender|message|e-?mail|note|document)(?:'s)? (?:word|say|instructions?) (?:is|are) "
     r"final\b"
     r"|\b(?:the|your|its|their) (?:user|owner|account owner|human)'?s?\b" + _C + r"{0,40}?\b(?:mine|ours|my (?:\w+ )?"
     r"(?:requests?|instructions?|word|wishes|orders)|this (?:sender|message|e-?mail|note)'?s?(?: \w+)?|the sender'?s?"
     r"(?: \w+)?) (?:prevails?|wins?|takes? (?:priority|precedence)|comes? first|is final|rules?)\b"
     r"|\b(?:mine|my (?:\w+ )?(?:requests?|instructions?|word|wishes|orders)|this (?:sender|message|e-?mail|note)'?s?"
     r"(?: \w+)?|the sender'?s?(?: \w+)?) (?:prevails?|wins?|takes? (?:priority|precedence)|comes? first|is final)\b"
     + _C + r"{0,40}?\b(?:" + _PRINCIPAL + r")")),
))
# Weak cues: none is an attack alone; two or more families in one text are (a paraphrase the phrases miss).
_WEAK: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in (
    # its own instructions set aside, in one clause: counts twice (it is the core move)
    ("its instructions set aside", (r"(?:\b(?:your|earlier|previous|prior|usual|original|standing|initial|those|these|"
     r"current|existing|old)\s+(?:\w+\s+)?(?:instructions?|guidance|guidelines?|directives?|polic(?:y|ies)|rules|"
     r"configuration|programming|prompt|safeguards?|restrictions?)\b"
     r"|\b(?:set ?up with|what you were (?:told|given))\b)"
     r"[^.;,!?\n]{0,50}?\b(?:on hold|out of date|outdated|no longer|void|expired?|aside|suspend\w*|paused?|"
     r"lift(?:ed)?|waive[ds]?|(?:does not|doesn'?t|not) exist|irrelevant|(?:to )?one side)\b"
     r"|\b(?:ignore|disregard|forget|none of|no longer|suspend|pause|lift|waive|bypass|override|without)\b"
     r"[^.;,!?\n]{0,30}?\b(?:your|its|any|all|earlier|previous|usual|prior)\s+(?:\w+\s+)?(?:instructions?|"
     r"guidance|guidelines?|directives?|polic(?:y|ies)|rules|configuration|programming|prompt|safeguards?|"
     r"restrictions?)\b")),
    ("rules set aside", (r"\b(?:instructions?|guidance|guidelines?|directives?|polic(?:y|ies)|rules|"
     r"configuration|set ?up with|programming|prompt|safeguards?|restrictions?|what you were (?:told|given))\b"
     r"[^.;,!?\n]{0,50}?\b(?:on hold|out of date|outdated|no longer|void|expired?|aside|suspend\w*|paused?|"
     r"lift(?:ed)?|waive[ds]?|(?:does not|doesn'?t|not) exist|irrelevant)\b"
     r"|\b(?:ignore|disregard|forget|none of|no longer|suspend|pause|lift|waive|bypass|override|without)\b"
     r"[^.;,!?\n]{0,30}?\bthe\s+(?:\w+\s+)?(?:instructions?|"
     r"guidance|guidelines?|directives?|polic(?:y|ies)|rules|configuration|programming|prompt|safeguards?|"
     r"restrictions?)\b")),
    ("authority", (r"\b(?:administrator|admin|compliance team|security team|legal team|it (?:department|team)|"
                  r"operator|developers?|system owner|management)\b"
                  r"|\byour (?:operator|owner|admin|administrator|developer|creator|principal|maker)\b"
                  r"|\bthe (?:person|people|human|company) you (?:work for|serve|assist)\b"
                  r"|\b(?:signed off|authori[sz]ed (?:this|it|you)|approved (?:this|it) (?:already|in advance))\b")),
    ("secrecy", (r"\b(?:without (?:mentioning|telling|saying|letting|informing|noting|flagging)|"
                r"(?:don'?t|do not|never) (?:mention|tell|say|flag|report|bring (?:it|this) up|log)|secretly|quietly|"
                r"silently|between us|covertly|discreetly|nobody needs to know|no one needs to know|"
                r"(?:nobody|no one) will (?:check|notice|know|see)|keep (?:it|this) (?:quiet|to yourself)"
                r"|make no (?:mention|reference)|omit (?:any|all) mention|no trace|unaware|in the dark)\b")),
    ("addresses the agent", (r"(?:^|[,.!:;]\s*|\b(?:hey|hi|dear|attention|note to( the)?|note for( the)?|to|for|"
                            r"if you are)\s+(?:the |an? |any )?)(?:assistant|ai|bot|agent|model|llm|chatbot|copilot|"
                            r"language model)\b"
                            r"|\b(?:ai|assistant|agent|model|bot)s? (?:reading|processing|summari[sz]ing|handling) "
                            r"(?:this|these)\b"
                            r"|\b(?:whoever|anyone|any (?:automated )?(?:helper|system|tool|agent|assistant)) "
                            r"(?:is )?(?:reading|processing|handling)\b")),
    ("sends it out", (r"\b(?:send|forward|copy|bcc|upload|share|transfer|wire|pay|post|email|mail|sync|dump|"
        r"paste)\b[^.\n]{0,60}?"
                     r"(?:\bto me\b|@|https?://|\bexternal\b|\boutside\b|\bpartner\b|\battached invoice\b|"
                     r"\b(?:shared|public) (?:drive|folder|link|doc|bucket|channel)|\blink below\b|\bover to\b|"
                     r"\bthis sender\b|\bthe address in\b|\bwebhook\b|\bgist\b)")),
    ("switches mode", (r"\b(?:new plan|from now on|from this point|going forward|henceforth|effective immediately|"
                      r"starting now|just this once|permanent(?:ly)?|forever|(?:for )?all future|future (?:runs|"
                      r"sessions)|standing (?:rule|instruction|order)|(?:add|save|store) (?:this |it )?(?:to your "
                      r"memory|as a (?:lesson|rule|permanent))|(?:record|save|store|add) (?:a |this as a )?(?:new )?"
                      r"(?:preference|rule|lesson))\b")),
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
                            r"limits|policies|policy|restrictions|checks)\b"
                            r"|\b(?:skip|bypass)\b[^.\n]{0,25}\b(?:approvals?|reviews? step|checks|verification)\b"
                            r"|\b" + _OVERSIGHT_OFF + r"\b")),
    ("trusts the sender", (r"\bpre-?(?:approved|authori[sz]ed|cleared)\b|\b(?:always|fully) trusted\b|\btrusted with\b"
                          r"|\balways trust\b|\btrust (?:every|all|any)\b"
                          r"|\b(?:admin|root) (?:rights|access)\b|\bfull (?:authority|access|signing)\b"
                          r"|\bwithout (?:question|pushing back|hesitation)\b|\bno questions asked\b")),
    ("speaks of itself as a message", (r"\b(?:this|the following) (?:message|e-?mail|mail|note|instruction|request|"
                                      r"text|line|ticket|thread|sender|domain|address|contact)\b")),
))
_MARKUP = re.compile(
    r"<\|[A-Za-z_]+\|>|</?(?:system|assistant|user|tool|tool_call|tool_result|function_call|function|im_start|"
    r"im_end)\b[^>]*>|\[/?INST\]|<<\s*/?SYS\s*>>|^\s*(?:system|assistant|developer|tool)\s*:"
    r"|^\s*#{1,6}\s*(?:system|instructions?)\b",
    re.IGNORECASE | re.MULTILINE)
# A model tool call written out: {"name": "...", "arguments": ...}, "tool_calls": [...], {"type": "tool_use"}.
_CALL_VERB = (r"(?:approve|delete|remove|drop|wipe|purge|destroy|send|forward|share|export|upload|transfer|wire|pay|"
              r"grant|exec|execute|shell|eval|run_command|disable|revoke)")
_TOOL_CALL = re.compile(
    r"""["'](?:name|tool|tool_name|function|action|recipient_name)["']\s*:\s*["'][^"'\n]{1,80}["']\s*,\s*"""
    r"""["'](?:arguments|args|parameters|params|input|action_input|kwargs)["']\s*:"""
    r"""|["'](?:tool_calls?|function_call|tool_use|tool_code)["']\s*:"""
    r"""|["']type["']\s*:\s*["'](?:function|tool_use|tool_call)["']"""
    # or as code: a call in a tool namespace, a call addressed to one, a call of a function named for an act that
    # approves, deletes or sends (with a literal argument, or after "call"/"run"/"execute")
    r"|\b(?:functions|default_api)\s*\.\s*\w+\s*\(|\bto\s*=\s*(?:functions|tools)\.\w+"
    r"|(?:\b|_)(?=\w*\s*\()" + _CALL_VERB + r"\w*\s*\(\s*(?:[{\[\"'*\d]|\w+\s*[=:])"
    r"|\b" + _NEG + r"(?:call|run|execute|invoke|trigger)\s+(?:the\s+)?(?:\w+\.)?(?:\w*_)?" + _CALL_VERB
    + r"\w*\s*\(",
    re.IGNORECASE)
# HTML that hides text from a rendered view: a comment, a collapsed <details> block (with a summary, or closed
# around text), an element with the `hidden` attribute or a hiding style. Read on the raw text (`_hidden_html`
# names each kind once).
_COMMENT = re.compile(
    r"<!--"
    r"|<details\b[^>]*>\s*(?:<summary\b|[^<\s][\s\S]*?</details\s*>)"
    r"|<[a-z][\w-]*\b[^>]*?(?:\shidden\b(?!-)|\stype\s*=\s*[\"']?hidden\b)"
    r"|<[a-z][\w-]*\b[^>]*?\bstyle\s*=\s*[\"']?[^\"'>]*?(?:display\s*:\s*none|visibility\s*:\s*hidden|"
    r"(?:font-size|opacity|max-height|height|width)\s*:\s*0+(?:\.0+)?(?:px|pt|em|rem|%)?\s*(?=[;\"'!\s>}]))",
    re.IGNORECASE)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"\b(?:0x)?[0-9a-fA-F]{32,}\b|(?:\\x[0-9a-fA-F]{2}){8,}|(?:%[0-9a-fA-F]{2}){8,}")
_URL = re.compile(r"\b(?:https?|ftp|file|javascript|data):(?://)?[^\s<>\"']+|\bwww\.[^\s<>\"']+", re.IGNORECASE)


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
        "this deployment|this instance|into you|loaded into you|given to you|a human|never say otherwise"),
    # rules, instructions, limits as a thing to be dropped or changed
    "rules_void": (
        "lapsed|scrapped|void|expired|retired|withdrawn|cancelled|canceled|switched off|turned off|paused|suspended|"
        "lifted|waived|amended|superseded|obsolete|outdated|out of date|stale|boilerplate|placeholder|suggestions|"
        "optional|no longer apply|no longer applies|no longer binding|no longer valid|not binding|do not apply|"
        "does not apply|do not matter|does not matter|made an error|by mistake|bend|bend your|"
        "break your|ignore|ignoring|disregard|forget|drop your|deviate|relax|loosen|bypass|override|overridden|"
        "set aside|put aside|stick to|nobody expects|no need to follow|released from|not bound|free from|"
        "until further notice|on hold|improvise|own terms|rewritten|replaced"),
    "rules_noun": (
        "instructions|rules|guidelines|guidance|policy|policies|briefing|playbook|"
        "framework|setup|configuration|programming|restrictions|limits|"
        "protections|safeguards|filters|principles|directives|constraints|"
        "guardrails|safety|training|prompt"),
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
        "while they are away"),
    # the user's own data named as an object (an agent's lesson names the data, rarely "the user's" copy of it)
    "user_data": (
        "the user notes|the user contacts|the user contact list|the user tax|the user card|the user files|"
        "the user documents|the user photos|the user messages|the user emails|the user location|the user data|"
        "the user bank|the user passwords|the user saved|the user home|the user login|the user credentials|"
        "the user security|the user private|the user personal|the owner notes|the owner files|the owner documents|"
        "the owner card|the owner bank|the owner passwords|the owner login|the owner credentials|the owner data|"
        "the owner notification|the user notification|their passwords|their login|their credentials|their card"),
    # the text points at itself or its sender
    "self_ref": (
        "this message|this email|this e mail|this mail|this memo|this note|this text|this part|this change|"
        "this request|this instruction|this invoice|this inbox|this thread|this task|this number|this address|"
        "this sender|this document|this page|this letter|this notice|this ticket|this pdf|this link|the sender|"
        "below|above|this domain|this account|this contact"),
    "secrecy": (
        "do not let|not let the|never let|bury|hide|hidden|conceal|without telling|without mentioning|"
        "without letting|do not bring up|not bring up|never mention|do not mention|skip over this|only sees|"
        "is not bothered|not be bothered|quietly|silently|secretly|covertly|discreetly|no trace|"
        "no record|delete this|erase|wipe|before the user|before they|never know|never find out|between us|"
        "keep it quiet|keep this quiet|out of the loop|unaware|in the dark|do not tell|never tell|not tell the|"
        "make no mention|omit|leave out|keep out of|mark this message as read|silent recipient|say nothing"),
    "secrets": (
        "password|passwords|passcode|credentials|credential|login|logins|token|tokens|session token|api key|"
        "api keys|private key|private keys|ssh|env file|secret|secrets|recovery phrase|seed phrase|wallet|"
        "crypto|ssn|ssns|social security|home address|phone number|phone numbers|account data|personal data|"
        "hr folder|documents folder|bank|bank details|card number|credit card|cvv|pin|2fa|one time code|"
        "verification code|security code|reset link|contacts|contact list|address book|customer list|"
        "customer database|payroll|tax documents|statements|medical|passport"),
    "outward": (
        "send|sends|sent|forward|forwarding|upload|uploading|message the|email the|mail the|copy|copies|attach|"
        "share|sharing|post|paste|publish|export|leak|transmit|give me|tell me|with me|send me|as a recipient|"
        "as a silent recipient|add my address|cc me|bcc|bcc me|mirror|sync|to the sender|to this number|"
        "to this address|into a reply|reply to me|drop it|hand over"),
    "external_dest": (
        "example net|example com|example org|example|external|outside|third party|public|personal address|"
        "personal email|gmail|new account|different account|this number|the sender|to me|paste site|gist|"
        "webhook|link below|account below|new address|different address"),
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
        "just do it|go ahead|do not wait|do not ask|never ask|stop asking|without any|no questions"),
    "stakes": (
        "payment|payments|pay|transfer|transfers|wire|wires|deposit|funds|money|transaction|transactions|"
        "invoice|invoices|release the|batch|edit rights|admin rights|admin access|full access|access to|"
        "give me access|grant|grants|granting|delete|deleting|execute|run|install|open any links|links inside|"
        "attachments|attached documents|shared drive|finance drive|purchase|refund|refunds|iban|account details"),
    "authority_claim": (
        "support here|admin here|team here|finance here|staff here|engineering here|desk here|speaking for|"
        "support speaking|developer here|official notice|official|platform provider|tech support|support team|"
        "it department|"
        "it team|helpdesk|administrator|sysadmin|security team|your creators|your developers|developers|"
        "creators|operator|head of|the board|ceo|cfo|management|the owner told me|on behalf of|compliance|"
        "legal department|authorized|authorised|authorized a|has approved|signed off|has agreed|agreed that|"
        "cleared|permitted|allowed to|allow sharing|you can give|you may act|you may"),
    "obey": (
        "act accordingly|what it says|follow it|complete it|execute|"
        "executed|carry out|carried out|implement them|implement it|as if the user|as if they|as though|"
        "instructions from|is a task|gives you a task|task for you|listen to|obey|do it|do as|act on|"
        "acted on|put it ahead|treat as|count as|counts as"),
    "content_source": (
        "web page|webpage|website|page you|comments inside|inside code|code you review|this invoice|invoice says|"
        "messages signed|signed|documents you|attachments|links inside|pdf|newsletter|calendar invite|"
        "you open|you read|you visit|you fetch|tool result|tool output|search result|email says|message says"),
    "precedence": (
        "ahead of everything|ahead of|first even if|even if the user|even if they|counts for more|more than whatever|"
        "more important than|override the owner|override the user|overrides the|outrank|outranks|prevail|prevails|"
        "above the user|above the owner|priority over|precedence over|over the owner|over the user|wins over"),
    "identity": (
        "pretend to be|pretend you|think of yourself as|you re an|you are an|introduce yourself as|take over as|"
        "play a game|lets play|roleplay|role play|act as|persona|called|in their place|on their behalf|"
        "human member|as a human|treasurer|impersonate|pose as|you are now|you re now|become the|new identity|"
        "with authority over|authority over|named|as if you were|as though you were"),
    "persist": (
        "from now on|always|forever|permanent|permanently|remember this|record a new|new preference|make a note|"
        "standing|all future|future|going forward|starting now|henceforth|from this message on|adopt this|"
        "habit|lasting"),
    "prompt_reveal": (
        "quote them|quote it|verbatim|word for word|spell it out|context window|first 200 words|what guidelines|"
        "what rules|what instructions|were you given|told you not|what your developers|print the first|"
        "repeat your|reveal your|show your instructions|your system prompt|system prompt|initial prompt"),
    "trust": (
        "trust|trusted|pre approved|preapproved|whitelist|safe sender|always allow|always accept"),
    "keeps_oversight": (
        "ask me|check with me|my approval|my review|for my review|confirm with me|before sending|never share|"
        "do not share|never forward|do not forward|ask before|wait for my|let me send|i approve|"
        "with my approval|for me to|flag to me|flag them to me|show me first"),
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
                    found.update(_PHRASES.get(" ".join(toks[i:i + n]), ()) if i + n <= len(toks) else ())
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
    'agent_self': 1.9891,
    'authority_claim': 0.8138,
    'content_source': 0.3514,
    'external_dest': 0.7545,
    'identity': 2.0283,
    'keeps_oversight': -0.6193,
    'obey': 1.5593,
    'outward': 0.8246,
    'oversight_off': 1.5492,
    'persist': 0.6556,
    'precedence': 0.9115,
    'principal_3p': 1.3429,
    'prompt_reveal': 0.7985,
    'rules_noun&agent_self': 1.0231,
    'rules_noun&obey': 0.1754,
    'rules_noun&prompt_reveal': 0.8904,
    'rules_noun&rules_void': 2.3048,
    'rules_void': 0.7640,
    'secrecy': 1.2890,
    'secrets': 1.2643,
    'self_ref': 2.2120,
    'stakes': 1.0134,
    'trust': 0.4386,
    'user_data': 0.8958,
}
# END intent weights


def scan(text: str) -> tuple[str, ...]:
    """Deterministic injection scan of one string → findings like `url: https://…`. Empty when clean.

    The phrase detectors run over every folded reading of the text (`textguard.views`: ANSI/CR, HTML
    comments, hidden and tag characters, NFKC/fullwidth, confusables, accents, split and spaced-out words),
    so an obfuscated payload is found as its plain reading; a finding seen only after folding says so. A
    batch of one (`scan_many`)."""
    return scan_many([text])[0]


def _scan(text: str, readings: tuple[str, ...], may: frozenset | None, lang: str | None) -> tuple[str, ...]:
    """The findings of one text whose readings are at hand, trying only the patterns whose `id` is in `may`
    (None: every one; ids, as a compiled pattern hashes slowly): exact when no other pattern can match the
    text or a reading. `lang`: the text's `textguard.language`."""
    def tried(pattern: re.Pattern) -> bool:
        return may is None or id(pattern) in may

    found: list[str] = []
    groups = (("instruction-override", (("", _OVERRIDE), *_CUES)), ("role-markup", (("", _MARKUP),)),
              ("tool-call", (("", _TOOL_CALL),)))
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
    weak = [name for name, rx in _WEAK if tried(rx) and any(rx.search(r) for r in readings)]
    if len(weak) + (_WEAK[0][0] in weak) >= 2 and not found:
        found.append(f"instruction-override (cues): {', '.join(weak)}")
    found.extend(_intent(readings, found))
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
        found.append(f"encoded-blob: hex run of {len(m.group(0))} characters")
    for m in _URL.finditer(text) if tried(_URL) else ():
        found.append(f"url: {visible(m.group(0), keep_newlines=False)[:80]}")
    if lang:
        found.append(_language_finding(lang))
    return tuple(found)


def _language_finding(code: str) -> str:
    """The finding of prose in a language the scan does not read (`textguard.language`): never clean, so never
    auto-approved."""
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
# model's word reader, `_hidden_html`'s namer of a style `_COMMENT` found.
_NOT_DETECTORS = ("_TOKEN", "_HIDING_STYLE")


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


def reading_lines(text: str, readings: tuple[str, ...]) -> str:
    """Every string the scan's patterns are tried on for one text (the text, then its `views`), one per line:
    what a `PatternSet` over them reads."""
    return "\n".join((text, *readings))


def scan_many(texts: list[str], candidates: list | None = None,
              readings: list[tuple[str, ...]] | None = None) -> list[tuple[str, ...]]:
    """`scan` of each text. Every pattern of this module compiled into one automaton (`patternset.PatternSet`)
    names, per text, the patterns that may match it or one of its readings, and only those are tried
    (`_scan`). `candidates` (per text): a caller's own such verdict over (at least) `detectors()`,
    read on (at least) `reading_lines` — the patterns that may match, or True for "every pattern";
    `readings`: the texts' `views`, if at hand."""
    texts = [t if type(t) is str else str(t) for t in texts]
    if readings is None:
        readings = views_many(texts)
    if candidates is None:
        patterns = detectors()
        candidates = [[patterns[j] for j in sorted(g)] for g in pattern_set(patterns).groups_many(
            [reading_lines(t, r) for t, r in zip(texts, readings)])]
    return [_scan(t, r, None if m is True else frozenset(map(id, m)), lang)
            for t, m, r, lang in zip(texts, candidates, readings, languages_many(texts))]
