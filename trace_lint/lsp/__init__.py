"""The trace-lint language server (`trace-lint lsp`, needs the `lsp` extra: pygls).

`positions` and `noqa` are plain Python; only `server` imports pygls and lsprotocol."""
