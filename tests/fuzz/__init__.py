"""Fuzzing: the parser, the journal writer, the hook as a process, search and the CLI."""
