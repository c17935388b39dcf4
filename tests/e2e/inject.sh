#!/usr/bin/env bash
# rankscope inject: the CUPTI library loaded into running processes, which must not notice.
#  1. a single-threaded target: exit 0, the library in its maps, one thread more (the
#     library's), finding no CUDA driver it tells a running rankscope daemon "dormant: no CUDA
#     driver", the checksum of an uninjected run, exit status 0; and, in a target that
#     spins with every register set, every register (ymm, MXCSR, x87 too) put back;
#  2. a second inject: refused ("already has ... loaded"), exit 1, the target unharmed;
#  3. no such PID: exit 1; a PID another process traces: refused, "already traced by PID X",
#     exit 1, the target unharmed once that tracer is gone;
#  4. 4 more threads and a SIGALRM every ms (signals that arrive during the calls): loaded,
#     the same checksum;
#  5. blocked in read() on a FIFO: loaded there, the read restarts, and gets what is written.
#  2b: the target's socket variable names a path where nothing listens: loaded, and said so;
#  2c: the same target with --cupti-socket naming the daemon's socket: the library connects
#      there (the daemon hears it), no warning; a relative --cupti-socket: exit 2.
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (ptrace of processes rankscope did not start)"
[ "$(uname -m)" = x86_64 ] || skip "rankscope inject is x86-64 only"
LIB="$TOP/build/librankscope_cupti.so"
[ -e /usr/local/cuda/include/cupti.h ] ||
	skip "no CUPTI headers (/usr/local/cuda/include/cupti.h): the library and its doubles need them"
[ -f "$LIB" ] || fail "build/librankscope_cupti.so was not built: make"
TGT="$FIX/inject_target"
if [ ! -x "$TGT" ]; then
	command -v cc >/dev/null || skip "build/fixtures/inject_target not built (make fixtures)"
	TGT="$T/inject_target"
	cc -O2 -g -Wall -Wextra -o "$TGT" "$TOP/tests/fixtures/inject_target.c" -lpthread ||
		fail "could not build tests/fixtures/inject_target.c"
fi

# ref ARGS...: the done line of a run with nothing injected
ref() { "$TGT" "$@" | grep '^done '; }
# start NAME ARGS...: a target in the background; sets P to its PID
start() {
	local name=$1
	shift
	bg "$name" "$TGT" "$@"
	wait_lines "$T/$name.out" '^ready pid=' 1 10 || fail "$name did not start"
	P=$(sed -n 's/^ready pid=//p' "$T/$name.out")
}
tasks() { ls "/proc/$1/task" | wc -l; }
# inject NAME ARGS...: rankscope inject, output in $T/NAME.inj; sets RC
inject() {
	local name=$1
	shift
	"$RS" inject "$@" >"$T/$name.inj" 2>&1
	RC=$?
}
# finish NAME REF: the target exits 0 and prints the reference checksum
finish() {
	[ -n "$2" ] || fail "$1: the reference run printed no done line"
	wait_exit "$(eval echo "\$PID_$1")" 30 || fail "$1 exited with status $? (output: $(tail -3 "$T/$1.out"))"
	[ "$(grep '^done ' "$T/$1.out")" = "$2" ] ||
		fail "$1: '$(grep '^done ' "$T/$1.out")' after the injection, '$2' without"
}
loaded_re() { echo "^rankscope: inject: loaded $LIB into PID $1 \(handle 0x[0-9a-f]+, InitializeInjection returned 1\)$"; }

# 1, with a daemon listening where the target's library will connect
DAEMON=0
if [ -r /sys/kernel/btf/vmlinux ]; then
	bg rsd "$RS" daemon --listen 127.0.0.1:$(free_port) --lock-file "$T/daemon.lock"
	wait_lines "$T/rsd.out" 'watching for training processes' 1 30 || fail "daemon did not start"
	DAEMON=1
