#!/usr/bin/env bash
# Install everything the tests need, then lint, type-check and run them.
#   scripts/test.sh            # the whole suite (what CI runs)
#   scripts/test.sh --fast     # the offline tier: no root, no lab, nothing slow; on every core
#   scripts/test.sh -k fuzz    # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
run_started=$SECONDS
took() {  # took NAME START: one line of the run's timings, NAME's wall time since START (bash's SECONDS)
    local s=$((SECONDS - $2))
    printf '== took %s: %d:%02d\n' "$1" $((s / 60)) $((s % 60))
}
# pytest keeps its rewritten test modules in __pycache__ only when Python may write bytecode; where
# PYTHONDONTWRITEBYTECODE is set, every worker would rewrite and compile every test module again.
unset PYTHONDONTWRITEBYTECODE

# pytest's temporary files go under one folder of this run's, not /tmp/pytest-of-$USER (which pytest
# keeps, three runs deep): removed when the run ends, unless tests failed (then named, to look into).
# --one-file-system: whatever a failed lab test left mounted below is never followed.
test_tmp=$(mktemp -d)
keep_tmp=0
drop_tmp() { [ "$keep_tmp" -eq 1 ] || rm -rf --one-file-system "$test_tmp"; }
finish() {  # finish STATUS: the run's exit status, with its temporary files dropped or named
    if [ "$1" -ne 0 ] && [ "$1" -ne 5 ]; then keep_tmp=1; echo "tests failed: their temporary files are in $test_tmp" >&2; fi
    exit "$1"
}
trap drop_tmp EXIT
# Ansible's home (~/.ansible: its temporary files, ansible-lint's and Molecule's working folders) is
# the run's too, so the tests leave none of it in the user's home.
export ANSIBLE_HOME="$test_tmp/ansible"
# Where Ansible's modules run on this machine (Molecule's plays on localhost): ~/.ansible/tmp otherwise.
export ANSIBLE_REMOTE_TMP="$ANSIBLE_HOME/tmp"

if [ "${1:-}" = "--fast" ]; then
    shift
    ensure_venv .venv test
    export PATH="$PWD/.venv/bin:$PATH"
    [ -x .cache/prometheus/usr/bin/promtool ] && export PATH="$PWD/.cache/prometheus/usr/bin:$PATH"
    echo "== ruff" && ruff check . && ruff format --check .
    echo "== lint-imports (the floors: every import goes down)" && lint-imports --no-cache
    echo "== pytest (fast tier: not lab, not slow)"
    fast=0
    python -m pytest -p no:cacheprovider --basetemp "$test_tmp/fast" -q -n auto -m "not lab and not slow" "$@" || fast=$?
    finish "$fast"
fi

installs_started=$SECONDS
want_apt dot graphviz                      # SVG drawings are tested when dot is present
want_apt vtysh frr frr-pythontools         # FRR configs are checked with FRR's own parser
want_apt nft nftables                      # FRR switches' nftables files are checked with nft -c
want_apt ping iputils-ping                 # the lab tests reach switches over the OOB bridge
want_apt lldpd lldpd                       # the lab: LLDP per switch
want_apt sshd openssh-server               # the lab: SSH per switch (push and validate log in)
want_apt systemd-nspawn systemd-container  # Molecule's hosts: booted Debian containers
want_apt debootstrap debootstrap           # their root filesystem (built once, cached)
want_apt socat socat                       # their path to this machine's Debian mirror
want_apt zstd zstd                         # the cached root filesystem image
want_apt iperf3 iperf3                     # the acceptance stand-in's output is read from the real tool
want_apt slurmctld slurmctld               # the exported topology.conf is read back by Slurm's own controller
want_apt scontrol slurm-client             # ... and shown by scontrol
want_apt munged munge                      # ... which authenticates through a munged of the test's own
want_apt slurmd slurmd                     # the scheduler's drains: real jobs on real slurmd, one per namespace
want_apt opensm opensm                     # InfiniBand: the real subnet manager, on the simulated fabric
want_apt ibnetdiscover infiniband-diags    # InfiniBand: the real diagnostics read the simulated fabric back
want_apt ibsim ibsim-utils                 # InfiniBand: the fabric simulator (libumad2sim.so comes with it)
want_apt ethtool ethtool                   # optics telemetry: the real ethtool decodes module memory the tests write
want_apt jq jq                             # gnmic's event-jq program (the plan's labels) run by jq on gnmic's event format
want_file /usr/sbin/kea-dhcp4 kea-dhcp4-server  # ZTP: Kea's own parser judges the exported DHCP configuration (and serves the lab)
want_file /usr/sbin/dnsmasq dnsmasq-base       # ZTP: dnsmasq --test judges its configuration (and serves the lab)
want_file /usr/sbin/dhcrelay isc-dhcp-relay    # ZTP in the lab: the relay agent adding option 82 on the OOB switch's port
want_file /sbin/dhclient isc-dhcp-client       # ZTP in the lab: the empty switch's DHCP client
# SONiC's config_db.json files are judged by SONiC's YANG models through libyang: the C library's headers
# here, its Python binding (built against them) in the virtualenv below. 2.7.1 is the newest binding
# that builds against Debian 12's libyang 2.1.
want_file /usr/include/libyang/libyang.h libyang2-dev
install_wanted
ensure_prometheus .cache/prometheus        # promtool checks the alert rules; the lab test runs a real server
# host_network's files are judged by each backend's own parser: netplan's generator, nmcli --offline.
ensure_unpacked .cache/netplan netplan.io libnetplan0
# amtool judges alertmanager.yml; the remediation test runs the real Alertmanager (over its unpacked /usr/share).
ensure_unpacked .cache/alertmanager prometheus-alertmanager
ensure_unpacked .cache/network-manager network-manager libnm0
ensure_venv .venv test
ensure_pip .venv libyang 'libyang==2.7.1'
# `gpufabric sot` is tested against a real Nautobot: its own venv, Redis unpacked beside it, in the machine's
# cache (lib.sh machine_cache), where a fresh clone finds them made and the database migrated.
bash scripts/sot_server.sh install
export PATH="$PWD/.venv/bin:$PATH"
took installs "$installs_started"

