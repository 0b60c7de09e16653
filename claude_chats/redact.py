"""Secrets out of text before it leaves the machine.

``redact(text)`` returns ``text`` with every secret it recognises replaced by
a typed placeholder such as ``[REDACTED:aws-access-key]``; ``scan(text)``
says where they are (``Finding(kind, start, end)``; never the secret itself,
so findings are safe to log). Sync calls ``redact`` on each message before
it is embedded by a remote provider or pushed to a remote Postgres.

What is recognised: tokens with a distinctive shape (AWS access key ids;
GitHub classic, fine-grained, OAuth and app tokens; OpenAI, Anthropic, Google,
Slack, Stripe, GitLab, npm, PyPI, Hugging Face, SendGrid keys; JWTs; private
key blocks), secrets known by their context (passwords in connection URLs and
``curl -u``, ``Authorization`` / ``Bearer`` headers), and assignments such as
``AWS_SECRET_ACCESS_KEY=``, ``*_TOKEN:``, ``PASSWORD=``, ``"api_key": ...``,
``--password ...`` whose value looks random enough to be a secret. Ordinary
code is left alone: hashes in lock files, UUIDs, git SHAs, base64 of ordinary
data, public keys and certificates, variables and placeholders (``$TOKEN``,
``${DB_PASSWORD}``, ``<your-key>``, ``os.environ[...]``).

Fast and cheap to import: stdlib ``re`` only, patterns compiled on first use.
Every pattern starts with a literal (``ghp_``, ``AKIA``, ``eyJ``...), which
``re`` searches for at memchr speed, and the context rules start from
keywords found in the lower-cased text; no pattern can backtrack beyond a
bounded window, so hostile text costs linear time. ``redact`` is idempotent.
"""

import math

PLACEHOLDER = "[REDACTED:{}]"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


class Finding(tuple):
    """One secret in a text: ``(kind, start, end)``, its span being ``text[start:end]``.

    A plain tuple (``typing`` / ``collections`` would cost the import more than the module itself).
    """

    __slots__ = ()

    def __new__(cls, kind, start, end):
        return tuple.__new__(cls, (kind, start, end))

    kind = property(lambda self: self[0])
    start = property(lambda self: self[1])
    end = property(lambda self: self[2])

    def __repr__(self):
        return f"Finding({self[0]!r}, {self[1]}, {self[2]})"


def placeholder(kind):
    return PLACEHOLDER.format(kind)


def redact(text):
    """``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    return redact_findings(text)[0]


def redact_findings(text):
    """``(redacted text, findings)``; the findings' spans refer to the original text."""
    findings = scan(text)
    if not findings:
        return text, findings
    out, last = [], 0
    for f in findings:
        out.append(text[last:f.start])
        out.append(placeholder(f.kind))
        last = f.end
    out.append(text[last:])
    return "".join(out), findings


def original_span(text, start, end):
    """The span of ``text`` that ``redact(text)[start:end]`` came from.

    Chunk offsets of text embedded redacted are offsets into the redacted text;
    this maps them onto the original (a span edge inside a placeholder moves to
    the edge of the secret it replaced, so the span covers it whole).
    """
    shift, findings = 0, scan(text)
    edges = []
    for f in findings:
        at = f.start + shift                        # where the placeholder starts in the redacted text
        edges.append((at, at + len(placeholder(f.kind)), f))
        shift += len(placeholder(f.kind)) - (f.end - f.start)
    return _to_original(start, edges, True), _to_original(end, edges, False)


def redacted_span(text, start, end):
    """The span of ``redact(text)`` that ``text[start:end]`` became (``original_span``'s inverse:
    a span edge inside a secret moves to the edge of its placeholder)."""
    shift, out = 0, [start, end]
    for f in scan(text):
        size = len(placeholder(f.kind))
        for n, offset in enumerate((start, end)):
            if offset >= f.end:
                out[n] += size - (f.end - f.start)
            elif offset > f.start:              # inside the secret: to the placeholder's edge
                out[n] = f.start + shift + (0 if n == 0 else size)
        shift += size - (f.end - f.start)
    return out[0], out[1]


