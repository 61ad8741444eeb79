"""Ansible inventory plugin: hosts, groups and per-host NIC variables from the gpufabric plan."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpufabric
short_description: Hosts and groups from a gpufabric intent
author:
  - gpufabric maintainers (@gpufabric)
description:
  - Plans the intent with gpufabric and adds every switch and server.
  - Groups are switches, servers, plane_<plane> (with <plane>_switches and <plane>_servers),
    role_<role>, platform_<platform>, <plane>_su<N> or <plane>_unit<N>, <plane>_rail<N>,
    <plane>_pod<N> and group_<server group>.
  - Variables are prefixed gpufabric_; servers get gpufabric_nics (one entry per data NIC with
    plane, interface, rail, address, prefixlen, gateway, leaf, leaf_port, mtu, bond; a bond member
    has no address, prefixlen or gateway of its own), gpufabric_bonds (one entry per LACP bond with
    interface, plane, members, mtu, address, prefixlen, gateway, mode, transmit_hash_policy,
    lacp_rate, miimon) and gpufabric_planes (per plane MTU and the QoS contract where RoCE runs).
  - Needs gpufabric of the collection's release installed in the Python that runs Ansible (the collection's
    requirements.txt; pip install . in a clone of gpufabric, or its wheel, until it is published).
  - The inventory file's name ends in gpufabric.yml or gpufabric.yaml.
options:
  plugin:
    description:
      - Marks this file as a gpufabric inventory source; gpufabric.cluster.gpufabric from the collection,
        gpufabric where the plugin is found by its file (a clone's ansible.cfg).
    required: true
    choices: ['gpufabric.cluster.gpufabric', 'gpufabric']
  intent:
    description: The intent file, relative to this inventory file's folder.
    type: str
    default: fabric.yml
  hosts:
    description: Only these hosts (switches or servers) of the plan; all when empty.
    type: list
    elements: str
    default: []
  lab_state:
    description:
      - State folder of host containers (C(gpufabric lab hosts up --state-dir)). When it holds
        a record of a host, Ansible reaches that host as the record says (address, user, key,
        known host key) instead of at its planned management address.
    type: path
    env:
      - name: GPUFABRIC_LAB_STATE
  jump_host:
    description:
      - Reach every host through this jump host (C([user@]host[:port]), a chain C(a,b)), as OpenSSH's
        ProxyJump (C(-o ProxyJump=...) in C(ansible_ssh_common_args)). The jump host's key is checked by
        its own ssh process against your known_hosts, as ssh always does; nothing here loosens that.
      - Without it, a ProxyJump in your SSH config applies to the planned hosts as it does to any ssh.
    type: str
    env:
      - name: GPUFABRIC_JUMP_HOST
"""

EXAMPLES = r"""
# inventory/gpufabric.yml, beside the intent
plugin: gpufabric.cluster.gpufabric
intent: fabric.yml

# only two servers, reached as `gpufabric lab hosts up --state-dir /var/lib/gpufabric/lab` recorded them
plugin: gpufabric.cluster.gpufabric
intent: fabric.yml
hosts: [gpu01, gpu02]
lab_state: /var/lib/gpufabric/lab
"""

import os

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin
from ansible.utils.unsafe_proxy import wrap_var

# Groups that only hold other groups, so `ansible-inventory --graph` nests instead of repeating hosts.
_PARENT_PREFIXES = ("plane_",)
_PARENT_NAMES = ("switches", "servers")


_LAB_LOGIN_TIMEOUT = 120  # seconds: molecule/*/molecule.yml's `timeout` too


def _lab_connections(state_dir: str | None) -> dict[str, dict[str, object]]:
    """Connection variables for the hosts a lab runs as containers, from the lab's own record (read
    as gpufabric reads it: a plain file, never through a link, bounded)."""
    if not state_dir:
        return {}
    from pathlib import Path

    from gpufabric.fleet.lab.host_state import HostsState

    state = HostsState.load(Path(state_dir))
    if state is None:
        return {}
    # -F /dev/null: the lab's hosts are reached as the lab recorded, whatever ~/.ssh/config says (a
    # `Host *` ProxyJump there would break them), and ssh makes no ~/.ssh of its own on this machine.
    ssh_args = f"-F /dev/null -o UserKnownHostsFile={state.known_hosts} -o StrictHostKeyChecking=yes"
    return {
        name: {
            "ansible_host": host.address,
            "ansible_user": state.user,
            "ansible_ssh_private_key_file": state.key_file,
            "ansible_ssh_common_args": ssh_args,
            # The login's bound (not a wait): a container answers at this machine's pace, and on a slow machine
            # running every lane of the test suite, logins took longer than Ansible's 10 s default. Molecule's
            # hosts have the same bound.
            "ansible_ssh_timeout": _LAB_LOGIN_TIMEOUT,
            # The lab built the image, so it knows the interpreter: no discovery.
            **({"ansible_python_interpreter": state.python} if state.python else {}),
            # A container on this machine's kernel, with no GPU or PCIe switch of its own: roles that read
            # hardware (host_baseline) leave it alone.
            "gpufabric_lab_container": True,
        }
        for name, host in state.hosts.items()
    }