fi
export RANKSCOPE_CUPTI_SOCKET=$T/cupti/cupti.sock
REF1=$(ref --iters 1500)
start t1 --iters 1500
sleep 0.2
N0=$(tasks "$P")
inject t1 -p "$P"
[ "$RC" = 0 ] || fail "inject exited $RC: $(cat "$T/t1.inj")"
grep -qE "$(loaded_re "$P")" "$T/t1.inj" || fail "unexpected output: $(cat "$T/t1.inj")"
grep -qF "$LIB" "/proc/$P/maps" || fail "$LIB is not in /proc/$P/maps"
[ "$(tasks "$P")" = $((N0 + 1)) ] || fail "$(tasks "$P") threads after the injection, $N0 before (want one more)"
echo "1: $(cat "$T/t1.inj")"
if [ $DAEMON = 1 ]; then
	wait_lines "$T/rsd.out" "PID $P \(not a rank\): GPU timing: dormant: no CUDA driver" 1 15 ||
		fail "the daemon heard no 'dormant: no CUDA driver' from PID $P"
	echo "1: $(grep "PID $P (not a rank)" "$T/rsd.out")"
	grep -q 'nothing listens' "$T/t1.inj" && fail "a warning with the daemon listening: $(cat "$T/t1.inj")"
fi

# 2 (same target, still running)
inject t1again -p "$P"
[ "$RC" = 1 ] || fail "second inject exited $RC, want 1: $(cat "$T/t1again.inj")"
grep -q "PID $P already has librankscope_cupti.so loaded; nothing to do" "$T/t1again.inj" ||
	fail "second inject: $(cat "$T/t1again.inj")"
finish t1 "$REF1"
echo "1: $REF1 with and without; 2: $(cat "$T/t1again.inj")"

# 2b: the target's socket variable names a path where nothing listens: loaded, and said
RANKSCOPE_CUPTI_SOCKET=$T/nobody.sock start lonely --iters 1500
sleep 0.2
inject lonely -p "$P"
[ "$RC" = 0 ] || fail "inject (no listener) exited $RC: $(cat "$T/lonely.inj")"
grep -q "nothing listens on $T/nobody.sock as PID $P sees it (No such file or directory)" \
	"$T/lonely.inj" || fail "no word on the missing listener: $(cat "$T/lonely.inj")"
echo "2b: $(grep 'nothing listens' "$T/lonely.inj" | cut -c1-120)"
wait_exit "$PID_lonely" 30 || fail "the lonely target failed"

# 2c: --cupti-socket overrides the target's variable
inject badsock -p 1 --cupti-socket cupti.sock
[ "$RC" = 2 ] || fail "a relative --cupti-socket: exit $RC, want 2: $(cat "$T/badsock.inj")"
if [ $DAEMON = 1 ]; then
	RANKSCOPE_CUPTI_SOCKET=$T/nobody.sock start given --iters 1500
	sleep 0.2
	inject given -p "$P" --cupti-socket "$RANKSCOPE_CUPTI_SOCKET"
	[ "$RC" = 0 ] || fail "inject --cupti-socket exited $RC: $(cat "$T/given.inj")"
	grep -q 'nothing listens' "$T/given.inj" && fail "a warning: $(cat "$T/given.inj")"
	wait_lines "$T/rsd.out" "PID $P \(not a rank\): GPU timing: dormant: no CUDA driver" 1 15 ||
		fail "the daemon heard nothing from PID $P injected with --cupti-socket"
	echo "2c: $(grep "PID $P (not a rank)" "$T/rsd.out")"
	wait_exit "$PID_given" 30 || fail "the target injected with --cupti-socket failed"
fi

start regs --spin-regs 2500
grep -q '^skip: no AVX' "$T/regs.out" && skip "no AVX for the register check"
sleep 0.3
inject regs -p "$P"
[ "$RC" = 0 ] || fail "inject (spin-regs) exited $RC: $(cat "$T/regs.inj")"
wait_exit "$PID_regs" 30 || fail "spin-regs target: $(grep regs "$T/regs.out")"
grep -q '^regs ok rounds=2500$' "$T/regs.out" || fail "registers: $(cat "$T/regs.out")"
echo "1: every register back: $(grep regs "$T/regs.out")"

