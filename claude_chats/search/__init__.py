"""Search over the stored conversations.

``core``: the kernel both stores share (filters, plans, candidates, fusion, query
words; imports no store). ``searcher``: the ``Searcher`` that runs a search over a
store and renders the result, and reads conversation pages (imports no store
either). ``claude_chats.stores.open_searcher`` is the one place that opens both
stores for it.
"""