def _to_original(offset, edges, is_start):
    shift = 0
    for first, last, f in edges:
        if offset <= first:
            break
        if offset < last:
            return f.start if is_start else f.end
        shift = f.end - last
    return offset + shift


def scan(text, tokens=True):
    """Secrets in ``text`` as ``Finding`` s, in order, without overlaps (``tokens=False``: only those
    known by their context, which ``redact_json`` looks for across a JSON document's strings)."""
    if not text or not isinstance(text, str):
        return []
    rules = _rules()
    found = []
    if tokens:
        for rule in rules.tokens:
            rule.find(text, found)
    _context(text, _lower(text), rules, found)
    if not found:
        return found
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    if "[REDACTED:" in text:   # placeholders are never part of a finding: redact(redact(t)) == redact(t)
        found = _outside_placeholders(text, found)   # before overlaps: a long finding dropped here
    kept, end = [], -1                                # must not take the shorter ones it covered along
    for f in found:
        if f.start >= end:
            kept.append(f)
            end = f.end
    return kept


def _outside_placeholders(text, findings):
    """The findings that do not overlap a ``[REDACTED:...]`` already in ``text`` (both are in order)."""
    kept, i, end = [], text.find("[REDACTED:"), -1
    for f in findings:
        while 0 <= i < f.end and end <= f.start:   # move to the first placeholder ending after f starts
            end = text.find("]", i)
            end = len(text) if end < 0 else end + 1
            if end <= f.start:
                i = text.find("[REDACTED:", end)
        if not (0 <= i < f.end and f.start < end):
            kept.append(f)
    return kept


def kinds():
    """Every kind of placeholder ``redact`` can write."""
    return list(_KINDS)


def may_hold(text, tokens=True):
    """Whether ``text`` holds anything a finding starts from: a token rule's literal (``_TOKEN_LITERALS``)
    or a context rule's keyword (``_context``); when not, ``scan`` finds nothing in it. What only shows
    recorded text (the hook's contexts) asks this first, and imports ``re`` and compiles the rules, about
    8 ms of a fresh process, only for a text that may hold a secret. ``scan`` itself does not: in bulk
    (sync) the screen's 37 look-ups cost more than the rules' scans they would spare."""
    if not text or not isinstance(text, str):
        return False
    if tokens and any(literal in text for literal in _TOKEN_LITERALS):
        return True
    low = _lower(text)
    return any(word in low for word in _CONTEXT_WORDS)


def screened(text):
    """``redact(text)``, without compiling the rules for a text ``may_hold`` clears."""
    return redact(text) if may_hold(text) else text


def _lower(text):
    """``text`` lower-cased with every character in its place (positions stay valid)."""
    low = text.lower()
    if len(low) != len(text):   # a few characters lower-case to two ("İ"): lower ASCII only
        low = "".join(c.lower() if c.isascii() else c for c in text)
    return low


# -- tokens of a distinctive shape -----------------------------------------------------

class _Token:
    """A pattern that starts with a literal, which ``re`` finds at memchr speed, and the kind of its matches.

    ``kind`` is a string or a function of the match (None: not a secret after
    all). ``left``: characters that must not come just before a match (a token
    inside a longer word is not a token). ``lead``: the token starts one
    character before the match, one of these (the pattern starts after it, at
    a literal ``re`` finds faster).
    """

    __slots__ = ("rx", "kind", "left", "lead")

    def __init__(self, pattern, kind, left=_ALNUM, lead=""):
        import re

        self.rx, self.kind, self.left, self.lead = re.compile(pattern), kind, left, lead

    def find(self, text, out):
        left, lead = self.left, self.lead
        for m in self.rx.finditer(text):
            start = m.start()
            if lead:
                start -= 1
                if start < 0 or text[start] not in lead:
                    continue
            if start and text[start - 1] in left:
                continue
            kind = self.kind if isinstance(self.kind, str) else self.kind(m)
            if kind:
                out.append(Finding(kind, start, m.end()))


