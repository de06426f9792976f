#!/bin/sh
# Tests a deployment as on real hosts, over loopback: every process (2 parties and the dealer) has
# its own key pair from veil-keygen and its own configuration file naming every endpoint and
# public key (README, "Parties on several hosts"), and is started by hand with --config, without
# veil-run. The mlp example at its small size must agree with the plaintext model (agree=1 on
# party 1's last line) and every process must exit 0. A configuration whose dealer key is wrong
# makes the session fail with a non-zero exit instead of hanging. The first session runs again on
# IPv6 loopback (tcp://[::1]:PORT endpoints) where the host has it. About 15 s here.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 1 # before the cd below: free_ports.py is beside us
top="${VEIL_TOP_BUILDDIR:-.}"
ex="$top/examples/mlp"
keygen="$top/tools/veil-keygen"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-config-XXXXXX") || exit 1
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
cd "$tmp" || exit 1

# three free loopback ports (below the ephemeral range, tests/free_ports.py: checked and released,
# so another process could still take one in between, which makes the test fail, not pass wrongly)
free_ports="$here/free_ports.py"
ports=$(python3 "$free_ports" 3)
set -- $ports
p0=$1; p1=$2; pd=$3
for who in p0 p1 dealer; do
    "$keygen" "$who" >/dev/null 2>&1 || { echo "FAIL: veil-keygen $who"; exit 1; }
    [ -f "$who.key" ] && [ -f "$who.pub" ] || { echo "FAIL: veil-keygen $who: no $who.key/.pub"; exit 1; }
done
pub() { sed -n 's/^public //p' "$1.pub"; } # the .pub file holds one line 'public <key>'
session=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
conf() { # self secret-key-file [dealer public key]
    dkey=${3:-$(pub dealer)}
    cat <<EOF
# veil session: 2 parties and a dealer
session  $session
parties  2
party 0  tcp://$host:$p0  $(pub p0)
party 1  tcp://$host:$p1  $(pub p1)
dealer   tcp://$host:$pd  $dkey
self     $1
secret-key-file $2
timeout  5
EOF
}
host=127.0.0.1
conf 0 p0.key >p0.conf
conf 1 p1.key >p1.conf
conf 2 dealer.key >dealer.conf

run_session() { # log prefix
    STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 "$ex" --small --runs 1 --config p0.conf \
        >"$1.p0" 2>&1 &
    a=$!
    STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 "$ex" --small --runs 1 --config p1.conf \
        >"$1.p1" 2>&1 &
    b=$!
    STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 "$ex" --small --runs 1 \
        --config dealer.conf >"$1.dealer" 2>&1 &
    c=$!
    # bounded: a hung process is killed after 120 s and counted as a failure
    ( sleep 120; touch "$1.hung"; kill -9 $a $b $c 2>/dev/null ) >/dev/null 2>&1 &
    w=$!
    wait $a; ra=$?
    wait $b; rb=$?
    wait $c; rc=$?
    kill $w 2>/dev/null
    echo "$ra $rb $rc"
}

codes=$(run_session ok)
case "$codes" in
"0 0 0") ;;
*) echo "FAIL: exit codes $codes"; cat ok.p0 ok.p1 ok.dealer; fail=1 ;;
esac
[ ! -e ok.hung ] || { echo "FAIL: the session hung"; fail=1; }
tail -n 1 ok.p1 | grep -q "agree=1" || { echo "FAIL: party 1 did not agree"; cat ok.p1; fail=1; }

# The same session on IPv6 loopback: bracketed IPv6 endpoints (docs/config.md) bind and connect,
# the data channel included (its DEALER to party 1 connects to [::1], VEIL_LOG=debug says where).
# Skipped with a note where the host has no IPv6 loopback.
ports6=$(python3 "$free_ports" 3 ::1 2>/dev/null)
if [ -n "$ports6" ]; then
    set -- $ports6
    p0=$1; p1=$2; pd=$3; host='[::1]'
    conf 0 p0.key >p0.conf
    conf 1 p1.key >p1.conf
    conf 2 dealer.key >dealer.conf
    codes=$(export VEIL_LOG=debug; run_session v6)
    case "$codes" in
    "0 0 0") ;;
    *) echo "FAIL: IPv6 endpoints: exit codes $codes"; tail -n 5 v6.p0 v6.p1 v6.dealer; fail=1 ;;
    esac
    tail -n 1 v6.p1 | grep -q "agree=1" || { echo "FAIL: IPv6: party 1 did not agree"; fail=1; }
    grep -q "data to party 1 goes sealed to tcp://\[::1\]:" v6.p0 ||
        { echo "FAIL: IPv6: party 0's data channel to party 1 is not on [::1]"; fail=1; }
else
    echo "note: no IPv6 loopback here: the IPv6 session is skipped"
fi

# party 1 is given a wrong public key for the dealer: the session must fail, not hang
"$keygen" other >/dev/null 2>&1
conf 1 p1.key "$(pub other)" >p1.conf
codes=$(run_session bad)
if [ "$codes" = "0 0 0" ] || [ -e bad.hung ]; then
    echo "FAIL: wrong key: exit codes $codes$([ -e bad.hung ] && echo ', hung') (expected failures)"
    cat bad.p0 bad.p1 bad.dealer; fail=1
fi
exit $fail