def _proxy_jump(spec: str | None) -> str:
    """`-o ProxyJump=...` for ssh, written back from the parsed chain: the option's text reaches ssh
    only as names, users and ports that passed their patterns."""
    if not spec:
        return ""
    from gpufabric.drivers.jump import parse_chain

    chain = parse_chain(spec, "jump_host")
    hops = [f"{h.user + '@' if h.user else ''}{f'[{h.host}]' if ':' in h.host else h.host}"
            f"{f':{h.port}' if h.port else ''}" for h in chain]  # fmt: skip
    return f"-o ProxyJump={','.join(hops)}" if hops else ""


def _literal(value: object) -> object:
    """`value` with each text gpufabric marked as holding template syntax handed over as unsafe: Ansible
    takes it as data, never as a template to evaluate on the controller."""
    from gpufabric.export.yaml_out import UnsafeText

    if isinstance(value, UnsafeText):
        return wrap_var(str(value))
    if isinstance(value, dict):
        return {k: _literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_literal(v) for v in value]
    return value


class InventoryModule(BaseInventoryPlugin):
    # The collection's name for it. Loaded by another name (`gpufabric`, from a clone's
    # inventory_plugins), Ansible accepts that name in the file instead (the documented choices).
    NAME = "gpufabric.cluster.gpufabric"

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and os.path.basename(path).endswith(("gpufabric.yml", "gpufabric.yaml"))

    def parse(self, inventory, loader, path, cache=True):  # noqa: ANN001, ANN201 (Ansible's signature)
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        try:
            from gpufabric.errors import GpufabricError
            from gpufabric.export.inventory import ansible_vars, build
            from gpufabric.intent import IntentError, load_intent
            from gpufabric.plan import build_plan
        except ImportError as exc:
            raise AnsibleError(
                f"gpufabric is not importable ({exc}); install it into the Python that runs Ansible: "
                "pip install . in a clone of gpufabric, or its wheel (pip install gpufabric once it is published)"
            ) from None
        intent = os.path.join(os.path.dirname(os.path.abspath(path)), self.get_option("intent"))
        try:
            plan = build_plan(load_intent(intent))
        except IntentError as exc:
            raise AnsibleParserError(exc.render()) from None
        wanted = set(self.get_option("hosts") or [])
        try:
            lab = _lab_connections(self.get_option("lab_state"))
            jump = _proxy_jump(self.get_option("jump_host"))
        except IntentError as exc:  # the lab's record, refused as gpufabric.inputs refuses it
            raise AnsibleParserError(exc.render()) from None
        except GpufabricError as exc:  # a jump host that is not [user@]host[:port]
            raise AnsibleParserError(str(exc)) from None
        for host in build(plan):
            if wanted and host.name not in wanted:
                continue
            self.inventory.add_host(host.name)
            for group in host.groups:
                self.inventory.add_group(group)
                if not self._is_parent(group):
                    self.inventory.add_child(group, host.name)
                self._nest(group)
            variables = ansible_vars(host) | lab.get(host.name, {})
            if jump:
                variables["ansible_ssh_common_args"] = f"{variables.get('ansible_ssh_common_args', '')} {jump}".strip()
            for key, value in variables.items():
                self.inventory.set_variable(host.name, key, _literal(value))

    @staticmethod
    def _is_parent(group: str) -> bool:
        return group in _PARENT_NAMES or group.startswith(_PARENT_PREFIXES)

    def _nest(self, group: str) -> None:
        """<plane>_switches sits in switches and plane_<plane>; group_<g> in servers."""
        for suffix, top in (("_switches", "switches"), ("_servers", None)):
            if group.endswith(suffix):
                plane = group.removesuffix(suffix)
                self.inventory.add_group(f"plane_{plane}")
                self.inventory.add_child(f"plane_{plane}", group)
                if top:
                    self.inventory.add_group(top)
                    self.inventory.add_child(top, group)
        if group.startswith("group_"):
            self.inventory.add_group("servers")
            self.inventory.add_child("servers", group)
