# Shared by scripts/demo.sh and scripts/test.sh: install what is missing, and only that.
# Package mirrors come from this machine's own apt and pip configuration.

machine_cache() {  # the folder of build products kept across clones, as pip keeps its wheels in ~/.cache/pip
    # (Nautobot's venv and its migrated database, ansible-test's pinned virtualenvs: minutes of CPU each to
    # make): GPUFABRIC_CACHE, else /var/cache/gpufabric as root (beside the host image), else ~/.cache/gpufabric.
    if [ -n "${GPUFABRIC_CACHE:-}" ]; then
        echo "$GPUFABRIC_CACHE"
    elif [ "$(id -u)" -eq 0 ]; then
        echo /var/cache/gpufabric
    else
        echo "${XDG_CACHE_HOME:-$HOME/.cache}/gpufabric"
    fi
}

apt_updated=0
apt_update_once() {  # apt's package lists, read from the machine's mirrors once per run of a script
    [ "$apt_updated" -eq 1 ] && return 0
    echo "reading apt's package lists (apt-get update) ..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    apt_updated=1
}

apt_install() {  # apt_install PACKAGE...: needs root and apt; says what to do otherwise
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "note: cannot install $* here (needs root and apt-get): install it yourself" >&2
        return 0
    fi
    apt_update_once
    echo "installing Debian packages: $* (a minute or two the first time) ..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

apt_wanted=()
want_apt() {  # want_apt COMMAND PACKAGE...: PACKAGE(s) to install unless COMMAND already exists
    local cmd=$1; shift
    command -v "$cmd" >/dev/null 2>&1 || apt_wanted+=("$@")
}

want_file() {  # want_file FILE PACKAGE...: PACKAGE(s) to install unless FILE exists (headers, libraries)
    local file=$1; shift
    [ -e "$file" ] || apt_wanted+=("$@")
}

install_wanted() {  # what want_apt found missing, in one apt-get run (one download, one round of triggers)
    [ ${#apt_wanted[@]} -eq 0 ] || apt_install "${apt_wanted[@]}"
    apt_wanted=()
}

ensure_venv() {  # ensure_venv DIR [EXTRAS]: a virtualenv in DIR with gpufabric installed (editable)
    local dir=$1 extras=${2:-}
    python3 -m venv --help >/dev/null 2>&1 || apt_install python3-venv python3-pip
    local with="gpufabric${extras:+[$extras]}" fresh=0
    if [ ! -x "$dir/bin/python" ]; then
        echo "making the virtualenv $dir: pip installs $with (a few minutes the first time) ..." >&2
        python3 -m venv "$dir"
        fresh=1
    fi
    # Installed already from this very pyproject.toml, with these extras, from this very tree: nothing to do
    # (pip takes seconds just to find that out). The tree counts because the install is editable: a virtualenv
    # installed from another clone imports that clone's code, or nothing once it is gone.
    local stamp="$dir/.gpufabric-installed" want
    want="$(sha256sum pyproject.toml | cut -d' ' -f1) [$extras] $(pwd -P)"
    [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
    if [ -f "$stamp" ]; then
        echo "updating the virtualenv $dir: $with (pyproject.toml, the extras or the tree changed) ..." >&2
    elif [ "$fresh" -eq 0 ]; then
        echo "installing $with into the virtualenv $dir (pip; a few minutes the first time) ..." >&2
    fi
    "$dir/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-compile -e ".${extras:+[$extras]}"
    # Compiled here on every core, not left to the first import: where PYTHONDONTWRITEBYTECODE is set,
    # nothing imported is ever cached and every process would compile Ansible again. All but
    # Ansible's collections (15,000 of the 21,000 modules, compiled one at a time by pip: 40 s of a
    # fresh install); of those, the ones gpufabric uses (the NX-OS parsers and what they import,
    # kubernetes.core for the GPU Operator). This repository's own packages too (an editable install
    # leaves them out).
    echo "compiling $dir's Python modules (on every core, once) ..." >&2
    local site used=() c
    site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    for c in cisco/nxos ansible/netcommon ansible/utils kubernetes/core; do
        if [ -d "$site/ansible_collections/$c" ]; then used+=("$site/ansible_collections/$c"); fi
    done
    # A module that does not compile (some packages ship test data as .py) fails at import, if ever,
    # as it would have after pip: compileall's verdict does not stop the install.
    "$dir/bin/python" -m compileall -q -j 0 -x '/ansible_collections/' "$site" gpufabric nornir_tasks napalm_frr \
        napalm_cumulus napalm_gpufabric_* >/dev/null 2>&1 || true
    [ ${#used[@]} -eq 0 ] || "$dir/bin/python" -m compileall -q -j 0 "${used[@]}" >/dev/null 2>&1 || true
    echo "$want" >"$stamp"
    echo "the virtualenv $dir is ready" >&2
}

ensure_pip() {  # ensure_pip DIR MODULE REQUIREMENT: pip installs REQUIREMENT into DIR's venv unless MODULE imports
    local dir=$1 module=$2 requirement=$3
    "$dir/bin/python" -c "import $module" >/dev/null 2>&1 && return 0
    echo "installing $requirement into the virtualenv $dir (pip) ..." >&2
    "$dir/bin/python" -m pip install -q --disable-pip-version-check "$requirement"
}

ensure_prometheus() {  # ensure_prometheus DIR: promtool and prometheus on PATH, unpacked from Debian's
    # package into DIR rather than installed, so no prometheus service is enabled or started on this machine.
    local dir=$1
    if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then return 0; fi
    if [ ! -x "$dir/usr/bin/promtool" ]; then
        if ! command -v apt-get >/dev/null 2>&1; then
            echo "note: cannot fetch prometheus here (needs apt-get): install it yourself" >&2
            return 0
        fi
        echo "unpacking prometheus into $dir ..." >&2
        mkdir -p "$dir"
        [ "$(id -u)" -eq 0 ] && apt_update_once
        # apt warns that root downloads unsandboxed into a folder _apt cannot write: expected here.
        (cd "$dir" && apt-get download -qq prometheus 2>&1 | grep -v unsandboxed >&2 || true
         dpkg -x prometheus_*.deb . && rm -f prometheus_*.deb)
    fi
    export PATH="$PWD/$dir/usr/bin:$PATH"
}

ensure_unpacked() {  # ensure_unpacked DIR PACKAGE...: Debian packages unpacked into DIR, not installed: no
    # maintainer script runs, so no service is enabled or started and this machine's network is left alone.
    # The tests run the programs from DIR (with DIR's libraries); nothing is put on PATH.
    local dir=$1; shift
    [ -f "$dir/.unpacked" ] && [ "$(cat "$dir/.unpacked")" = "$*" ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "note: cannot fetch $* here (needs apt-get): the tests that need them are skipped" >&2
        return 0
    fi
    echo "unpacking $* into $dir ..." >&2
    rm -rf "$dir" && mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && apt_update_once
    # apt warns that root downloads unsandboxed into a folder _apt cannot write: expected here.
    (cd "$dir" && apt-get download -qq "$@" 2>&1 | grep -v unsandboxed >&2 || true
     for deb in ./*.deb; do dpkg -x "$deb" . && rm -f "$deb"; done)
    echo "$*" >"$dir/.unpacked"
}
