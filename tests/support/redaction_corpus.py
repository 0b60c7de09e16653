"""A labelled corpus for ``claude_chats.redact``: secrets and look-alikes that are not secrets.

Every secret is synthetic: correctly formatted (prefix, length, alphabet,
structure) but built here from fixed fake parts (a SHA-256 stream of a label),
so no live credential is pasted anywhere. The look-alikes are what a
conversation about code is full of: hashes in lock files, git SHAs, UUIDs,
base64 of ordinary data, public keys, variables and placeholders.

``SECRETS`` and ``NON_SECRETS`` are lists of ``Sample``; ``evaluate(redact)``
scores a redaction function on them (used by tests/test_redact.py and
scripts/bench_redact.py).
"""

import base64
import hashlib
import json
import uuid
from typing import NamedTuple

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


class Sample(NamedTuple):
    name: str
    text: str
    secret: str | None = None   # the exact secret substring (None: nothing to redact)
    kind: str | None = None     # the expected placeholder kind


def fake(label, n, alphabet=ALNUM):
    """``n`` characters of ``alphabet`` derived from ``label``: random-looking, fixed, fake."""
    out, counter = [], 0
    while len(out) < n:
        digest = hashlib.sha256(f"claude-chats fake {label} {counter}".encode()).digest()
        out.extend(alphabet[b % len(alphabet)] for b in digest)
        counter += 1
    return "".join(out[:n])


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(label, claims):
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{fake(label, 43, URLSAFE)}"


def pem(label, kind, lines=12, escaped=False, end=True):
    body = [fake(f"{label}/{i}", 64, B64) for i in range(lines)] + [fake(f"{label}/last", 24, B64) + "=="]
    parts = [f"-----BEGIN {kind}-----", *body] + ([f"-----END {kind}-----"] if end else [])
    return ("\\n" if escaped else "\n").join(parts)


def _s(name, template, secret, kind):
    return Sample(name, template.format(s=secret), secret, kind)


