#!/bin/sh
# docs/deploy.md's multi-host TLS setup, run as written on four "hosts" that are network namespaces
# of this machine (sched-1, sched-2, worker-1, worker-2) joined by a bridge in a fifth; only addresses
# inside those namespaces (10.77.0.0/24) are used. Needs root and iproute2. Usage: sh docs/netns_tls_check.sh
# (tests/deploy/test_netns_tls.py runs it and checks its output).
#
# Taken from deploy.md as it is written there (extracted from the file when this runs, not copied):
# section 1's `sparrow certs` commands, section 2's sparrow.toml (minus `task_user`, below), section
# 4's commands (its `export` lines, `sparrow status`, `sparrow submit`), and section 2's `alice$` and
# `ops$` lines. Run as written there too: section 1's install commands (without `sudo`: this runs as
# root), section 3's ExecStart lines (without systemd; %H is the host's name), and section 4's Python
# (with the same variables). Each "host" resolves the docs' names, sched-1.example to
# worker-2.example (/etc/netns/NAME/hosts), and has its own /etc/sparrow (/etc/netns/NAME/sparrow,
# which `ip netns exec` mounts there). Not run: systemd itself, and `task_user` (tested by
# tests/runtime/services/test_task_user.py: here the task user could not run this machine's Python,
# which is under /root, mode 0700).
#
# Leaves nothing behind: the namespaces, the processes, the folder, /etc/netns/sparrow-*, and the
# /etc/sparrow mount point and `sparrow` user when it made them are removed on exit.
set -eu
DOCS=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/sparrow-netns-XXXXXX)
HOSTS="sched-1 sched-2 worker-1 worker-2"
MADE_ETC=""
MADE_USER=""
cleanup() {
    for h in $HOSTS; do  # every process in the namespaces: the services, their workers
        for pid in $(ip netns pids "sparrow-$h" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    done
    sleep 1
    for h in $HOSTS; do
        for pid in $(ip netns pids "sparrow-$h" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    done
    for h in $HOSTS lan; do
        ip netns del "sparrow-$h" 2>/dev/null || true
        rm -rf "/etc/netns/sparrow-$h"
    done
    rmdir /etc/netns 2>/dev/null || true
    if [ -n "$MADE_ETC" ]; then rmdir /etc/sparrow 2>/dev/null || true; fi
    if [ -n "$MADE_USER" ]; then userdel sparrow 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
in_host() { host=$1; shift; ip netns exec "sparrow-$host" "$@"; }
# the lines of deploy.md's first fenced block whose first line starts with $1, without the fences
doc_block() { awk -v first="$1" '
    found && /^```/ { exit }
    found { print }
    !found && prev ~ /^```/ && index($0, first) == 1 { found = 1; print }
    { prev = $0 }' "$DOCS/deploy.md"; }
# the command of the line of that block that starts with the prompt $2 (like "alice$")
doc_line() { doc_block "$1" | awk -v prompt="$2" 'index($0, prompt) == 1 { sub(/^[^ ]+ +/, ""); print; exit }'; }

# the network: a bridge in namespace "lan", one veth per host, 10.77.0.1-4, and the hosts' names
ip netns add sparrow-lan
in_host lan ip link add br0 type bridge
in_host lan ip link set br0 up
[ -d /etc/sparrow ] || { mkdir /etc/sparrow; MADE_ETC=1; }
i=1
for h in $HOSTS; do
    ip netns add "sparrow-$h"
    ip link add "veth-$i" netns "sparrow-$h" type veth peer name "port-$i" netns sparrow-lan
    in_host lan ip link set "port-$i" master br0 up
    in_host "$h" ip addr add "10.77.0.$i/24" dev "veth-$i"
    in_host "$h" ip link set "veth-$i" up
    in_host "$h" ip link set lo up
    mkdir -p "/etc/netns/sparrow-$h/sparrow"
    j=1
    for name in $HOSTS; do echo "10.77.0.$j $name.example"; j=$((j + 1)); done > "/etc/netns/sparrow-$h/hosts"
    echo "127.0.0.1 localhost" >> "/etc/netns/sparrow-$h/hosts"
    i=$((i + 1))
done
id sparrow > /dev/null 2>&1 || { useradd --system --no-create-home --shell /usr/sbin/nologin sparrow; MADE_USER=1; }

# section 1: the CA and the certificates (deploy.md's commands), and one more client, bob
cd "$WORK"
doc_block "sparrow certs init --certs-dir cluster-ca" > certs.sh
echo "--- section 1, as written:"
cat certs.sh
sh -e certs.sh > /dev/null
sparrow certs issue bob --role client --certs-dir cluster-ca > /dev/null
# ... copied to each host as section 1 says (the scheduler's pair under the names it gives)
for h in $HOSTS; do
    case $h in sched-*) pair=scheduler ;; *) pair=node ;; esac
    in_host "$h" install -D -m 0644 cluster-ca/ca.pem /etc/sparrow/tls/ca.pem
    in_host "$h" install -D -m 0600 -o sparrow -g sparrow "cluster-ca/$h.pem" "/etc/sparrow/tls/$pair.pem"
    in_host "$h" install -D -m 0600 -o sparrow -g sparrow "cluster-ca/$h-key.pem" "/etc/sparrow/tls/$pair-key.pem"
done

# section 2: the same sparrow.toml on every host (task_user left out: see the header)
doc_block "# /etc/sparrow/sparrow.toml" | grep -v '^task_user' > sparrow.toml
for h in $HOSTS; do in_host "$h" install -m 0644 sparrow.toml /etc/sparrow/sparrow.toml; done

# the ops$ line of section 2 reads T=/etc/sparrow/tls: the monitor's pair goes there on sched-1
in_host sched-1 install -m 0600 cluster-ca/prometheus.pem cluster-ca/prometheus-key.pem /etc/sparrow/tls/

# section 3's ExecStart lines (%H: the host name), each on its host
for s in sched-1 sched-2; do
    in_host $s /bin/sh -c 'exec sparrow scheduler --config /etc/sparrow/sparrow.toml' > $s.out 2> $s.log &
done
sleep 2
for w in worker-1 worker-2; do
    in_host $w /bin/sh -c "exec sparrow node-monitor --config /etc/sparrow/sparrow.toml --id $w --label rack-a" \
        > $w.out 2> $w.log &
done
for w in worker-1 worker-2; do  # its ready line: registered with both schedulers
    n=0
    until [ -s $w.out ] || [ $n -ge 60 ]; do sleep 0.5; n=$((n + 1)); done
done
echo "--- the services' ready lines:"
cat sched-1.out sched-2.out worker-1.out worker-2.out

# section 4, as alice on worker-2 (any host that reaches the schedulers), her files in ~/.sparrow
mkdir -p alice/.sparrow
cp cluster-ca/ca.pem cluster-ca/alice.pem cluster-ca/alice-key.pem alice/.sparrow/
HOME=$WORK/alice
export HOME
doc_block "export SPARROW_SCHEDULER=" > section4.sh
echo "--- section 4, as written:"
cat section4.sh
echo 'python -c "from sparrow_runtime import SparrowExecutor
with SparrowExecutor([\"sched-1.example:7077\", \"sched-2.example:7077\"]) as ex:
    print(\"SparrowExecutor map:\", list(ex.map(abs, [-1, -2, -3])))"' >> section4.sh
in_host worker-2 sh -e section4.sh 2>&1 | grep -v "^\[[0-9]*\] vm$"
T=/etc/sparrow/tls
SECTION2="sched-1$  sparrow scheduler"
echo "--- section 2's alice\$ line, as written:"
doc_line "$SECTION2" 'alice$' | tee alice.sh
in_host worker-2 sh -e alice.sh | head -1
echo "--- section 2's ops\$ line, as written (on sched-1: worker-1's HTTPS metrics read with the monitor certificate):"
doc_line "$SECTION2" 'ops$' | tee ops.sh
in_host sched-1 env T=$T sh -e ops.sh

T=$WORK/cluster-ca
export SPARROW_SCHEDULER=sched-1.example:7077
echo "--- a stranger: bob may not submit as alice:"
in_host worker-2 sparrow submit --tls-ca $T/ca.pem --tls-cert $T/bob.pem --tls-key $T/bob-key.pem --user alice -- true || echo "(exit $?)"
echo "--- alice's client certificate may not serve as a node monitor:"
in_host worker-1 sparrow node-monitor --scheduler sched-1.example:7077 --tls-ca $T/ca.pem --tls-cert $T/alice.pem --tls-key $T/alice-key.pem || echo "(exit $?)"
echo "--- a client of another CA gets one line:"
sparrow certs init --certs-dir other-ca > /dev/null
sparrow certs issue mallory --role client --certs-dir other-ca > /dev/null
in_host worker-2 sparrow submit --tls-ca other-ca/ca.pem --tls-cert other-ca/mallory.pem --tls-key other-ca/mallory-key.pem -- true || echo "(exit $?)"
echo "--- a plaintext client gets one line:"
printf 'guess\n' > guess && chmod 600 guess
in_host worker-2 sparrow submit --secret-file guess -- true || echo "(exit $?)"
echo "--- sched-1's log:"
grep -v "disconnected" sched-1.log | tail -3