class _PrivateKey:
    """``-----BEGIN ... PRIVATE KEY-----`` to its END line (or, for a copy cut short, to the end of its body).

    The END line is looked for with ``str.find``, once per block, so a text full
    of BEGIN lines costs linear time.
    """

    MAX_BLOCK = 65536
    KINDS = {"rsa": "rsa-private-key", "ec": "ec-private-key", "dsa": "dsa-private-key",
             "openssh": "openssh-private-key", "pgp": "pgp-private-key"}

    def __init__(self):
        import re

        self.rx = re.compile(r"-----BEGIN (?P<label>(?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?)"
                             r"PRIVATE KEY(?: BLOCK)?-----")
        self.end_rx = re.compile(r"-----END [A-Z ]{0,20}PRIVATE KEY(?: BLOCK)?-----")
        self.body_rx = re.compile(r"[A-Za-z0-9+/=\s\\:,.()-]{0,%d}+" % self.MAX_BLOCK)

    def find(self, text, out):
        pos, next_end = 0, -1
        while True:
            m = self.rx.search(text, pos)
            if m is None:
                return
            start, body = m.start(), m.end()
            if next_end < body:
                next_end = text.find("-----END ", body)
                if next_end < 0:
                    next_end = len(text) + 1
            end_line = self.end_rx.match(text, next_end) if next_end - body <= self.MAX_BLOCK else None
            end = end_line.end() if end_line else self.body_rx.match(text, body).end()
            out.append(Finding(self.KINDS.get(m.group("label").strip().lower(), "private-key"), start, end))
            pos = end


def _sk_kind(m):
    body = m.group(0)[3:]
    if body.startswith("ant-"):
        return "anthropic-api-key"
    return "openai-api-key" if _mixed(body) else None


def _a_kind(m):
    return "google-api-key" if m.group(0)[1] == "I" else "aws-access-key"


def _g_kind(m):
    head = m.group(0)[:4]
    if head == "glpa":
        return "gitlab-token"
    if head == "gith":
        return "github-fine-grained-token"
    return {"ghs_": "github-app-token", "gho_": "github-oauth-token"}.get(head, "github-token")


def _hf_kind(m):
    return "huggingface-token" if _mixed(m.group(0)[3:]) else None


# The literals every match of a token rule begins with (``_token_rules``: a new rule adds its own here;
# tests/test_redact.py checks that every secret of the corpus, alone and in words, holds one of them or a
# context keyword).
_TOKEN_LITERALS = ("-----BEGIN ", "eyJ", "sk-", "AKIA", "ASIA", "ABIA", "ACCA", "A3T", "AIza", "ghp_", "gho_", "ghu_",
                   "ghs_", "ghr_", "github_pat_", "glpat-", "GOCSPX-", "ya29.", "xox", "xapp-", "k_live_", "k_test_",
                   "whsec_", "npm_", "pypi-AgE", "hf_", "SG.")