def _secrets():
    aws_id = "AKIA" + fake("aws-id", 16, UPPER + "234567")
    sts_id = "ASIA" + fake("sts-id", 16, UPPER + DIGITS)
    aws_secret = fake("aws-secret", 40, B64)
    ghp = "ghp_" + fake("ghp", 36)
    basic = base64.b64encode(f"deploy:{fake('basic', 18)}".encode()).decode()
    rsa, ec = pem("rsa", "RSA PRIVATE KEY", 25), pem("ec", "EC PRIVATE KEY", 3)
    ossh, pgp = pem("ossh", "OPENSSH PRIVATE KEY", 6), pem("pgp", "PGP PRIVATE KEY BLOCK", 20)
    pkcs8 = pem("pkcs8", "PRIVATE KEY", 16, escaped=True)
    cut = pem("cut", "RSA PRIVATE KEY", 8, end=False)
    return [
        _s("aws key id in env", "export AWS_ACCESS_KEY_ID={s}\nexport AWS_DEFAULT_REGION=eu-west-1", aws_id,
           "aws-access-key"),
        _s("aws sts key id in json", '{{"Credentials": {{"AccessKeyId": "{s}", "Expiration": "2026-01-01"}}}}',
           sts_id, "aws-access-key"),
        _s("aws secret in credentials file", "[default]\naws_access_key_id = AKIA" + fake("aws-id2", 16, UPPER)
           + "\naws_secret_access_key = {s}\n", aws_secret, "aws-secret-key"),
        _s("aws secret in json", '"SecretAccessKey": "{s}",', fake("aws-secret2", 40, B64), "aws-secret-key"),
        _s("aws secret in env", "AWS_SECRET_ACCESS_KEY={s} aws s3 ls", fake("aws-secret3", 40, B64),
           "aws-secret-key"),
        _s("github classic token in a remote url", "git remote set-url origin https://{s}@github.com/acme/app.git",
           ghp, "github-token"),
        _s("github fine-grained token", "GH_TOKEN={s} gh pr list",
           "github_pat_" + fake("ghfg1", 22) + "_" + fake("ghfg2", 59), "github-fine-grained-token"),
        _s("github app installation token", 'token: "{s}"', "ghs_" + fake("ghs", 36), "github-app-token"),
        _s("github oauth token", "Cookie: gh_oauth={s}", "gho_" + fake("gho", 36), "github-oauth-token"),
        _s("github user-to-server token", "the CI printed {s} in its log", "ghu_" + fake("ghu", 36),
           "github-token"),
        _s("openai legacy key", "openai.api_key = '{s}'",
           "sk-" + fake("oai1", 20) + "T3BlbkFJ" + fake("oai2", 20), "openai-api-key"),
        _s("openai project key", "OPENAI_API_KEY={s}", "sk-proj-" + fake("oaiproj", 120, URLSAFE),
           "openai-api-key"),
        _s("openai service account key", "key {s} was rotated", "sk-svcacct-" + fake("oaisvc", 64, URLSAFE),
           "openai-api-key"),
        _s("anthropic api key", "ANTHROPIC_API_KEY={s}",
           "sk-ant-api03-" + fake("ant", 93, URLSAFE) + "AA", "anthropic-api-key"),
        _s("anthropic admin key", "x-api-key: {s}", "sk-ant-admin01-" + fake("antadm", 93, URLSAFE) + "AA",
           "anthropic-api-key"),
        _s("google api key in js", "const firebaseConfig = {{ apiKey: \"{s}\", projectId: \"demo\" }};",
           "AIza" + fake("gapi", 35, URLSAFE), "google-api-key"),
        _s("google oauth client secret", '{{"installed": {{"client_secret": "{s}"}}}}',
           "GOCSPX-" + fake("gocspx", 28, URLSAFE), "google-oauth-secret"),
        _s("google oauth access token", "access token: {s}", "ya29." + fake("ya29", 120, URLSAFE),
           "google-oauth-token"),
        _s("slack bot token", "SLACK_BOT_TOKEN={s}",
           "xoxb-" + fake("sl1", 12, DIGITS) + "-" + fake("sl2", 13, DIGITS) + "-" + fake("sl3", 24), "slack-token"),
        _s("slack user token", "client = WebClient(token=\"{s}\")",
           "xoxp-" + fake("sp1", 12, DIGITS) + "-" + fake("sp2", 12, DIGITS) + "-" + fake("sp3", 13, DIGITS)
           + "-" + fake("sp4", 32, HEX), "slack-token"),
        _s("slack webhook", "curl -X POST -d @msg.json {s}",
           "https://hooks.slack.com/services/T" + fake("wh1", 8, UPPER + DIGITS) + "/B"
           + fake("wh2", 10, UPPER + DIGITS) + "/" + fake("wh3", 24), "slack-webhook"),
        _s("stripe live secret key", "stripe.api_key = \"{s}\"", "sk_live_" + fake("stripe", 99), "stripe-key"),
        _s("stripe restricted key", "STRIPE_KEY: {s}", "rk_test_" + fake("rk", 40), "stripe-key"),
        _s("stripe webhook secret", "endpoint secret {s}", "whsec_" + fake("whsec", 32), "stripe-webhook-secret"),
        _s("jwt in authorization header", "curl -H 'Authorization: Bearer {s}' https://api.example.com/me",
           jwt("jwt1", {"sub": "1234567890", "name": "Jo Doe", "iat": 1516239022}), "jwt"),
        _s("jwt in json", '{{"id_token": "{s}", "expires_in": 3600}}',
           jwt("jwt2", {"iss": "https://auth.example.com", "aud": "app", "exp": 1893456000}), "jwt"),
        _s("rsa private key", "cat ~/.ssh/deploy_rsa\n{s}\n", rsa, "rsa-private-key"),
        _s("ec private key", "{s}", ec, "ec-private-key"),
        _s("openssh private key", "Here is the key file:\n{s}", ossh, "openssh-private-key"),
        _s("pgp private key block", "gpg --export-secret-keys --armor\n{s}", pgp, "pgp-private-key"),
        _s("service account private key in json", '{{"type": "service_account", "private_key": "{s}\\n"}}',
           pkcs8, "private-key"),
        _s("private key cut short in tool output", "     1\u2192{s}", cut, "rsa-private-key"),
        _s("postgres url password", "DATABASE_URL=postgresql://app:{s}@db.internal:5432/app?sslmode=require",
           fake("pgpw", 20), "url-password"),
        _s("mongodb srv password", 'client = MongoClient("mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/")',
           fake("mongo", 16), "url-password"),
        _s("redis url password without user", "REDIS_URL=redis://:{s}@cache:6379/0", fake("redis", 24),
           "url-password"),
        _s("amqp url password", "broker_url = 'amqp://guest:{s}@rabbit//'", fake("amqp", 12), "url-password"),
        _s("basic auth header", "Authorization: Basic {s}", basic, "basic-auth"),
        _s("opaque bearer token", "-H \"Authorization: Bearer {s}\"", fake("opaque", 40, URLSAFE + "."),
           "bearer-token"),
        _s("curl -u password", "curl -u admin:{s} https://jenkins.example.com/api/json", fake("curlu", 14),
           "password"),
        _s("django secret key", "DJANGO_SECRET_KEY={s}", fake("django", 50, ALNUM + "!@#%^*(-_=+)"), "secret"),
        _s("sentry auth token", "SENTRY_AUTH_TOKEN={s}", fake("sentry", 64, HEX), "token"),
        _s("password assignment", "DB_PASSWORD=Tr0ub4dor3x", "Tr0ub4dor3x", "password"),
        _s("password in json", '{{"username": "svc", "password": "{s}"}}', fake("jsonpw", 16), "password"),
        _s("client secret in python", "client_secret = '{s}'", fake("client", 32, URLSAFE), "secret"),
        _s("api token flag", "deploy --api-token={s} --env prod", fake("flag", 32), "token"),
        _s("password flag with space", "mysqladmin --password {s} status", fake("flag2", 12), "password"),
        _s(".env read by the assistant", "     3\u2192MAILGUN_API_KEY={s}\n     4\u2192DEBUG=false",
           "key-" + fake("mailgun", 32, HEX), "api-key"),
        _s("npm token in .npmrc", "//registry.npmjs.org/:_authToken={s}", "npm_" + fake("npm", 36), "npm-token"),
        _s("pypi token", "password = {s}", "pypi-AgEIcHlwaS5vcmc" + fake("pypi", 70, URLSAFE), "pypi-token"),
        _s("gitlab token", "PRIVATE-TOKEN: {s}", "glpat-" + fake("glpat", 20, URLSAFE), "gitlab-token"),
        _s("hugging face token", "huggingface-cli login --token {s}", "hf_" + fake("hf", 34, UPPER + LOWER),
           "huggingface-token"),
        _s("sendgrid key", "SENDGRID={s}", "SG." + fake("sg1", 22, URLSAFE) + "." + fake("sg2", 43, URLSAFE),
           "sendgrid-key"),
        _s("x-api-key header", "x-api-key: {s}", fake("xapikey", 40), "api-key"),
        _s("yaml password", "database:\n  user: app\n  password: {s}\n", "pa55-" + fake("yamlpw", 10),
           "password"),
    ]


