"""`python -m gpufabric`: the same CLI as the `gpufabric` command."""

from gpufabric.cli import main

main()
