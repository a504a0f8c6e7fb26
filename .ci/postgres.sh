# Sourced by .ci/run: a throwaway PostgreSQL server for the history tests, from Debian's
# packages. Installs `postgresql` when missing (needs root and apt-get), runs initdb as
# the `postgres` user into a temporary folder, listens only on a Unix socket in that
# folder (no TCP), starts it with pg_ctl and exports DFX_TEST_POSTGRES_URL. The caller's
# EXIT trap (pg_stop) stops it and removes the folder, also when a step fails.

pg_bin() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [ -n "${dir}" ] && [ -x "${dir}/pg_ctl" ] && echo "${dir}"
}

pg_start() {
    if ! pg_bin >/dev/null; then
        if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql
        else
            echo "postgresql missing and cannot be installed here (need root and apt-get)" >&2
            return 1
        fi
    fi
    local bin
    bin="$(pg_bin)"
    PG_TMP="$(mktemp -d /tmp/dfx-pg.XXXXXX)"
    mkdir -p "${PG_TMP}/data" "${PG_TMP}/sock"
    local as_pg=()
    if [ "$(id -u)" = 0 ]; then
        chown -R postgres:postgres "${PG_TMP}"
        as_pg=(runuser -u postgres --)
    fi
    PG_AS=("${as_pg[@]}")
    PG_CTL="${bin}/pg_ctl"
    "${as_pg[@]}" "${bin}/initdb" -D "${PG_TMP}/data" -U postgres -A trust --no-sync -E UTF8 >/dev/null
    "${as_pg[@]}" "${PG_CTL}" -D "${PG_TMP}/data" -l "${PG_TMP}/server.log" -w \
        -o "-c listen_addresses='' -c unix_socket_directories='${PG_TMP}/sock' -c fsync=off" start
    export DFX_TEST_POSTGRES_URL="host=${PG_TMP}/sock user=postgres dbname=postgres"
    export DFX_REQUIRE_POSTGRES=1
}

pg_stop() {
    if [ -n "${PG_TMP:-}" ] && [ -d "${PG_TMP}/data" ]; then
        "${PG_AS[@]}" "${PG_CTL}" -D "${PG_TMP}/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "${PG_TMP}"
    fi
}