def _sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


def _sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def _sri(text, algo="sha512"):
    return f"{algo}-" + base64.b64encode(hashlib.new(algo, text.encode()).digest()).decode()


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def _uuid(name):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def _non_secrets():
    texts = [
        ("git log", f"commit {_sha1('a')}\nAuthor: Jo <jo@example.com>\n\n    Fix the parser\n"),
        ("short sha", f"HEAD is now at {_sha1('b')[:7]} Merge pull request #42 from acme/fix"),
        ("sha256 of a file", f"{_sha256('c')}  dist/app-1.2.0.tar.gz"),
        ("package-lock integrity", f'"node_modules/left-pad": {{"version": "1.3.0", "integrity": "{_sri("d")}"}}'),
        ("yarn.lock", f'left-pad@^1.3.0:\n  resolved "https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz'
                      f'#{_sha1("e")}"\n  integrity {_sri("e", "sha1")}'),
        ("poetry.lock hash", f'{{file = "requests-2.31.0-py3-none-any.whl", hash = "sha256:{_sha256("f")}"}}'),
        ("cargo.lock checksum", f'[[package]]\nname = "serde"\nversion = "1.0.0"\nchecksum = "{_sha256("g")}"'),
        ("go.sum", f"golang.org/x/text v0.3.0 h1:{base64.b64encode(hashlib.sha256(b'h').digest()).decode()}"),
        ("uuid", f"session {_uuid('i')} resumed; parent {_uuid('j')}"),
        ("docker digest", f"FROM python:3.12-slim@sha256:{_sha256('k')}"),
        ("base64 of prose", f"echo {_b64('The quick brown fox jumps over the lazy dog, twice.')} | base64 -d"),
        ("base64 of json config", f'"config": "{_b64(json.dumps({"name": "demo", "replicas": 3}))}"'),
        ("40-char base64 without context", f"payload {_b64('twenty-nine ordinary bytes..')} ok"),
        ("aws arn", "arn:aws:iam::123456789012:role/service-role/lambda-exec"),
        ("prose about aws key ids", "AWS access key ids start with AKIA or ASIA; secret keys are 40 characters."),
        ("url with user only", "git clone https://alice@github.com/acme/app.git"),
        ("url with port", "curl https://api.github.com:443/repos/acme/app"),
        ("url password from env", "postgresql://app:${PGPASSWORD}@db.internal:5432/app"),
        ("url password template", "mysql://root:<password>@localhost:3306/db"),
        ("bearer from variable", 'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user'),
        ("bearer template", "Authorization: Bearer <token>"),
        ("token read from header", 'token = request.headers.get("Authorization")'),
        ("getpass", "password = getpass.getpass()"),
        ("max tokens", 'response = client.messages.create(model="claude", max_tokens=4096)'),
        ("token expiry", "TOKEN_EXPIRY_SECONDS=3600\nPASSWORD_MIN_LENGTH=12"),
        ("tokenizer", 'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")'),
        ("secret from environ", 'secret_key = os.environ["SECRET_KEY"]'),
        ("typed field", "class Settings(BaseModel):\n    api_key: str | None = None\n    password: SecretStr"),
        ("ssh public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fake("pub", 43, B64) + " alice@laptop"),
        ("public key block", pem("pubkey", "PUBLIC KEY", 6)),
        ("certificate", pem("cert", "CERTIFICATE", 10)),
        ("stripe publishable key", "Stripe('pk_test_" + fake("pk", 24) + "')"),
        ("dotted java name", "at com.example.app.MainActivity.onCreate(MainActivity.java:42)"),
        ("sk- inside words", "pip install scikit-learn; the task-list has a disk-usage risk-free item"),
        ("css colors", ".btn { color: #1a2b3c; background: #ffcc00; border: 1px solid #333; }"),
        ("hexdigest output", f">>> hashlib.md5(b'x').hexdigest()\n'{hashlib.md5(b'x').hexdigest()}'"),
        ("empty password", '{"username": "guest", "password": ""}'),
        ("masked password", "password: ********"),
        ("helm template", "password: {{ .Values.postgresql.auth.password }}"),
        ("secret file path", "SECRET_KEY_FILE=/run/secrets/django_key"),
        ("oauth token type", '{"token_type": "Bearer", "expires_in": 3599, "scope": "repo"}'),
        ("npm resolved url", '"resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz"'),
        ("prose", "Pass the token to the function; the bearer of the key is the owner. My password policy is strict."),
        ("yaml keys", "primary_key: id\nforeign_key: user_id\nsort_key: created_at"),
        ("cloudformation ref", "access_key_id: !Ref AccessKey\nsecret_access_key: !GetAtt AccessKey.SecretAccessKey"),
        ("pwd output", "$ pwd\n/home/alice/projects/claude-chats"),
        ("git sha pair", f"{_sha1('l')}..{_sha1('m')}  main -> main"),
        ("jwt-shaped version", "version eyJhbGciOi.1.2 is not a token"),
        ("redis url without password", "REDIS_URL=redis://cache:6379/0"),
        ("api key lookup", 'api_key = settings.get("OPENAI_API_KEY")'),
        ("token count", '"usage": {"input_tokens": 1532, "output_tokens": 211, "cache_read_input_tokens": 0}'),
        ("already redacted", "DB_PASSWORD=[REDACTED:password] and token [REDACTED:github-token]"),
    ]
    return [Sample(name, text) for name, text in texts]


SECRETS = _secrets()
NON_SECRETS = _non_secrets()


class Score(NamedTuple):
    caught: int          # secrets removed from the text
    typed: int           # ... and replaced by the expected kind of placeholder
    missed: list         # names of secrets still in the text
    false_positives: list  # names of look-alikes that were changed
    secrets: int
    non_secrets: int

    @property
    def recall(self):
        return self.caught / self.secrets if self.secrets else 1.0

    @property
    def precision(self):
        flagged = self.caught + len(self.false_positives)
        return self.caught / flagged if flagged else 1.0


def evaluate(redact):
    """Score ``redact`` (text -> text) on the corpus."""
    caught = typed = 0
    missed, false_positives = [], []
    for s in SECRETS:
        out = redact(s.text)
        if s.secret in out:
            missed.append(s.name)
            continue
        caught += 1
        typed += f"[REDACTED:{s.kind}]" in out
    for s in NON_SECRETS:
        if redact(s.text) != s.text:
            false_positives.append(s.name)
    return Score(caught, typed, missed, false_positives, len(SECRETS), len(NON_SECRETS))
