#!/usr/bin/env bash
# A Nautobot of the tests' own on loopback: PostgreSQL and Redis as processes of this script's, with
# their data in a folder given, never the machine's services.
#   scripts/sot_server.sh install        # Nautobot's venv and Redis (unpacked) in the machine's cache (lib.sh)
#   scripts/sot_server.sh prepare        # the first start's migrations ahead of time (minutes; once)
#   scripts/sot_server.sh start DIR      # PostgreSQL, Redis and Nautobot on 127.0.0.1; DIR/server.env says where
#   scripts/sot_server.sh stop DIR       # stops them by the PIDs in DIR; DIR is left for the caller to remove
#   scripts/sot_server.sh where          # the folder of Nautobot's venv (the tests look for it there)
# DIR/server.env holds GPUFABRIC_SOT_URL and the path of the token's file (DIR/token, 0600): the token
# itself is printed nowhere.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

NAUTOBOT_VERSION=3.2.7
# Kept in the machine's cache (lib.sh), not the clone's: a fresh clone (CI's) finds Nautobot installed and its
# database migrated (minutes of CPU) by an earlier one. A folder a version: clones of two versions share none.
cache=$(machine_cache)
venv=$cache/nautobot-$NAUTOBOT_VERSION
redis=$cache/redis
pg_bin=/usr/lib/postgresql/15/bin

