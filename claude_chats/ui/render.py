"""A message as HTML: the first, plain version (escaped text; tool calls, results and thinking folded).

Replaced by the full renderer (markdown, subagent links) from the wip-render branch."""

from markupsafe import Markup, escape

FOLDED = ("tool_use", "tool_result", "thinking")


def message(m, link=None, target=False):
    classes = f"msg role-{escape(m['role'])} kind-{escape(m['kind'])}" + (" target" if target else "")
    body = Markup("<pre>") + escape(m["text"]) + Markup("</pre>")
    if m["kind"] in FOLDED:
        body = Markup("<details><summary>") + escape(m["kind"]) + f" ({len(m['text']):,} characters)" \
            + Markup("</summary>") + body + Markup("</details>")
    head = Markup('<header class="msg-head">') + escape(m["role"]) + f" #{int(m['seq'])}" + Markup("</header>")
    return (Markup(f'<article class="{classes}" id="seq-{int(m["seq"])}">') + head + Markup('<div class="body">')
            + body + Markup("</div></article>"))


def subagent_links(messages, subagents):
    return {}


def parent_link(searcher, info):
    return None
