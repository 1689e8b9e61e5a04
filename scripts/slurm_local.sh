#!/usr/bin/env bash
# slurm_local.sh - throw-away single-node Slurm cluster for the test suite.
#
#   scripts/slurm_local.sh start DIR   # bring up munged + slurmctld + slurmd
#   scripts/slurm_local.sh stop  DIR   # cancel jobs, stop what `start` started
#   scripts/slurm_local.sh status DIR  # exit 0 if all three daemons are alive
#
# `start` prints shell code on stdout (`export SLURM_CONF=DIR/slurm.conf`), so
# a caller can do:   eval "$(scripts/slurm_local.sh start "$dir")"
# Everything else (progress, errors) goes to stderr.
#
# Exit status: 0 ok, 1 failure, 2 usage, 77 skipped (not root, or the Debian
# packages slurmctld/slurmd/slurm-client/munge are not installed).
#
# All state lives under DIR: munge key/socket/log, slurm.conf, StateSaveLocation,
# SlurmdSpoolDir, logs and pid files.  Only processes whose pids are recorded in
# DIR are ever signalled, plus -- only if jobs could not be cancelled -- the
# slurmstepd processes whose environment carries SLURM_CONF=DIR/slurm.conf
# (i.e. spawned by our slurmd) and their child processes (the job's tasks).
#
# Tunables (environment):
#   SLURM_LOCAL_CTLD_PORT      SlurmctldPort            (default 6817)
#   SLURM_LOCAL_SLURMD_PORT    SlurmdPort               (default 6818)
#   SLURM_LOCAL_START_TIMEOUT  seconds to wait for a working srun (default 40)
#   SLURM_LOCAL_CLUSTER        ClusterName              (default reprokit)
#   SLURM_LOCAL_INACTIVE_LIMIT InactiveLimit (default 0 = Slurm's default: a
#                              job whose srun was SIGKILLed together with its
#                              process group keeps running until scancel/stop;
#                              with e.g. 10 it is reaped after ~30 s)
set -euo pipefail

PROG=slurm_local
CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-6817}
SLURMD_PORT=${SLURM_LOCAL_SLURMD_PORT:-6818}
START_TIMEOUT=${SLURM_LOCAL_START_TIMEOUT:-40}
CLUSTER=${SLURM_LOCAL_CLUSTER:-reprokit}
INACTIVE_LIMIT=${SLURM_LOCAL_INACTIVE_LIMIT:-0}
ACTIVE_FILE=/run/slurm_local.active   # records the DIR of the running instance
LOCK_FILE=/run/slurm_local.lock       # serialises concurrent start/stop

log()  { echo "$PROG: $*" >&2; }
die()  { echo "$PROG: error: $*" >&2; exit 1; }
skip() { echo "$PROG: skipped: $*" >&2; exit 77; }

usage() {
    echo "usage: $0 {start|stop|status} DIR" >&2
    exit 2
}

# ---------------------------------------------------------------- helpers ---

# pid_alive PID NAME: PID exists, is not a zombie, and its comm is NAME.
pid_alive() {
    local pid=$1 name=$2 comm state
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ "$comm" == "$name" ]] || return 1
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ "$state" != Z && "$state" != X ]]
}

# read_pid FILE: print the pid stored in FILE (empty if none).
read_pid() {
    local f=$1 pid=""
    if [[ -r "$f" ]]; then read -r pid <"$f" 2>/dev/null || true; fi
    if [[ "$pid" =~ ^[0-9]+$ ]]; then echo "$pid"; fi
}

# port_in_use PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() {
    timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# stop_pid PID NAME WHAT [SECS]: SIGTERM, wait up to SECS (default 15) s,
# then SIGKILL (+5 s).
stop_pid() {
    local pid=$1 name=$2 what=$3 secs=${4:-15} i
    pid_alive "$pid" "$name" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < secs * 10; i++)); do
        pid_alive "$pid" "$name" || return 0
        sleep 0.1
    done
    log "$what (pid $pid) ignored SIGTERM for $secs s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        pid_alive "$pid" "$name" || return 0
        sleep 0.1
    done
    log "$what (pid $pid) is still alive after SIGKILL"
    return 1
}