def _token_rules():
    u = r"[A-Za-z0-9_-]"   # the URL-safe base64 alphabet
    return [
        _PrivateKey(),
        # The look-behind (one per "eyJ" found) keeps a long run of "eyJeyJ..." linear.
        _Token(r"eyJ(?<![A-Za-z0-9_-]eyJ)" + u + r"{8,4096}+\.eyJ" + u + r"{8,16384}+\." + u + r"{0,1024}+",
               "jwt", left=_ALNUM + "_-"),
        _Token(r"sk-(?:ant-[a-z]{2,8}\d\d-" + u + r"{20,400}+|(?:proj|svcacct|admin|None)-" + u + r"{20,400}+"
               r"|[A-Za-z0-9]{16,64}T3BlbkFJ[A-Za-z0-9]{16,64}+|[A-Za-z0-9]{32,64}+(?![_-]))", _sk_kind),
        _Token(r"A(?:(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}|Iza" + u + r"{35})(?![A-Za-z0-9])", _a_kind,
               left=_ALNUM + "/+"),
        _Token(r"g(?:h[pousr]_[A-Za-z0-9]{36,251}+|ithub_pat_[A-Za-z0-9]{22,64}_[A-Za-z0-9]{40,128}+"
               r"|lpat-" + u + r"{20,64}+)", _g_kind),
        _Token(r"GOCSPX-" + u + r"{24,64}+", "google-oauth-secret"),
        _Token(r"ya29\." + u + r"{20,2048}+", "google-oauth-token"),
        _Token(r"x(?:ox[abposr]-[0-9A-Za-z-]{10,256}+|app-\d-[A-Z0-9]{1,32}-\d{1,32}-[a-f0-9]{20,128}+)",
               "slack-token"),
        _Token(r"k_(?:live|test)_[0-9A-Za-z]{16,256}+", "stripe-key", lead="sr"),   # sk_live_, rk_test_...
        _Token(r"whsec_[A-Za-z0-9+/=]{24,128}+", "stripe-webhook-secret"),
        _Token(r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm-token"),
        _Token(r"pypi-AgE" + u + r"{50,512}+", "pypi-token"),
        _Token(r"hf_[A-Za-z]{34,64}+(?![A-Za-z0-9])", _hf_kind),
        _Token(r"SG\." + u + r"{22}\." + u + r"{43}(?![A-Za-z0-9])", "sendgrid-key"),
    ]


# -- secrets known by their context ----------------------------------------------------

class _Rules:
    def __init__(self):
        import re

        self.tokens = _token_rules()
        value = (r"(?:\"(?P<dq>[^\"\\\n]{1,512})\"|'(?P<sq>[^'\\\n]{1,512})'"
                 r"|(?P<bare>[^\s\"'`,;&(){}\[\]<>|]{1,512}+))")
        # NAME=value, NAME: value, "name": "value", name := value, :name => value
        self.assign = re.compile(r"(?:" + _NAME_WORDS + r")"
                                 r"(?P<tail>[A-Za-z0-9_.-]{0,30}?)[\"']?\s{0,4}(?::=|=>|[:=])\s{0,4}" + value,
                                 re.IGNORECASE)
        # prose: "my password is Tr0ub4dor&3", "the passphrase was 'c0rrect horse'" (a password word, is/was, a value)
        self.prose = re.compile(r"(?:passw(?:or)?d|passphrase|passcode)s?\s{1,4}(?:is|was)\s{1,4}"
                                r"(?:now\s{1,4}|still\s{1,4}|set\s{1,4}to\s{1,4})?(?P<v>[^\s]{1,512}+)", re.IGNORECASE)
        self.measure = re.compile(r"[0-9A-Za-z]{1,4}-[a-z]{3,}$")   # "8-characters", "2FA-protected": prose
        # --password value, --api-token=value
        self.flag = re.compile(r"(?:password|passwd|token|secret|key)(?P<tail>[A-Za-z-]{0,20}?)(?:=|\s+)" + value,
                               re.IGNORECASE)
        self.slack_webhook = re.compile(r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,256}+")
        self.scheme = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*$")   # before "://", in lower case
        self.name = re.compile(r"[a-z0-9_.-]*$")                          # before a keyword, in lower case
        self.name_word = re.compile(_NAME_WORDS)                          # in a JSON key, in lower case
        # what transcript.clean_text takes out of a message's text before it is redacted: ANSI escapes
        self.escapes = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[()][0-9A-Za-z]"
                                  r"|\x1b[@-_]?")
        self.url = re.compile(r"[^\s:/@?#'\"<>]{0,128}+:(?P<pw>[^\s@/?#'\"<>]{1,256}+)@")
        self.auth = re.compile(r"authorization[\"']?\s{0,4}[:=]\s{0,4}[\"']?\s{0,4}(?P<scheme>bearer|basic|token|digest"
                               r"|bot)\s+(?P<v>[A-Za-z0-9._~+/-]{8,4096}+=*)", re.IGNORECASE)
        self.bearer = re.compile(r"bearer\s+(?P<v>[A-Za-z0-9._~+/-]{20,4096}+=*)", re.IGNORECASE)
        self.curl = re.compile(r"curl\b[^\n|;&]{0,200}?\s(?:-u|--user)\s+[\"']?[^\s:\"']{1,64}:(?P<v>[^\s\"']{1,256})")