# 3
NOPID=4194000
while [ -d "/proc/$NOPID" ]; do NOPID=$((NOPID + 1)); done
inject nopid -p "$NOPID"
[ "$RC" = 1 ] || fail "inject into no process exited $RC"
grep -q "no process with PID $NOPID" "$T/nopid.inj" || fail "no PID: $(cat "$T/nopid.inj")"
start t3 --iters 1500
bg tracer "$PY" -c '
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None):   # PTRACE_SEIZE: attached, not stopped
    sys.exit("seize: errno %d" % ctypes.get_errno())
print("seized", flush=True)
time.sleep(60)' "$P"
wait_lines "$T/tracer.out" '^seized' 1 10 || fail "the helper could not trace PID $P"
inject t3 -p "$P"
[ "$RC" = 1 ] || fail "inject into a traced PID exited $RC: $(cat "$T/t3.inj")"
grep -q "cannot ptrace PID $P: it is already traced by PID $PID_tracer (python3)" "$T/t3.inj" ||
	fail "traced: $(cat "$T/t3.inj")"
grep -q librankscope_cupti "/proc/$P/maps" && fail "the library got into a traced PID"
kill -TERM "$PID_tracer"
wait_exit "$PID_tracer" 10 >/dev/null
finish t3 "$REF1"
echo "3: $(cat "$T/nopid.inj")"
echo "3: $(cat "$T/t3.inj")"

# 4
REF4=$(ref --iters 1500 --threads 4 --itimer-us 1000)
start t4 --iters 1500 --threads 4 --itimer-us 1000
sleep 0.2
N0=$(tasks "$P")
inject t4 -p "$P" -v
[ "$RC" = 0 ] || fail "inject (threads) exited $RC: $(cat "$T/t4.inj")"
grep -qE "$(loaded_re "$P")" "$T/t4.inj" || fail "threads: $(cat "$T/t4.inj")"
[ "$(tasks "$P")" = $((N0 + 1)) ] || fail "$(tasks "$P") threads after the injection, $N0 before"
finish t4 "$REF4"
grep -q '^alarms=[1-9]' "$T/t4.out" || fail "no SIGALRM handled: $(cat "$T/t4.out")"
echo "4: $N0 threads, $REF4 with and without; $(grep -E 'stop' "$T/t4.inj")"

# 5
mkfifo "$T/fifo"
bg ref5 "$TGT" --block-read "$T/fifo" --iters 100
wait_lines "$T/ref5.out" '^blocking in read' 1 10 || fail "reference did not start"
echo "payload-$$" >"$T/fifo"
wait_exit "$PID_ref5" 30 || fail "reference run failed"
REF5=$(grep '^done ' "$T/ref5.out")
start t5 --block-read "$T/fifo" --iters 100
wait_lines "$T/t5.out" '^blocking in read' 1 10 || fail "t5 did not block"
for ((i = 0; i < 50; i++)); do
	[ "$(cut -d' ' -f1 "/proc/$P/syscall")" = 0 ] && break
	sleep 0.1
done
[ "$(cut -d' ' -f1 "/proc/$P/syscall")" = 0 ] || fail "t5 is not in read(): $(cat "/proc/$P/syscall")"
inject t5 -p "$P" -v
[ "$RC" = 0 ] || fail "inject (blocked in read) exited $RC: $(cat "$T/t5.inj")"
grep -q 'syscall 0,' "$T/t5.inj" || fail "not injected inside read(): $(cat "$T/t5.inj")"
sleep 0.2
grep -q '^read=' "$T/t5.out" && fail "read() returned before anything was written: $(cat "$T/t5.out")"
[ "$(cut -d' ' -f1 "/proc/$P/syscall")" = 0 ] || fail "t5 left read(): $(cat "/proc/$P/syscall")"
echo "payload-$$" >"$T/fifo"
wait_lines "$T/t5.out" "^read=payload-$$\$" 1 10 || fail "the read did not get the payload"
finish t5 "$REF5"
echo "5: $(grep -E 'loaded' "$T/t5.inj"); $(grep '^read=' "$T/t5.out"), $REF5"

pass "inject: loaded into single- and multi-threaded targets and one blocked in read(), unharmed; refusals named"
