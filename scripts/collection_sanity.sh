#!/usr/bin/env bash
# ansible-test sanity on the collection gpufabric.cluster, as scripts/build_collection.py assembles it.
#   scripts/collection_sanity.sh              # every sanity test that applies to the collection
#   scripts/collection_sanity.sh --test pep8  # extra arguments go to ansible-test sanity
# Run without containers (--local) on the venv's Python, by the ansible-test of the project's .venv (or of
# VENV_BIN: another ansible-core of the supported range, as docs/testing.md shows). ansible-test
# makes a virtualenv per sanity test and installs into it the exact versions it pins (pylint, yamllint,
# voluptuous, rstcheck, antsibull-docs-parser ...): those live in the machine's cache (scripts/lib.sh
# machine_cache: /var/cache/gpufabric/ansible-test as root, its HOME for the run), apart from the project's
# .venv and the user's ~/.ansible. Made once on a machine, minutes of CPU; a fresh clone reuses them.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=${VENV_BIN:-$repo/.venv/bin}
. scripts/lib.sh
cache=$(machine_cache)/ansible-test
mkdir -p "$cache/home"
# One run at a time on the machine: two clones' runs would make the same virtualenvs at once.
exec 8>"$cache/.lock"
flock 8
export HOME="$cache/home"
# ansible-test puts pip into each virtualenv with get-pip.py from its own CI file host, or a copy cached
# here under its version's name: the stand-in (scripts/ansible_test_get_pip.py) takes pip from the index.
# The Python the venv runs: 3.11 for the project's own; ansible-core 2.20 and later need 3.12 (VENV_BIN).
py=$("$bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pip_version=$("$bin/python" -c "from ansible_test._internal.python_requirements import get_venv_packages as p
from ansible_test._internal.host_configs import NativePythonConfig as c
print(p(c(version='$py'))['pip'])")
mkdir -p "$HOME/.ansible/test/cache"
cp scripts/ansible_test_get_pip.py "$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
# Assembled in a temporary folder, removed afterwards: the checkout is left as it was.
out=$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-collection.XXXXXX")
trap 'rm -rf "$out"' EXIT
collection=$("$bin/python" scripts/build_collection.py --out "$out")
cd "$collection"
# ansible-test lists a collection's files with git, from the closest repository above it: here that would
# be this clone, whose build/ is ignored (no file to test). The assembled tree is made a repository of
# its own, every file added (nothing committed), so ansible-test tests exactly what the collection ships.
git init -q . && git add -A
"$bin/ansible-test" sanity --local --python "$py" --color no "$@"