# The words that make a name (``NAME=``, ``"name":``, a JSON key) name a secret: ``secret_name``.
_NAME_WORDS = r"secret|token|passw(?:or)?d|passphrase|pwd|key|credentials?"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")   # of a name, after its keyword (lower case)

_rule_cache = []


def _rules():
    if not _rule_cache:
        _rule_cache.append(_Rules())
    return _rule_cache[0]


_KEY_NAMES = ("api", "access", "private", "auth", "signing", "encryption", "master", "secret", "client", "app",
              "license", "account", "service", "subscription", "session", "consumer")


_HEADER_WORDS = ("authorization", "bearer", "curl")
_ASSIGN_WORDS = ("secret", "token", "pass", "pwd", "key", "credential")
_CONTEXT_WORDS = ("://",) + _HEADER_WORDS + _ASSIGN_WORDS   # where ``_context`` starts looking


def _context(text, low, rules, out):
    """Findings of the rules that start at a keyword: URLs, headers, curl, assignments.

    Keywords are found with ``str.find`` (much faster than one regular
    expression of alternatives); at each, the rule's pattern is tried first
    (it fails at once on ordinary text) and the costlier checks come after. A
    name holding two keywords (``secret_key``) gives the same finding twice;
    ``scan`` keeps one.
    """
    find = low.find
    i = find("://")
    while i >= 0:
        _url(text, low, i, rules, out)
        i = find("://", i + 3)
    for word in _HEADER_WORDS:
        i = find(word)
        while i >= 0:
            if i == 0 or not low[i - 1].isalnum():
                _header(text, i, word, rules, out)
            i = find(word, i + 1)
    for word in _ASSIGN_WORDS:
        i = find(word)
        while i >= 0:
            _assignment(text, low, i, word, rules, out)
            i = find(word, i + 1)


def _url(text, low, i, rules, out):
    if low.startswith("hooks.slack.com/", i + 3):
        m = rules.slack_webhook.match(text, i + 3)
        if m is not None and low.startswith("https", i - 5):
            out.append(Finding("slack-webhook", i - 5, m.end()))
        return
    m = rules.url.match(text, i + 3)
    if m is None or _placeholder(m.group("pw")):
        return
    scheme = rules.scheme.search(low, max(0, i - 32), i)
    if scheme is not None and scheme.start() < i:
        out.append(Finding("url-password", m.start("pw"), m.end("pw")))


def _header(text, i, word, rules, out):
    m = getattr(rules, "auth" if word == "authorization" else word).match(text, i)
    if m is None:
        return
    value = m.group("v")
    if not (not _placeholder(value) if word == "curl" else _secretish(value, 8)):
        return
    kind = "password" if word == "curl" else "bearer-token"
    if word == "authorization" and m.group("scheme").lower() == "basic":
        kind = "basic-auth"
    out.append(Finding(kind, m.start("v"), m.end("v")))


def _assignment(text, low, i, word, rules, out):
    """A secret assigned to a name holding ``word`` at ``i``."""
    m = rules.assign.match(text, i)
    if m is None and word == "pass":
        m = rules.prose.match(text, i)
        if m is not None:
            _prose_password(low, i, m, rules, out)
            return
    if m is None:
        if low.find("--", max(0, i - 24), i) < 0:
            return
        m = rules.flag.match(text, i)
        if m is None:
            return
    start = rules.name.search(low, max(0, i - 40), i).start()
    prefix = low[start:i]
    if m.re is rules.flag and not prefix.startswith("--"):
        return
    if not _names_secret(prefix, word):
        return
    name = low[start:m.end("tail")]
    value_group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
    value = m.group(value_group)
    kind = _assignment_kind(name, value)
    if _secretish(value, 6 if kind == "password" else 8, m if value_group == "bare" else None) or \
            (not m.group("tail") and len(value) >= 6 and value.isdigit()):   # PASSWORD=84629175: digits too
        out.append(Finding(kind, m.start(value_group), m.end(value_group)))


