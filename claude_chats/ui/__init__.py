"""``chats ui``: a local web app over the whole memory (issue 23).

Server-rendered HTML (Starlette, Jinja2) over the same stores the CLI reads, through
``stores.open_searcher``: Postgres when configured and reachable, else the journal. Modules:
``app`` (routes), ``guard`` (token, Host, CSRF, headers), ``render`` (a message as HTML),
``export`` (a session as one HTML or Markdown file), ``live`` (new turns as server-sent events),
``activity`` (messages per day as SVG). Nothing here is imported by the hook.
"""