install() {
    # Debian's postgresql-15 package creates and starts a cluster of the machine's own when installed:
    # it is not installed from here (the machine image has it).
    [ -x "$pg_bin/postgres" ] || echo "note: no PostgreSQL 15 ($pg_bin): the source of truth's tests are skipped" >&2
    # One install at a time on the machine: another clone's run may be making the same folders.
    mkdir -p "$cache"
    exec 8>"$cache/.install.lock"
    flock 8
    # Unpacked, not installed: redis-server's package would enable and start a service. Its binary is
    # redis-tools' redis-check-rdb, which acts as the server under that name.
    ensure_unpacked "$redis" redis-tools libjemalloc2 liblzf1
    [ -e "$redis/usr/bin/redis-server" ] || ln -s redis-check-rdb "$redis/usr/bin/redis-server"
    local stamp="$venv/.installed"
    # A venv's scripts name its Python by the path it was made at: one made through another checkout's
    # link to this cache (or moved) has scripts that cannot run, and is made again.
    local runs=0
    [ -x "$(sed -n '1s/^#!//p' "$venv/bin/nautobot-server" 2>/dev/null)" ] && runs=1
    [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$NAUTOBOT_VERSION" ] && [ "$runs" -eq 1 ] && return 0
    echo "making $venv: pip installs nautobot $NAUTOBOT_VERSION (a few minutes the first time) ..." >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "nautobot==$NAUTOBOT_VERSION"
    echo "$NAUTOBOT_VERSION" >"$stamp"
}

free_port() {  # a TCP port on 127.0.0.1 that nothing listens on now, outside the ephemeral range
    "$venv/bin/python" - <<'EOF'
import random, socket
for _ in range(200):
    port = random.randint(20000, 30000)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break
else:
    raise SystemExit("no free port")
EOF
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds, or fail naming WHAT
    local deadline=$((SECONDS + $1)) what=$2; shift 2
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then echo "$what did not come up (see its log)" >&2; return 1; fi
        sleep 0.5
    done
}

# A long step in the background, waited for, its PID in DIR/NAME.pid so that stop ends it: bash runs a trap
# only once the command in the foreground has ended, and a migration takes minutes, which a SIGTERM (CI's time
# limit, `timeout`, the test script stopping) would otherwise wait out.
waited() {  # waited DIR NAME COMMAND...
    local dir=$1 name=$2 rc=0; shift 2
    "$@" <&0 &  # stdin kept: a command sent to the background otherwise reads /dev/null
    echo $! >"$dir/$name.pid"
    wait $! || rc=$?
    rm -f "$dir/$name.pid"  # not left for stop to signal a PID the system may give to another process
    return "$rc"
}

start() {
    local dir=$1
    [ -x "$venv/bin/nautobot-server" ] || { echo "run $0 install first" >&2; return 2; }
    venv=$(cd "$venv" && pwd); redis=$(cd "$redis" && pwd)
    dir=$(cd "$dir" && pwd)
    # PostgreSQL refuses to run as root: as root, its cluster belongs to the postgres user (or nobody).
    local as=() owner
    owner=$(id -un)
    if [ "$(id -u)" -eq 0 ]; then
        owner=postgres; id postgres >/dev/null 2>&1 || owner=nobody
        as=(setpriv --reuid="$owner" --regid="$(id -g "$owner")" --clear-groups --)
    fi
    mkdir -p "$dir/redis" "$dir/media"
    chmod 700 "$dir"
    # The cluster's own folder, one the postgres user can reach whatever the folders above DIR allow;
    # removed by stop.
    local pg
    pg=$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-sot-pg.XXXXXX")
    echo "$pg" >"$dir/pg.path"
    mkdir -p "$pg/sock"
    local pg_port redis_port web_port template="$venv/pg-template" fresh=1
    pg_port=$(free_port); redis_port=$(free_port); web_port=$(free_port)
    # The first start migrates an empty database (minutes) and keeps the migrated cluster beside the venv;
    # later starts copy it (a second).
    # One migration at a time: a start while another (say `prepare`) migrates waits for its template.
    exec 9>"$venv/.template.lock"
    flock 9
    if [ -f "$template/PG_VERSION" ]; then
        cp -a "$template" "$pg/data"
        fresh=0
        flock -u 9
    else
        mkdir -p "$pg/data"
    fi
    [ "$(id -u)" -ne 0 ] || chown -R "$owner" "$pg"
    [ "$fresh" -eq 0 ] ||
        "${as[@]}" "$pg_bin/initdb" -D "$pg/data" -U nautobot --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1
    start_postgres() {
        "${as[@]}" "$pg_bin/postgres" -D "$pg/data" -h 127.0.0.1 -p "$pg_port" -k "$pg/sock" -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off >>"$dir/postgres.log" 2>&1 9>&- &
        echo $! >"$dir/postgres.pid"
        wait_for 60 PostgreSQL "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port"
    }
    start_postgres
    LD_LIBRARY_PATH="$redis/usr/lib/x86_64-linux-gnu" "$redis/usr/bin/redis-server" --bind 127.0.0.1 \
        --port "$redis_port" --save '' --appendonly no --dir "$dir/redis" >"$dir/redis.log" 2>&1 9>&- &
    echo $! >"$dir/redis.pid"
    [ "$fresh" -eq 0 ] || "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U nautobot nautobot
    local secret
    secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    cat >"$dir/nautobot_config.py" <<EOF
from nautobot.core.settings import *  # noqa: F403

ALLOWED_HOSTS = ["127.0.0.1"]
SECRET_KEY = "$secret"
DATABASES = {"default": {"NAME": "nautobot", "USER": "nautobot", "PASSWORD": "", "HOST": "127.0.0.1",
             "PORT": "$pg_port", "ENGINE": "django.db.backends.postgresql", "CONN_MAX_AGE": 300}}
CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": "redis://127.0.0.1:$redis_port/0",
          "TIMEOUT": 300, "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"}}}