# our_stepds DIR: pids of slurmstepd processes spawned by DIR's slurmd
# (recognised by SLURM_CONF=DIR/slurm.conf in their environment).
our_stepds() {
    local conf=$1/slurm.conf p comm
    for p in /proc/[0-9]*; do
        comm=$(cat "$p/comm" 2>/dev/null) || continue
        [[ "$comm" == slurmstepd ]] || continue
        if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$conf"; then
            echo "${p#/proc/}"
        fi
    done
}

# descendants PID...: all (transitive) child pids of the given pids.
descendants() {
    ps -e -o pid=,ppid= 2>/dev/null | awk -v roots="$*" '
        { kids[$2] = kids[$2] " " $1 }
        END {
            n = split(roots, q, " ")
            for (i = 1; i <= n; i++) {
                m = split(kids[q[i]], c, " ")
                for (j = 1; j <= m; j++) { print c[j]; q[++n] = c[j] }
            }
        }'
}

show_logs() {
    local dir=$1 f
    for f in "$dir/log/munged.log" "$dir/log/slurmctld.log" "$dir/log/slurmd.log"; do
        [[ -s "$f" ]] || continue
        echo "---- last lines of $f ----" >&2
        tail -n 15 "$f" >&2 || true
    done
}

take_lock() {
    exec 9>"$LOCK_FILE"
    if ! flock -w 60 9; then
        die "could not take $LOCK_FILE within 60 s (another start/stop is running)"
    fi
}

