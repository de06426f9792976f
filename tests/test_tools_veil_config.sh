#!/bin/sh
# Tests tools/veil-config: from a host list and the public keys veil-keygen wrote it writes one
# configuration per process, each listing every process with the same session, its own 'self'
# and 'secret-key-file NAME.key' (a given --session is kept, a key given inline names the
# process party<id>); bad host lists, missing or malformed key files, a duplicate or missing
# party, an endpoint the session parser refuses, a bad --session and an existing file without
# --force each exit non-zero with a message naming the problem. (A session run from generated
# files: the walk-through in test_examples_lenet.sh.)
set -u
top="${VEIL_TOP_BUILDDIR:-.}"
vconf="$top/tools/veil-config"
keygen="$top/tools/veil-keygen"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-vconf-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for who in p0 p1 p2 dealer; do
    (cd "$tmp" && "$keygen" "$who" >/dev/null 2>&1) || { echo "FAIL: veil-keygen $who"; exit 1; }
done
key2=$(sed -n 's/^public //p' "$tmp/p2.pub")
cat > "$tmp/hosts.txt" <<EOF
# three parties and a dealer
party 1  tcp://127.0.0.1:7001  p1.pub
party 0  tcp://127.0.0.1:7000  p0.pub   # the model owner
party 2  tcp://127.0.0.1:7002  $key2
dealer   tcp://127.0.0.1:7003  dealer.pub
EOF
sid=00112233445566778899aabbccddeeff
mkdir "$tmp/out"
if ! "$vconf" "$tmp/hosts.txt" -o "$tmp/out" --session $sid --timeout 7 >"$tmp/log" 2>&1; then
    echo "FAIL: veil-config on a good host list"; cat "$tmp/log"; fail=1
fi
n=0
for f in p0:0 p1:1 party2:2 dealer:3; do
    name=${f%:*}; self=${f#*:}; c="$tmp/out/$name.conf"
    [ -f "$c" ] || { echo "FAIL: no $name.conf"; fail=1; continue; }
    has() { grep -qxF -- "$1" "$c"; }
    has "session  $sid" && has 'parties  3' && has "self     $self" &&
        has "secret-key-file $name.key" && has 'timeout  7' &&
        has "party 0  tcp://127.0.0.1:7000  $(sed -n 's/^public //p' "$tmp/p0.pub")" &&
        has "party 2  tcp://127.0.0.1:7002  $key2" &&
        has "dealer   tcp://127.0.0.1:7003  $(sed -n 's/^public //p' "$tmp/dealer.pub")" ||
        { echo "FAIL: $name.conf:"; cat "$c"; fail=1; }
    n=$((n + 1))
done
[ "$n" = 4 ] || fail=1
# a fresh session id when none is given: 32 hex digits, the same in every file
mkdir "$tmp/fresh"
"$vconf" "$tmp/hosts.txt" -o "$tmp/fresh" >/dev/null 2>&1 || { echo "FAIL: without --session"; fail=1; }
s0=$(sed -n 's/^session  //p' "$tmp/fresh/p0.conf")
s1=$(sed -n 's/^session  //p' "$tmp/fresh/dealer.conf")
case "$s0" in
[0-9a-f][0-9a-f][0-9a-f][0-9a-f]*) [ ${#s0} = 32 ] && [ "$s0" = "$s1" ] && [ "$s0" != $sid ] ||
    { echo "FAIL: fresh session '$s0' / '$s1'"; fail=1; } ;;
*) echo "FAIL: fresh session '$s0'"; fail=1 ;;
esac

expect_fail() { # what expected-status message args...
    what=$1; want=$2; msg=$3; shift 3
    out=$("$vconf" "$@" 2>&1)
    rc=$?
    if [ "$rc" != "$want" ] || ! printf '%s' "$out" | grep -q -- "$msg"; then
        echo "FAIL: $what: exit $rc (want $want), expected a message with '$msg'"
        printf '%s\n' "$out"; fail=1
    fi
}
hl() { printf '%s\n' "$@" > "$tmp/bad.txt"; }
expect_fail "no HOSTS" 2 "missing HOSTS"
expect_fail "unknown option" 2 "unknown option" --bogus "$tmp/hosts.txt"
expect_fail "bad session" 2 "32 hex digits" "$tmp/hosts.txt" --session 12zz
expect_fail "bad timeout" 2 "seconds" "$tmp/hosts.txt" --timeout 0
expect_fail "no HOSTS file" 1 "cannot open" "$tmp/none.txt"
expect_fail "existing files" 1 "force" "$tmp/hosts.txt" -o "$tmp/out"
hl "party 0 tcp://127.0.0.1:1 p0.pub" "party 1 tcp://127.0.0.1:2 missing.pub"
expect_fail "a missing .pub" 1 "missing.pub" "$tmp/bad.txt" -o "$tmp"
printf 'public nonsense\n' > "$tmp/junk.pub"
hl "party 0 tcp://127.0.0.1:1 p0.pub" "party 1 tcp://127.0.0.1:2 junk.pub"
expect_fail "a malformed .pub" 1 "not a public-key file" "$tmp/bad.txt" -o "$tmp"
hl "party 0 tcp://127.0.0.1:1 p0.pub" "party 0 tcp://127.0.0.1:2 p1.pub"
expect_fail "a party twice" 1 "listed twice" "$tmp/bad.txt" -o "$tmp"
hl "party 0 tcp://127.0.0.1:1 p0.pub" "party 2 tcp://127.0.0.1:2 p1.pub"
expect_fail "party 1 missing" 1 "party 1 is missing" "$tmp/bad.txt" -o "$tmp"
hl "party 0 tcp://127.0.0.1:1 p0.pub"
expect_fail "one party" 1 "needs 'party 0' and" "$tmp/bad.txt" -o "$tmp"
hl "party 0 127.0.0.1:1 p0.pub" "party 1 tcp://127.0.0.1:2 p1.pub"
expect_fail "an endpoint without tcp://" 1 "tcp://HOST:PORT" "$tmp/bad.txt" -o "$tmp"
hl "party 0 tcp://127.0.0.1:1 p0.pub" "party 1 tcp://127.0.0.1:2 p0.pub"
expect_fail "one key for two processes" 1 "its own NAME.pub" "$tmp/bad.txt" -o "$tmp"
hl "party 0 tcp://127.0.0.1:1" "party 1 tcp://127.0.0.1:2 p1.pub"
expect_fail "a short line" 1 "expected 'party" "$tmp/bad.txt" -o "$tmp"
hl "party x tcp://127.0.0.1:1 p0.pub" "party 1 tcp://127.0.0.1:2 p1.pub"
expect_fail "a bad id" 1 "party id 'x'" "$tmp/bad.txt" -o "$tmp"
exit $fail
