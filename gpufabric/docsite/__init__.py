"""The documentation site's generated pages: one per platform (from the platform registry) and one per
command (from click's own help), so neither can drift from the code. `gpufabric docs platforms` and
`gpufabric docs commands` write them; `--check` is the CI's proof that they are current.
"""