CELERY_BROKER_URL = "redis://127.0.0.1:$redis_port/1"
MEDIA_ROOT = "$dir/media"
STATIC_ROOT = "$dir/static"
GIT_ROOT = "$dir/git"
JOBS_ROOT = "$dir/jobs"
INSTALLATION_METRICS_ENABLED = False
DEBUG = False
EOF
    wait_for 30 Redis env LD_LIBRARY_PATH="$redis/usr/lib/x86_64-linux-gnu" "$redis/usr/bin/redis-cli" \
        -h 127.0.0.1 -p "$redis_port" ping
    export NAUTOBOT_CONFIG="$dir/nautobot_config.py" NAUTOBOT_ROOT="$dir"
    if [ "$fresh" -eq 1 ]; then
        # Its log beside the venv (one migration at a time): a start waiting for the template sees it grow.
        waited "$dir" migrate "$venv/bin/nautobot-server" migrate --no-input >"$venv/migrate.log" 2>&1 9>&-
        # Kept for the next start: the cluster, copied while PostgreSQL is stopped.
        local pid
        pid=$(cat "$dir/postgres.pid")
        kill -INT "$pid"
        while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
        rm -rf "$template.new" && cp -a "$pg/data" "$template.new" && mv -T "$template.new" "$template"
        flock -u 9
        start_postgres
    fi
    # The superuser and a new API token, made in one shell of Nautobot's own: the token goes to a file only
    # its owner reads, and the tokens of earlier starts (a copied cluster holds them) are removed.
    (umask 077 && waited "$dir" nbshell "$venv/bin/nautobot-server" nbshell >"$dir/token.log" 2>&1 9>&- <<EOF
import secrets
from nautobot.users.models import Token, User
user = User.objects.filter(username="gpufabric").first() or User.objects.create_superuser("gpufabric", "gpufabric@example.invalid", secrets.token_hex(16))
Token.objects.filter(user=user).delete()
open("$dir/token", "w").write(Token.objects.create(user=user, key=secrets.token_hex(20)).key)
EOF
    )
    [ -s "$dir/token" ] || { echo "the API token was not made (see $dir/token.log)" >&2; return 1; }
    "$venv/bin/nautobot-server" runserver --noreload "127.0.0.1:$web_port" >"$dir/nautobot.log" 2>&1 9>&- &
    echo $! >"$dir/nautobot.pid"
    wait_for 180 Nautobot "$venv/bin/python" -c \
        "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$web_port/health/', timeout=5)"
    printf 'GPUFABRIC_SOT_URL=http://127.0.0.1:%s\nGPUFABRIC_SOT_TOKEN_FILE=%s\n' "$web_port" "$dir/token" >"$dir/server.env"
}

stop() {
    local dir=$1 name pid
    for name in migrate nbshell nautobot redis postgres; do
        [ -f "$dir/$name.pid" ] || continue
        pid=$(cat "$dir/$name.pid")
        # postgres: SIGINT is its fast shutdown; the others stop on SIGTERM.
        if [ "$name" = postgres ]; then kill -INT "$pid" 2>/dev/null || true; else kill "$pid" 2>/dev/null || true; fi
        for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$dir/$name.pid"
    done
    if [ -f "$dir/pg.path" ]; then
        local pg
        pg=$(cat "$dir/pg.path")
        case "$pg" in */gpufabric-sot-pg.*) rm -rf --one-file-system "$pg" ;; esac
        rm -f "$dir/pg.path"
    fi
}

prepared=""
prepare() {  # the first start's migrations, done ahead (CI runs this beside the other tests)
    prepared=$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-sot-prepare.XXXXXX")
    trap 'stop "$prepared"; rm -rf "$prepared"' EXIT
    trap 'exit 143' TERM INT
    if [ ! -f "$venv/pg-template/PG_VERSION" ]; then start "$prepared"; fi
}

case "${1:-}" in
install) install ;;
where) echo "$venv" ;;
prepare) prepare ;;
start)
    [ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }
    # Called plainly, so that errexit holds inside it; whatever stops it half-way stops what it started.
    # The folder in a variable of the script's own: the EXIT trap may run inside `start`, where $2 is
    # not the script's.
    started=0 start_dir=$2
    trap '[ "$started" -eq 1 ] || stop "$start_dir"' EXIT
    trap 'exit 143' TERM INT
    start "$start_dir"
    started=1
    ;;
stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
*) echo "usage: $0 install | prepare | start DIR | stop DIR | where" >&2; exit 2 ;;
esac
