"""The documentation site's generated pages: one per platform, from the platform registry (the command
pages, made from click's own help, are gpufabric/cli/help_pages.py), and the nav block of mkdocs.yml
that lists them. `gpufabric docs platforms` and `gpufabric docs commands` write them; `--check` is the
CI's proof that they are current.
"""