echo "== ruff" && ruff check . && ruff format --check .
echo "== lint-imports (the floors: every import goes down)" && lint-imports --no-cache

# The static checks and the offline tests: what the lab's tests leave of the cores. They run niced,
# beside the lab, so the lab's timed steps (commit checks, BGP, booting hosts) are not starved; and beside each
# other, so neither waits for the other where the lab leaves a core idle (the lab's tests mostly wait).
static_checks() {
    local started=$SECONDS
    # mypy's incremental cache in the machine's cache (lib.sh), one run at a time: a fresh clone's modules are
    # new files, which mypy takes as checked when their content hash matches the cache's, so only what changed
    # since the machine's last check is checked again (35 CPU-s for the whole tree, against 1 s).
    local mypy_cache
    mypy_cache="$(machine_cache)/mypy"
    mkdir -p "$mypy_cache"
    echo "== mypy" && flock "$mypy_cache/.lock" mypy --cache-dir "$mypy_cache" \
        gpufabric nornir_tasks napalm_frr napalm_cumulus napalm_gpufabric_* bench scripts || return 1
    echo "== ansible-lint (production profile)" && ansible-lint -q || return 1
    echo "== role READMEs match their argument specs" && python scripts/role_docs.py --check || return 1
    # Ansible's own tests of a collection, on gpufabric.cluster as built (their pinned linters in the machine's cache).
    echo "== ansible-test sanity (the collection gpufabric.cluster)" && scripts/collection_sanity.sh || return 1
    echo "== docs/intent.md matches the schema" && gpufabric docs -o docs/intent.md --check || return 1
    echo "== the platform, command and example pages and the figures match the registry, --help and the intents" &&
        gpufabric docs platforms --check && gpufabric docs commands --check && gpufabric docs examples --check &&
        gpufabric docs figures --check || return 1
    # Built into the run's temporary folder: nothing is written into the checkout. Strict: a page
    # missing from the nav, a broken link or anchor fails the build (mkdocs.yml's validation).
    echo "== the documentation site builds (mkdocs --strict)" &&
        NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$test_tmp/site" || return 1
    took "static checks" "$started"
}
offline_tests() {
    echo "== pytest (offline, on every core)"
    exec python -m pytest -p no:cacheprovider --basetemp "$test_tmp/offline" --durations=5 -n auto -m "not lab" \
        --long-first "$@"   # its PID is the one the trap stops; modules holding the longest tests first
}

