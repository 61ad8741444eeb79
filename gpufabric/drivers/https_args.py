"""The optional args the HTTPS API drivers (EOS eAPI, NX-API) share: the transport (HTTPS only), the TLS
trust, the push id, and which args are gpufabric's own rather than NAPALM's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from napalm.base.exceptions import ConnectionException

from gpufabric.drivers.push_id import push_id_of
from gpufabric.drivers.tls_pins import TlsTrust

# Args every gpufabric HTTPS driver reads itself; NAPALM's drivers must not see them.
OWN_ARGS = frozenset({"push_id", "tls_ca_file", "tls_known_hosts", "accept_new", "known_hosts", "private_key",
                      "controller", "read_bounds", "jump"})  # fmt: skip


class HttpsArgs(NamedTuple):
    args: dict[str, Any]  # every optional arg given
    trust: TlsTrust
    push_id: str
    napalm_args: dict[str, Any]  # the ones left for NAPALM's driver


def https_args(
    hostname: str, optional_args: dict | None, *, api: str, transport_keys: tuple[str, ...], own: Iterable[str] = ()
) -> HttpsArgs:
    """Refuse any transport but HTTPS (ConnectionException) before anything else is read: only HTTPS with a
    verified certificate keeps the login from whoever answers. `transport_keys`: the arg names, first
    found wins; `own`: this driver's args besides OWN_ARGS."""
    args = dict(optional_args or {})
    transport = next((args[key] for key in transport_keys if key in args), "https")
    if transport != "https":
        raise ConnectionException(
            f"{hostname}: {api} transport {transport!r} refused: only HTTPS with a verified certificate "
            "keeps the login from whoever answers"
        )
    if args.get("jump"):
        raise ConnectionException(
            f"{hostname}: {api} is reached over HTTPS, which gpufabric does not carry through a jump host; "
            "reach the switch directly, or run gpufabric on a host of the management network"
        )
    ours = OWN_ARGS | set(own)
    napalm_args = {k: v for k, v in args.items() if k not in ours}
    return HttpsArgs(args, TlsTrust.from_args(args), push_id_of(args), napalm_args)