check_prereqs() {
    [[ $(id -u) -eq 0 ]] || skip "must run as root (uid is $(id -u))"
    local missing=() c
    for c in munged munge unmunge slurmctld slurmd srun sinfo squeue scancel scontrol flock timeout; do
        command -v "$c" >/dev/null 2>&1 || missing+=("$c")
    done
    ((${#missing[@]} == 0)) ||
        skip "missing commands: ${missing[*]} (apt-get install slurmctld slurmd slurm-client munge)"
}

# ------------------------------------------------------------------- stop ---

do_stop() {
    local dir=$1 conf pid i ids stepds left=0
    conf=$dir/slurm.conf
    [[ -d "$dir" ]] || return 0
    export SLURM_CONF=$conf

    local ctld_pid slurmd_pid munged_pid
    ctld_pid=$(read_pid "$dir/slurmctld.pid")
    slurmd_pid=$(read_pid "$dir/slurmd.pid")
    munged_pid=$(read_pid "$dir/munge/munged.pid")

    # 1. cancel every job while the controller is still up.
    if [[ -n "$ctld_pid" ]] && pid_alive "$ctld_pid" slurmctld && [[ -f "$conf" ]]; then
        ids=$(timeout 10 squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ' || true)
        if [[ -n "${ids// /}" ]]; then
            # shellcheck disable=SC2086
            timeout 10 scancel --quiet $ids 2>/dev/null || true
            for ((i = 0; i < 100; i++)); do      # up to 10 s for jobs to drain
                [[ -z "$(timeout 5 squeue -h -o %A 2>/dev/null || true)" ]] && break
                sleep 0.1
            done
        fi
    fi

    # 2. daemons, in reverse start order.
    if [[ -n "$slurmd_pid" ]]; then stop_pid "$slurmd_pid" slurmd slurmd || left=1; fi

    # step daemons outlive slurmd; give them a moment after scancel, then stop.
    for ((i = 0; i < 50; i++)); do
        stepds=$(our_stepds "$dir" | tr '\n' ' ')
        [[ -z "${stepds// /}" ]] && break
        sleep 0.1
    done
    if [[ -n "${stepds// /}" ]]; then
        # Jobs could not be cancelled (controller gone?): kill the tasks
        # (children of our step daemons), then the step daemons themselves.
        local tasks
        # shellcheck disable=SC2086
        tasks=$(descendants $stepds | tr '\n' ' ')
        log "stopping leftover slurmstepd pid(s) $stepds${tasks:+ and their task pid(s) $tasks}"
        if [[ -n "${tasks// /}" ]]; then
            # shellcheck disable=SC2086
            kill -KILL $tasks 2>/dev/null || true
        fi
        for pid in $stepds; do
            stop_pid "$pid" slurmstepd slurmstepd 3 || left=1
        done
    fi

    if [[ -n "$ctld_pid" ]]; then stop_pid "$ctld_pid" slurmctld slurmctld || left=1; fi
    if [[ -n "$munged_pid" ]]; then stop_pid "$munged_pid" munged munged || left=1; fi

    rm -f "$dir/slurmctld.pid" "$dir/slurmd.pid" "$dir/munge/munged.pid"
    if [[ -f "$ACTIVE_FILE" ]] && [[ "$(cat "$ACTIVE_FILE" 2>/dev/null)" == "$dir" ]]; then
        rm -f "$ACTIVE_FILE"
    fi
    return $left
}

# ------------------------------------------------------------------ start ---

# Path on which munged will listen.  munged insists that every directory on the
# way to its socket is executable by everyone, and sun_path is 108 bytes.
choose_munge_socket() {
    local dir=$1 sock=$1/munge/munge.socket.2 d ok=1
    chmod go+x "$dir" 2>/dev/null || true
    d=$dir
    while [[ "$d" != / && -n "$d" ]]; do
        if [[ $(( 0$(stat -c %a "$d") & 01 )) -eq 0 ]]; then ok=0; break; fi
        d=$(dirname "$d")
    done
    if ((ok)) && ((${#sock} < 100)); then
        echo "$sock"
    else
        # Fallback: a root-owned directory under /run (slurm.conf's AuthInfo
        # tells every Slurm command where it is).
        echo /run/slurm_local-munge/munge.socket.2
    fi
}

start_munged() {
    local dir=$1 sock=$2 mdir=$1/munge key i
    mkdir -p "$mdir" "$(dirname "$sock")"
    chmod 0755 "$mdir" "$(dirname "$sock")"
    key=$mdir/munge.key
    if [[ -r /etc/munge/munge.key ]]; then
        # munged run as root refuses a key owned by the munge user; copy it.
        install -m 0600 -o root -g root /etc/munge/munge.key "$key"
    elif [[ ! -s "$key" ]]; then
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile="$key" --force >/dev/null
        else
            dd if=/dev/urandom of="$key" bs=1 count=1024 status=none
        fi
        chmod 0600 "$key"
    fi
    if [[ -S "$sock" ]] && munge -n --socket="$sock" >/dev/null 2>&1; then
        die "a munged is already listening on $sock (another instance?)"
    fi
    rm -f "$sock" "$sock.lock"
    munged --socket="$sock" --key-file="$key" \
        --pid-file="$mdir/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$mdir/munged.seed" 9>&- </dev/null >>"$dir/log/munged.stdout" 2>&1 ||
        return 1
    for ((i = 0; i < 50; i++)); do
        if munge -n --socket="$sock" 2>/dev/null | unmunge --socket="$sock" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

write_conf() {
    local dir=$1 sock=$2 host=$3 node_line
    node_line=$(slurmd -C 2>/dev/null | grep -m1 '^NodeName=') ||
        die "'slurmd -C' printed no NodeName= line"
    # slurmd -C names the node after `hostname -s`; make sure it matches.
    node_line=$(sed -E "s/^NodeName=[^ ]+/NodeName=$host/" <<<"$node_line")
    : >"$dir/plugstack.conf"
    cat >"$dir/slurm.conf" <<EOF
# Generated by scripts/slurm_local.sh -- throw-away single-node cluster.
ClusterName=$CLUSTER
SlurmctldHost=$host
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
PlugStackConfig=$dir/plugstack.conf
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# Short timeouts: this is a test cluster on one host.
KillWait=2
MessageTimeout=5
TCPTimeout=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=$INACTIVE_LIMIT
MinJobAge=5
WaitTime=0
$node_line State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

do_start() {
    local dir=$1 host other pid sock t0 i state
    host=$(hostname -s)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    export SLURM_CONF=$dir/slurm.conf

    # -- refuse to start over a running instance ---------------------------
    for pid in "$(read_pid "$dir/slurmctld.pid"):slurmctld" \
               "$(read_pid "$dir/slurmd.pid"):slurmd" \
               "$(read_pid "$dir/munge/munged.pid"):munged"; do
        if pid_alive "${pid%%:*}" "${pid#*:}"; then
            die "an instance is already running in $dir (${pid#*:} pid ${pid%%:*}); run '$0 stop $dir' first"
        fi
    done
    other=$(cat "$ACTIVE_FILE" 2>/dev/null || true)
    if [[ -n "$other" && "$other" != "$dir" && -d "$other" ]]; then
        for pid in "$(read_pid "$other/slurmctld.pid"):slurmctld" \
                   "$(read_pid "$other/slurmd.pid"):slurmd"; do
            if pid_alive "${pid%%:*}" "${pid#*:}"; then
                die "another instance is running from $other; run '$0 stop $other' first"
            fi
        done
    fi
    for pid in $(pgrep -x slurmctld || true); do
        if pid_alive "$pid" slurmctld; then
            die "a slurmctld (pid $pid, not started from $dir) is already running; stop it first"
        fi
    done
    for pid in $(pgrep -x slurmd || true); do
        if pid_alive "$pid" slurmd; then
            die "a slurmd (pid $pid, not started from $dir) is already running; stop it first"
        fi
    done
    for pid in "$CTLD_PORT" "$SLURMD_PORT"; do
        if port_in_use "$pid"; then
            die "TCP port $pid on 127.0.0.1 is already in use (another Slurm instance?)"
        fi
    done

    t0=$(date +%s.%N)
    rm -rf "$dir/state" "$dir/spool" "$dir/log"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"

    # From here on, undo everything on failure.
    fail() {
        log "error: $*"
        show_logs "$dir"
        do_stop "$dir" || true
        exit 1
    }

    sock=$(choose_munge_socket "$dir")
    start_munged "$dir" "$sock" || fail "munged did not start (socket $sock)"
    write_conf "$dir" "$sock" "$host"
    echo "$dir" >"$ACTIVE_FILE"

    slurmctld -f "$dir/slurm.conf" -c 9>&- </dev/null >>"$dir/log/slurmctld.stdout" 2>&1 ||
        fail "slurmctld exited with status $?"
    slurmd -f "$dir/slurm.conf" 9>&- </dev/null >>"$dir/log/slurmd.stdout" 2>&1 ||
        fail "slurmd exited with status $?"

    # -- wait for an idle node and a working srun --------------------------
    local deadline ok=0 ctld_pid slurmd_pid
    deadline=$(( $(date +%s) + START_TIMEOUT ))
    while (( $(date +%s) < deadline )); do
        ctld_pid=$(read_pid "$dir/slurmctld.pid")
        slurmd_pid=$(read_pid "$dir/slurmd.pid")
        if [[ -n "$ctld_pid" ]] && ! pid_alive "$ctld_pid" slurmctld; then
            fail "slurmctld (pid $ctld_pid) died during start-up"
        fi
        if [[ -n "$slurmd_pid" ]] && ! pid_alive "$slurmd_pid" slurmd; then
            fail "slurmd (pid $slurmd_pid) died during start-up"
        fi
        state=$(timeout 5 sinfo -h -N -n "$host" -o %t 2>/dev/null | head -n1 || true)
        if [[ "$state" == idle ]]; then
            if timeout 15 srun -N1 -n1 --quiet true </dev/null >/dev/null 2>>"$dir/log/srun-check.err"; then
                ok=1
                break
            fi
        fi
        sleep 0.2
    done
    ((ok)) || fail "no working 'srun -N1 -n1 true' within ${START_TIMEOUT}s (node state: '${state:-unknown}')"

    log "cluster up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s (dir $dir, node $host)"
    printf 'export SLURM_CONF=%q\n' "$dir/slurm.conf"
}

do_status() {
    local dir=$1 rc=0
    pid_alive "$(read_pid "$dir/munge/munged.pid")" munged || { log "munged not running"; rc=1; }
    pid_alive "$(read_pid "$dir/slurmctld.pid")" slurmctld || { log "slurmctld not running"; rc=1; }
    pid_alive "$(read_pid "$dir/slurmd.pid")" slurmd || { log "slurmd not running"; rc=1; }
    return $rc
}

# ------------------------------------------------------------------- main ---

(($# == 2)) || usage
cmd=$1
DIR=$2
[[ -n "$DIR" ]] || usage

case "$cmd" in
start)
    check_prereqs
    take_lock
    do_start "$DIR"
    ;;
stop)
    check_prereqs
    [[ -d "$DIR" ]] || exit 0
    DIR=$(cd "$DIR" && pwd -P)
    take_lock
    if ! do_stop "$DIR"; then
        die "some processes of $DIR could not be stopped"
    fi
    ;;
status)
    [[ -d "$DIR" ]] || { log "no such directory: $DIR"; exit 1; }
    DIR=$(cd "$DIR" && pwd -P)
    do_status "$DIR"
    ;;
*)
    usage
    ;;
esac
