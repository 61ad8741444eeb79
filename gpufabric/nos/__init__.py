"""The network operating systems gpufabric ships: one folder per OS, the top floor of the house.

Each folder holds what is its OS's alone (its platform declaration, readers, NAPALM driver, telemetry
readers and vendor judge); its Jinja2 templates sit apart in the project's templates/<os>/. Nothing
below this package imports it: the layers underneath reach an OS only through the registry in
gpufabric.platforms, by the `gpufabric.platforms` entry points, as they would reach a third party's.
"""