def _names_secret(prefix, word):
    """Whether a name holding the keyword ``word`` after ``prefix`` (its lower-case characters before
    the keyword) names a secret: a ``key`` only as an api, access, private... key."""
    return word != "key" or prefix.rstrip("_.-").endswith(_KEY_NAMES)


_TRAILING = ".,;:!?)]}"
_QUOTES = "\"'`“”‘’"


def _prose_password(low, i, m, rules, out):
    """A password given in a sentence ("my password is X"): the word after is/was, less the sentence's
    punctuation and quotes around it, when it looks like a password (digits or symbols, not a word)."""
    if i > 0 and low[i - 1].isalnum():       # "bypass", "MyPassword is ...": not the word password
        return
    start, end = m.start("v"), m.end("v")
    text = m.string
    while end > start and text[end - 1] in _TRAILING + _QUOTES:
        end -= 1
    while start < end and text[start] in _QUOTES:
        start += 1
    value = text[start:end]
    if len(value) < 6 or value.isalpha() or rules.measure.match(value):
        return
    if _secretish(value, 6):
        out.append(Finding("password", start, end))


def _assignment_kind(name, value):
    if "pass" in name or "pwd" in name:
        return "password"
    if "aws" in name or "secretaccesskey" in name.replace("_", "").replace("-", ""):
        if len(value) == 40:
            return "aws-secret-key"
    if "token" in name:
        return "token"
    if "secret" in name:
        return "secret"
    if "key" in name:
        return "api-key"
    return "secret"


_KINDS = ("private-key", "rsa-private-key", "ec-private-key", "dsa-private-key", "openssh-private-key",
          "pgp-private-key", "jwt", "anthropic-api-key", "openai-api-key", "aws-access-key", "aws-secret-key",
          "google-api-key", "google-oauth-secret", "google-oauth-token", "github-token",
          "github-fine-grained-token", "github-oauth-token", "github-app-token", "gitlab-token", "slack-token",
          "slack-webhook", "stripe-key", "stripe-webhook-secret", "npm-token", "pypi-token", "huggingface-token",
          "sendgrid-key", "url-password", "bearer-token", "basic-auth", "password", "token", "api-key", "secret",
          "deep-json")


_PLACEHOLDER_WORDS = frozenset("""
changeme change_me changeit password passwd secret token none null nil undefined true false yes no
example sample dummy fake test testing redacted hidden masked xxx xxxx xxxxx xxxxxx todo tbd fixme
your_token your-token yourtoken your_password your_secret your_api_key mysecret mypassword
""".split())


def _placeholder(value):
    """A variable, template or obviously fake value rather than a secret."""
    v = value.strip()
    if not v:
        return True
    if v[0] in "$<{%[*`@!&\\" or v.startswith(("os.", "process.", "env.", "ENV[", "secrets.", "settings.",
                                               "config.", "self.", "this.", "vars.", "inputs.")):
        return True
    low = v.lower()
    if low in _PLACEHOLDER_WORDS or low.startswith(("your", "my_", "<", "example", "redacted", "xxx")):
        return True
    return len(set(v) - set("*xX.-_#•")) == 0


def _mixed(value):
    """At least two of lower case, upper case, digits: random, not a word."""
    lower = upper = digit = False
    for c in value:
        if c.islower():
            lower = True
        elif c.isupper():
            upper = True
        elif c.isdigit():
            digit = True
    return lower + upper + digit >= 2


def _entropy(value):
    counts = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def _secretish(value, min_len, m=None):
    """Whether an assigned ``value`` looks like a secret rather than code or prose.

    ``m``: the match of an unquoted value, to see whether code follows it.
    """
    if value is None or len(value) < min_len or _placeholder(value):
        return False
    if m is not None:
        rest = m.string[m.end():m.end() + 1]
        if rest == "(" or rest == "[":          # a call or an index: code, not a value
            return False
    if value.isdigit() or value.startswith(_PATHS):
        return False
    core = value.strip(".-_")
    if _IDENT_CHARS.issuperset(core) and not any(c.isdigit() for c in core):
        # identifier-like (get_password, self.token, AutoTokenizer): code unless long and random
        if len(core) < 20 or not _mixed(core) or _entropy(core) < 3.8:
            return False
    if " " in value:
        return False
    if not _mixed(value) and not (len(value) >= 16 and _entropy(value) >= 3.5):
        return False
    return _entropy(value) >= (2.5 if len(value) < 16 else 3.0)


