"""Hostile text for the HTML the UI renders, and the checks a browser's view makes of it.

``HOSTILE``: texts a transcript may hold that would run or load something if they reached a page
as markup. ``Page(html)``: its tags, attributes and text as ``html.parser`` finds them (entities in
attributes decoded, as a browser does). ``problems(html)``: what in it could run or load something
(a script element, an ``on*``, ``src`` or ``style`` attribute, a link outside http(s), mailto,
``#`` and the app's ``/session/`` pages): [] when nothing. ``soup`` and ``shaped``: Hypothesis
strategies of markup pieces in any order, and of links, images and tags with fuzzed targets.
"""

from html.parser import HTMLParser

from hypothesis import strategies as st

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)><circle/></svg>",
    "<iframe src=javascript:alert(1)></iframe>",
    "[x](javascript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    "[x](  javascript:alert(1) )",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;avascript&#x3A;alert(1))",
    "[x](java&#x09;script:alert(1))",
    "[x](<java\tscript:alert(1)>)",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](vbscript:msgbox(1))",
    "[x](file:///etc/passwd)",
    "[x][ref]\n\n[ref]: javascript:alert(1)",
    "<javascript:alert(1)>",
    "![a](javascript:alert(1))",
    "![a](https://tracker.example/pixel.png)",
    '[x](https://ok.example "title\\" onmouseover=\\"alert(1)")',
    "```\"><script>alert(1)</script>\ncode\n```",
    "</details></article><script>alert(1)</script>",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<div style=\"background:url(javascript:alert(1))\">x</div>",
    "| a | b |\n|--:|:-:|\n| <script>alert(1)</script> | [x](javascript:alert(1)) |",
    "~~<img src=x onerror=alert(1)>~~",
    "`<script>alert(1)</script>`",
]
ALLOWED = ("http://", "https://", "mailto:", "#", "/session/")


class Page(HTMLParser):
    """Tags, attributes and text of an HTML fragment, as a browser's parser finds them."""

    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.ends = [], [], []
        self.feed(str(html))
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        self.ends.append(tag)

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag):
        return [attrs for name, attrs in self.tags if name == tag]

    @property
    def shown(self):
        return "".join(self.text)


def problems(html):
    """What in ``html`` could run or load something: [] when nothing."""
    page, found = Page(html), []
    for tag, attrs in page.tags:
        if tag in ("script", "iframe", "object", "embed", "img", "svg", "math", "link", "meta", "style", "form",
                   "input", "base", "video", "audio", "source"):
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name in ("src", "style", "srcset", "action", "formaction"):
                found.append(f"{tag}[{name}]")
            if name == "href" and not (value or "").startswith(ALLOWED):
                found.append(f"{tag}[href={value!r}]")
    return found


PIECES = ["<", ">", "&", "&#", "&#x", "6A;", "#106;", ";", "javascript", "JaVaScRiPt", "java\tscript", "data",
          "vbscript", ":", "alert(1)", "[", "]", "(", ")", "!", "<script>", "</script>", "<img src=x onerror=alert(1)>",
          "<a href=", "\"", "'", "`", "```", "~~~", "\n", "\n\n", "    ", "> ", "- ", "*", "_", "|", "\\",
          "http://", "https://", "mailto:", "#", "/", "on", "load=", "style=", "<svg", "<details>", "</details>",
          "<!--", "-->", "<![CDATA[", "%6A", "%3A", "\x00", "\u202e", "é", " "]


SCHEME_BITS = ["javascript", "JAVASCRIPT", "java", "script", "&#106;", "&#x6A;", "&#X6a;", "%6A", "\\", "\t", " ",
               ":", "&#58;", "&colon;", "data", "vbscript", "//", "alert(1)", "x", "<", ">", "\x00", "/"]
soup = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
target = st.lists(st.sampled_from(SCHEME_BITS), min_size=1, max_size=8).map("".join)
shaped = st.one_of(
    st.builds("[{}]({})".format, soup, target), st.builds("![{}]({})".format, soup, target),
    st.builds("<{}>".format, target), st.builds("[x][r]\n\n[r]: {}".format, target),
    st.builds("<a href={}>x</a>".format, target))
