"""Commands of this group are registered here (placeholder until they land)."""


def register(group):
    pass
