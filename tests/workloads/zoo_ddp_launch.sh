#!/bin/bash
# zoo_ddp_launch.sh - start W local ranks of zoo_ddp.py as plain processes (no torchrun)
#
# usage: zoo_ddp_launch.sh W [zoo_ddp.py args...]
#
# Sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (a
# free port, or $ZOO_DDP_PORT), TORCHELASTIC_RUN_ID ($ZOO_DDP_RUN_ID, else zoo-ddp-PID-PORT: the
# job id rankscope reads, as torchrun sets it) and ZOO_DDP_TAG (names the workerquota fault's
# cgroup) and passes every other argument through. Uses /usr/bin/python3 (a pyenv python without torch
# may come first on PATH).
#
# Exit status: 0 when every rank exited 0, else the first failing rank's status (77: the
# workerquota fault could not make a cgroup, a skip). After the first failure the surviving
# ranks get ZOO_DDP_FAIL_GRACE_S seconds (default 10) to exit on their own - the gloo error
# reaches them ~5 s after a peer died (its orphaned loader worker holds copies of its gloo
# sockets until torch's 5 s watchdog ends it) - and are then sent SIGTERM (and SIGCONT, in
# case one is stopped). SIGINT/SIGTERM to the launcher stop all ranks and their loader workers. At exit
# it removes any cgroup a rank of this launch left behind (a SIGKILLed rank cannot).
#
# Two "nodes" on one machine (each list has one word per rank, W words):
#   ZOO_DDP_NETNS="NS0 NS1 ..."    rank r runs under `ip netns exec NS_r` (same PID: ip execs it)
#   ZOO_DDP_CGROUPS="DIR0 ..."     rank r is born in cgroup directory DIR_r, so its loader
#                                  worker is too (the launcher does not remove these)
#   ZOO_DDP_MASTER_ADDR=ADDR       MASTER_ADDR instead of 127.0.0.1 (rank 0's address as the
#                                  others reach it); gloo may also need GLOO_SOCKET_IFNAME
set -u

if [ $# -lt 1 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 W [zoo_ddp.py args...]" >&2
	exit 2
fi
nproc=$1
shift
read -r -a rank_netns <<<"${ZOO_DDP_NETNS:-}"
read -r -a rank_cgroup <<<"${ZOO_DDP_CGROUPS:-}"
for n in "NETNS ${#rank_netns[@]}" "CGROUPS ${#rank_cgroup[@]}"; do
	read -r var words <<<"$n"
	if ((words > 0 && words != nproc)); then
		echo "zoo_ddp_launch: ZOO_DDP_$var has $words words, not one per rank ($nproc)" >&2
		exit 2
	fi
done

here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
grace=${ZOO_DDP_FAIL_GRACE_S:-10}

if [ -n "${ZOO_DDP_PORT:-}" ]; then
	port=$ZOO_DDP_PORT
else
	# Let the kernel pick a free port; the tiny race until rank 0 binds it is acceptable.
	port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])') || exit 1
fi
tag=$$-$port

remove_cgroups() {
	local d p
	for d in /sys/fs/cgroup/zoo_ddp-"$tag"-r* /sys/fs/cgroup/cpu/zoo_ddp-"$tag"-r*; do
		[ -d "$d" ] || continue
		# anything still inside (an orphaned loader worker) goes back to the root group
		while read -r p; do
			echo "$p" >"$(dirname "$d")/cgroup.procs" 2>/dev/null
		done <"$d/cgroup.procs"
		rmdir "$d" 2>/dev/null || echo "zoo_ddp_launch: could not remove cgroup $d" >&2
	done
}

declare -A running	# pid -> rank, for ranks not yet reaped
for ((r = 0; r < nproc; r++)); do
	if [ ${#rank_netns[@]} = 0 ] && [ ${#rank_cgroup[@]} = 0 ]; then
		# one machine: bash's child execs the rank at once, with its variables
		RANK=$r LOCAL_RANK=$r WORLD_SIZE=$nproc LOCAL_WORLD_SIZE=$nproc \
		MASTER_ADDR=${ZOO_DDP_MASTER_ADDR:-127.0.0.1} MASTER_PORT=$port ZOO_DDP_TAG=$tag \
		TORCHELASTIC_RUN_ID=${ZOO_DDP_RUN_ID:-zoo-ddp-$tag} \
			"$py" "$here/zoo_ddp.py" "$@" &
		running[$!]=$r
		continue
	fi
	netns=()
	[ ${#rank_netns[@]} -gt 0 ] && netns=(ip netns exec "${rank_netns[r]}")
	(
		cg=${rank_cgroup[r]:-}
		if [ -n "$cg" ] && ! echo "$BASHPID" >"$cg/cgroup.procs"; then
			echo "zoo_ddp_launch: cannot start rank $r in cgroup $cg" >&2
			exit 1
		fi
		export RANK=$r LOCAL_RANK=$r WORLD_SIZE=$nproc LOCAL_WORLD_SIZE=$nproc \
			MASTER_ADDR=${ZOO_DDP_MASTER_ADDR:-127.0.0.1} MASTER_PORT=$port ZOO_DDP_TAG=$tag \
			TORCHELASTIC_RUN_ID=${ZOO_DDP_RUN_ID:-zoo-ddp-$tag}
		exec "${netns[@]}" "$py" "$here/zoo_ddp.py" "$@"
	) &
	running[$!]=$r
done

stop_ranks() {
	local p
	for p in "${!running[@]}"; do
		# Its DataLoader workers first: once orphaned they linger ~5 s (torch watchdog).
		pkill -TERM -P "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
		kill -CONT "$p" 2>/dev/null	# a SIGSTOPped rank acts on SIGTERM only once continued
	done
}
# A test that kills the launcher must not leave ranks behind.
trap 'stop_ranks; wait "${!running[@]}"; remove_cgroups; exit 130' INT
trap 'stop_ranks; wait "${!running[@]}"; remove_cgroups; exit 143' TERM

rc=0
timer=		# pid of the grace-period sleep after the first failure
while ((${#running[@]} > 0)); do
	done_pid=
	wait -n -p done_pid "${!running[@]}" $timer
	st=$?
	# No pid means wait was interrupted (e.g. by a signal): just wait again.
	[ -z "$done_pid" ] && continue
	if [ "$done_pid" = "$timer" ]; then
		timer=
		stop_ranks
		continue
	fi
	r=${running[$done_pid]}
	unset "running[$done_pid]"
	if ((st != 0)); then
		echo "zoo_ddp_launch: rank $r (pid $done_pid) exited with status $st" >&2
		if ((rc == 0)); then
			rc=$st
			sleep "$grace" &
			timer=$!
		fi
	fi
done
[ -n "$timer" ] && kill "$timer" 2>/dev/null
remove_cgroups
exit "$rc"