_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.-")
_PATHS = ("/", "./", "../", "~/", "http://", "https://", "file:")   # a value starting so is a path, not a secret


# -- JSON: values named by their key ----------------------------------------------------

DEEP = "deep-json"   # the kind of a JSON value nested deeper than JSON_DEPTH, redacted whole
JSON_DEPTH = 32      # containers nested deeper are redacted whole (the real transcript lines nest 9
                     # deep; jsonl.dumps writes no deeper either)
_REACH = 1024        # characters: more than a context rule reads to find a secret reaching into a string
_names_seen = {}     # secret_name's answers: a transcript's keys are a few hundred names, again and again


def secret_name(name):
    """How a name (a JSON key, a variable, an option) names a secret: ``None`` (it does not),
    ``("value", name)`` (its value is one when it looks random enough: ``output_tokens``,
    ``password_hint``) or ``("any", name)`` (whatever its value: ``password``, ``api_key``,
    ``GITHUB_TOKEN``, ``client_secret``, ``credentials``); ``name``: its lower-case part that names
    the secret, as the assignment rule reads it (up to 40 characters before the keyword, 30 after).

    The one definition of a secret's name: ``"password": "..."`` or ``PASSWORD=...`` in a text is
    read with the same words (``_NAME_WORDS``) and ``_names_secret``; "any": the name ends with its
    keyword.
    """
    if not isinstance(name, str):
        return None
    if name in _names_seen:
        return _names_seen[name]
    low, rules, found = _lower(name), _rules(), None
    for m in rules.name_word.finditer(low):
        tail = low[m.end():]
        if len(tail) > 30 or not _NAME_CHARS.issuperset(tail):
            continue
        start = rules.name.search(low, max(0, m.start() - 40), m.start()).start()
        if not _names_secret(low[start:m.start()], m.group()):
            continue
        found = ("any" if not tail else "value", low[start:])
        if not tail:
            break
    if len(name) <= 100:
        if len(_names_seen) > 10_000:
            _names_seen.clear()
        _names_seen[name] = found
    return found


def redact_json(value, clean=None):
    """``(value, changed)``: a parsed JSON document with its secrets redacted as ``redact`` finds them
    in its text, and whether anything changed.

    Each string (a key too) goes through ``clean`` (``redact``, or the same remembering its answers);
    a value whose key names a secret whatever it holds (``secret_name``: ``password``, ``api_key``...)
    is redacted whole, a number or an object as well as a string; then the context rules run over
    the document written as compact JSON as it came (the message text's redaction sees it so), so
    a value is seen after its key as in the message text
    (``"output_tokens":...``, ``"Authorization":"Bearer ..."``, a sentence that a string ends and
    the next one goes on), and every value a finding reaches from outside it is redacted whole (one
    the string gives alone is ``clean``'s to make: there, the escapes of the JSON text, ``\\n``
    between two words, are not what the string holds). Containers nested deeper than ``JSON_DEPTH``
    are redacted whole: there is no depth past which nothing is redacted. Booleans and nulls are
    left as they are (they hold no secret). A string holding NULs or ANSI escapes, which the message
    text loses before it is redacted, is redacted without them when that finds a secret.
    """
    walk = _JsonWalk(clean or redact)
    new = walk.value(value, 0, None, None)
    if walk.leaves:
        found = scan("".join(walk.parts), tokens=False)
        if found:
            walk.redact_reached(found)
    return new, walk.changed