# Four parts side by side: the static checks and the offline tests (above); the lab's tests, which mostly wait
# (BGP, timers, booting containers); and Molecule, whose hosts have names of their own (niced a little: the
# lab's timed steps come first). The lab's tests run on LAB_WORKERS xdist workers: a module marked `own_lab`
# brings up a lab named after its worker and goes to whichever worker comes free; the modules on the default lab
# go to one worker, one after another (tests/lab_slot.py, tests/conftest.py's xdist groups). The other parts'
# output is kept and printed after the lab's, so each part reads whole.
echo "== static checks, offline tests and Molecule run beside the lab tier; their output follows the lab's"
offline_log="$test_tmp/offline.log"   # with the run's other temporary files
static_log="$test_tmp/static.log"
static_pid=""
molecule_log="$test_tmp/molecule.log"
offline_pid=""
molecule_pid=""
# The source of truth's Nautobot migrates its database once (minutes of CPU), niced, while the parts
# below start: its tests, last of the beside-the-lab part, then start it in seconds.
nice -n 10 bash scripts/sot_server.sh prepare >"$test_tmp/sot-prepare.log" 2>&1 &
sot_pid=$!
lab_pid=""
# Interrupted or failed early: stop the runs this script started (by their PIDs). Each kill may find its run
# gone already, which must not end the trap (set -e) before the folder is dropped.
stop_and_drop() {
    for pid in $lab_pid $static_pid $offline_pid $molecule_pid $sot_pid; do kill "$pid" 2>/dev/null || true; done
    drop_tmp
}
trap stop_and_drop EXIT
# Stopped (SIGTERM from CI's time limit or `timeout`, or Ctrl-C): each part stops and is waited for, since
# pytest then tears down what it set up (a lab's `lab down` reads the lab's state from this run's folder), and
# only then does the folder go. Without the wait, the folder went at once and a lab torn down later found no
# state: its namespaces and daemons stayed on the machine. Each part is sent SIGTERM, whatever stopped this
# script: SIGTERM may have reached this script alone (`timeout`, `kill PID`), and the parts run in the
# background, where Ctrl-C's SIGINT is ignored. One that had SIGTERM already (CI signals the whole group)
# takes the second as nothing.
stop_parts() {   # stop_parts EXIT_STATUS
    trap '' TERM INT
    # The lab's xdist workers too: each tears its own lab down (pytest's teardown on SIGTERM, stop_on_sigterm).
    [ -n "$lab_pid" ] && pkill -TERM -P "$lab_pid" 2>/dev/null || true
    for pid in $lab_pid $static_pid $offline_pid $molecule_pid $sot_pid; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
    lab_pid="" static_pid="" offline_pid="" molecule_pid="" sot_pid=""
    exit "$1"
}
trap 'stop_parts 143' TERM
trap 'stop_parts 130' INT
lanes_started=$SECONDS
(renice -n 10 $BASHPID >/dev/null; static_checks) >"$static_log" 2>&1 &
static_pid=$!
(renice -n 10 $BASHPID >/dev/null; offline_tests "$@") >"$offline_log" 2>&1 &
offline_pid=$!
# On two workers, a file each at a time: Molecule's scenarios (one file, most of the part's time) on one, the
# lab tests beside them (InfiniBand on ibsim, slurmctld, Nautobot, Alertmanager) on the other.
nice -n 5 python -m pytest -p no:cacheprovider --basetemp "$test_tmp/molecule" --durations=10 -n 2 --dist loadfile \
    -m "molecule or beside_lab" "$@" >"$molecule_log" 2>&1 &
molecule_pid=$!
echo "== pytest (lab: namespaces, host containers, the demo)"
lab=0
# In the background and waited for: a signal for which a trap is set ends `wait` at once (it would wait for a
# command in the foreground to end first).
python -m pytest -p no:cacheprovider --basetemp "$test_tmp/lab" --durations=25 -n "${LAB_WORKERS:-3}" --dist loadgroup \
    -m "lab and not molecule and not beside_lab" "$@" </dev/null &
lab_pid=$!
wait "$lab_pid" || lab=$?
lab_pid=""
lab_took=$(took "the lab lane" "$lanes_started")
static=0
wait "$static_pid" || static=$?
static_pid=""
offline=0
wait "$offline_pid" || offline=$?
offline_pid=""
molecule=0
wait "$molecule_pid" || molecule=$?
molecule_pid=""
wait "$sot_pid" || echo "note: Nautobot's migrations ahead of its tests failed (they migrate themselves): $test_tmp/sot-prepare.log"
sot_pid=""
echo "== pytest (Molecule, and the lab tests that need no namespace: InfiniBand on ibsim, slurmctld)"
cat "$molecule_log"
echo "== static checks"
cat "$static_log"
echo "== pytest (offline)"
cat "$offline_log"
echo "$lab_took"
took "the whole run" "$run_started"
for code in offline lab molecule; do   # 5: nothing selected (say, -k matched only another part)
    [ "${!code}" -eq 5 ] && printf -v "$code" 0
done
status=0
[ "$static" -eq 0 ] && [ "$offline" -eq 0 ] && [ "$lab" -eq 0 ] && [ "$molecule" -eq 0 ] || status=1
finish "$status"
