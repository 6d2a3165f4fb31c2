#!/bin/sh
# docs/deploy.md's multi-host TLS setup, run as written on three "hosts" that are network namespaces
# of this machine (sched-1, worker-1, worker-2) joined by a bridge in a fourth; only addresses inside
# those namespaces (10.77.0.0/24) are used. Needs root and iproute2. Usage: sh docs/netns_tls_check.sh
# Leaves nothing behind: the namespaces, the processes and the folder are removed on exit.
set -eu
WORK=$(mktemp -d /tmp/sparrow-netns-XXXXXX)
HOSTS="sched-1 worker-1 worker-2"
PIDS=""
cleanup() {
    # every process in the namespaces (the services; $PIDS are only the shells that started them)
    for h in $HOSTS; do
        for pid in $(ip netns pids "sparrow-$h" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    done
    for pid in $PIDS; do kill "$pid" 2>/dev/null || true; done
    sleep 1
    for h in $HOSTS lan; do ip netns del "sparrow-$h" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
in_host() { host=$1; shift; ip netns exec "sparrow-$host" "$@"; }

# the network: a bridge in namespace "lan", one veth per host, 10.77.0.1-3
ip netns add sparrow-lan
in_host lan ip link add br0 type bridge
in_host lan ip link set br0 up
i=1
for h in $HOSTS; do
    ip netns add "sparrow-$h"
    ip link add "veth-$i" netns "sparrow-$h" type veth peer name "port-$i" netns sparrow-lan
    in_host lan ip link set "port-$i" master br0 up
    in_host "$h" ip addr add "10.77.0.$i/24" dev "veth-$i"
    in_host "$h" ip link set "veth-$i" up
    in_host "$h" ip link set lo up
    i=$((i + 1))
done

# section 1 of docs/deploy.md: the CA and the certificates
cd "$WORK"
sparrow certs init --certs-dir cluster-ca
sparrow certs issue sched-1 --role scheduler --certs-dir cluster-ca
sparrow certs issue worker-1 --role node-monitor --certs-dir cluster-ca
sparrow certs issue worker-2 --role node-monitor --certs-dir cluster-ca
sparrow certs issue alice --role client --certs-dir cluster-ca
sparrow certs issue bob --role client --certs-dir cluster-ca
T=$WORK/cluster-ca

# section 2: the services, each on its "host"
in_host sched-1 sparrow scheduler --listen 0.0.0.0:7077 --tls-ca $T/ca.pem --tls-cert $T/sched-1.pem --tls-key $T/sched-1-key.pem > sched.out 2> sched.log &
PIDS="$PIDS $!"
sleep 2
for w in worker-1 worker-2; do
    in_host $w sparrow node-monitor --scheduler 10.77.0.1:7077 --tls-ca $T/ca.pem --tls-cert $T/$w.pem --tls-key $T/$w-key.pem --id $w --executor thread > $w.out 2> $w.log &
    PIDS="$PIDS $!"
done
sleep 3
cat sched.out worker-1.out worker-2.out

# section 4: use it, as alice, from worker-2 (any host that reaches the scheduler)
export SPARROW_SCHEDULER=10.77.0.1:7077
export SPARROW_TLS_CA=$T/ca.pem SPARROW_TLS_CERT=$T/alice.pem SPARROW_TLS_KEY=$T/alice-key.pem
in_host worker-2 sparrow submit --tasks 4 -- sh -c 'echo task $SPARROW_TASK_INDEX'
in_host worker-2 sparrow status
echo "--- bob may not submit as alice:"
in_host worker-2 sparrow submit --tls-cert $T/bob.pem --tls-key $T/bob-key.pem --user alice -- true || echo "(exit $?)"
echo "--- alice's client certificate may not serve as a node monitor:"
in_host worker-1 sparrow node-monitor --scheduler 10.77.0.1:7077 --tls-ca $T/ca.pem --tls-cert $T/alice.pem --tls-key $T/alice-key.pem || echo "(exit $?)"
echo "--- a plaintext client gets one line:"
unset SPARROW_TLS_CA SPARROW_TLS_CERT SPARROW_TLS_KEY
printf 'guess\n' > guess && chmod 600 guess
in_host worker-2 sparrow submit --secret-file guess -- true || echo "(exit $?)"
echo "--- the scheduler's log:"
grep -v "disconnected" sched.log | tail -5