class _JsonWalk:
    """The document cleaned, and written as compact JSON as it was (as the message text holds it)
    in the same pass (``parts``); ``leaves``: ``(part, container, key)`` of every string and number
    of the cleaned document, in order (what a finding may redact)."""

    __slots__ = ("clean", "parts", "leaves", "changed", "quote")

    def __init__(self, clean):
        try:
            from _json import encode_basestring as quote
        except ImportError:  # pragma: no cover - not CPython
            from json.encoder import py_encode_basestring as quote
        self.clean, self.parts, self.leaves, self.changed, self.quote = clean, [], [], False, quote

    def leaf(self, text, parent, key):
        if len(text) > 2 * _REACH + 2:   # its middle is no finding's: one from outside reaches in less
            text = text[:_REACH] + "\n" + text[-_REACH:]
        if parent is not None:
            self.leaves.append((len(self.parts), parent, key))
        self.parts.append(text)

    def value(self, value, depth, parent, key):
        if isinstance(value, str):
            new = self.clean(value)
            if "\x00" in value or "\x1b" in value:   # the message text is redacted without them
                bare = _rules().escapes.sub("", value.replace("\x00", "")) if "\x1b" in value else \
                    value.replace("\x00", "")
                if self.clean(bare) != bare:
                    new = self.clean(bare)
            if new != value:
                self.changed = True
            self.leaf(self.quote(value), parent, key)
            return new
        if value is None or value is True or value is False:
            self.parts.append("null" if value is None else "true" if value else "false")
            return value
        if isinstance(value, (int, float)):
            self.leaf(repr(value), parent, key)
            return value
        if not isinstance(value, (dict, list)):
            return value
        emit = self.parts.append
        if depth >= JSON_DEPTH:
            self.changed = True
            emit(self.quote(placeholder(DEEP)))
            return placeholder(DEEP)
        if isinstance(value, list):
            out = [None] * len(value)
            emit("[")
            for n, item in enumerate(value):
                if n:
                    emit(",")
                out[n] = self.value(item, depth + 1, out, n)
            emit("]")
            return out
        out = {}
        emit("{")
        for k, item in value.items():
            if out:
                emit(",")
            new_key = self.clean(k)
            if new_key != k:
                self.changed = True
                while new_key in out:   # two keys redacted alike: both kept
                    new_key += "'"
            emit(self.quote(k))
            emit(":")
            named = secret_name(new_key)
            if named is not None and named[0] == "any" and _holds_value(item):
                self.changed = True
                self.value(item, depth + 1, None, None)   # written, for what follows it
                out[new_key] = placeholder(_assignment_kind(named[1], item if isinstance(item, str) else ""))
            else:
                out[new_key] = self.value(item, depth + 1, out, new_key)
        emit("}")
        return out

    def redact_reached(self, findings):
        """Each value a finding of the written document reaches from outside it, redacted whole."""
        from bisect import bisect_right

        offsets, at = [], 0
        for part in self.parts:
            offsets.append(at)
            at += len(part)
        starts = [offsets[n] for n, _parent, _key in self.leaves]
        for f in findings:
            n = max(bisect_right(starts, f.start) - 1, 0)
            text = self.parts[self.leaves[n][0]]
            if starts[n] < f.start and f.end < starts[n] + len(text) and \
                    (f.start - starts[n], f.end - starts[n]) in {(g.start, g.end) for g in scan(text, tokens=False)}:
                continue   # found in the string alone: clean's to find (as it holds it, without escapes)
            for start, (part, parent, key) in zip(starts[n:], self.leaves[n:]):
                if start >= f.end:
                    break
                if start + len(self.parts[part]) > f.start and not _redacted(parent[key]):
                    parent[key] = placeholder(f.kind)
                    self.changed = True


def _redacted(value):
    return isinstance(value, str) and value.startswith("[REDACTED:") and value.endswith("]")


def _holds_value(value):
    """Whether a value under a secret's name may hold the secret: a number, a string that is not a
    placeholder (``$TOKEN``, ``<your-key>``, ``[REDACTED:...]``) nor a path (``"PWD": "/work/proj"``),
    a container that is not empty."""
    if value is None or value is True or value is False:
        return False
    if isinstance(value, str):
        return not _placeholder(value) and not value.startswith(_PATHS)
    return bool(value) if isinstance(value, (dict, list)) else isinstance(value, (int, float))
