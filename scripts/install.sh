#!/bin/sh
# install.sh — install orch (server or agent) on this machine.
#
#   curl -sfL https://HOST/install.sh | ORCH_DOWNLOAD_URL=https://HOST/v0.1.0 sh -
#   INSTALL_ORCH_SKIP_DOWNLOAD=true sh install.sh      (air gap: the orch beside this script)
#   curl -sfL https://HOST/install.sh | ORCH_URL=https://10.0.0.1:6443 ORCH_TOKEN=K10... sh -   (an agent)
#
# Environment (all optional):
#   ORCH_DOWNLOAD_URL           where orch-linux-<arch> (make release; or orch-<arch>, or orch) and sha256sum-<arch>.txt are; no default
#   INSTALL_ORCH_SKIP_DOWNLOAD  true: use a local binary (INSTALL_ORCH_BINARY, else the orch
#                               beside this script, else the one already in the bin dir)
#   INSTALL_ORCH_BINARY         the local binary to install
#   INSTALL_ORCH_BIN_DIR        where orch, the kubectl link and the scripts go (/usr/local/bin)
#   INSTALL_ORCH_EXEC           command and flags, e.g. "server --disable-agent" or "--node-label a=b"
#                               (split on blanks; no quoting)
#   INSTALL_ORCH_NAME           service name orch-<name> (default orch, or orch-agent for an agent)
#   INSTALL_ORCH_SKIP_ENABLE    true: do not enable the service at boot
#   INSTALL_ORCH_SKIP_START     true: do not start or restart the service
#   INSTALL_ORCH_SYSTEMD_DIR    where the systemd unit goes (/etc/systemd/system)
#   ORCH_URL, ORCH_TOKEN, ORCH_TOKEN_FILE
#                               install an agent that joins the server at ORCH_URL (with
#                               INSTALL_ORCH_EXEC="server ...": a server that joins it); they
#                               go into the service's env file (mode 0600), which orch reads
#
# Re-running it upgrades in place: the service restarts only when the binary,
# the unit or the env file changed.
set -e
set -f # INSTALL_ORCH_EXEC is split on blanks, never globbed

info() { echo "[orch install] $*"; }
warn() { echo "[orch install] warning: $*" >&2; }
fatal() {
	echo "[orch install] error: $*" >&2
	exit 1
}

is_true() {
	case "$1" in
	true | TRUE | True | 1 | yes) return 0 ;;
	esac
	return 1
}

TMP_DIR=
cleanup_tmp() { [ -z "$TMP_DIR" ] || rm -rf "$TMP_DIR"; }
trap cleanup_tmp EXIT
trap 'exit 1' INT TERM

# --- where things go -------------------------------------------------------

setup_env() {
	if [ "$(id -u)" != 0 ]; then
		fatal "run me as root (e.g. curl -sfL ... | sudo sh -)"
	fi
	BIN_DIR=${INSTALL_ORCH_BIN_DIR:-/usr/local/bin}
	SYSTEMD_DIR=${INSTALL_ORCH_SYSTEMD_DIR:-/etc/systemd/system}
	INITD_DIR=/etc/init.d

	# The command: the first word of INSTALL_ORCH_EXEC when it is one,
	# else agent when ORCH_URL is set, else server.
	# shellcheck disable=SC2086
	set -- $INSTALL_ORCH_EXEC
	case "$1" in
	server | agent)
		CMD=$1
		shift
		;;
	-* | "")
		if [ -n "$ORCH_URL" ]; then CMD=agent; else CMD=server; fi
		;;
	*)
		fatal "INSTALL_ORCH_EXEC=\"$INSTALL_ORCH_EXEC\" must start with server, agent or a flag (e.g. \"server --disable-agent\" or \"--node-label a=b\")"
		;;
	esac
	FLAGS=
	DATA_DIR=/var/lib/orch
	has_server_flag= has_token_flag=
	prev=
	for arg in "$@"; do
		case "$arg" in
		*\"* | *\\*) fatal "INSTALL_ORCH_EXEC: flag $arg holds a quote or backslash; put such values in /etc/orch/config.yaml" ;;
		esac
		case "$arg" in
		--server | -s | --server=* | -s=*) has_server_flag=1 ;;
		--token | -t | --token=* | -t=* | --token-file | --token-file=*) has_token_flag=1 ;;
		--data-dir=*) DATA_DIR=${arg#--data-dir=} ;;
		esac
		[ "$prev" != --data-dir ] || DATA_DIR=$arg
		prev=$arg
		FLAGS="$FLAGS $arg"
	done
	if [ "$DATA_DIR" = /var/lib/orch ] && [ -f /etc/orch/config.yaml ]; then
		d=$(sed -n 's/^data-dir:[[:space:]]*//p' /etc/orch/config.yaml | tr -d "\"'" | tail -n 1)
		[ -z "$d" ] || DATA_DIR=$d
	fi
	case "$DATA_DIR" in
	/*) ;;
	*) fatal "--data-dir $DATA_DIR is not an absolute path; give one such as /var/lib/orch" ;;
	esac
	case "${DATA_DIR%/}" in
	"" | /etc | /usr | /usr/local | /var | /var/lib | /home | /root | /opt | /srv | /run | /tmp | /boot | /bin | /sbin | /lib*)
		fatal "--data-dir $DATA_DIR is a system directory, which the uninstall script would remove; give a directory of orch's own such as /var/lib/orch" ;;
	esac

	# A server that joins a cluster: `orch server` reads ORCH_TOKEN from the
	# env file but takes the URL only as --server.
	if [ "$CMD" = server ] && [ -n "$ORCH_URL" ] && [ -z "$has_server_flag" ]; then
		case "$ORCH_URL" in
		https://*) FLAGS="$FLAGS --server $ORCH_URL" ;;
		*) fatal "ORCH_URL=$ORCH_URL is not an https:// URL (e.g. https://10.0.0.1:6443)" ;;
		esac
		has_server_flag=1
	fi
	if [ "$CMD" = server ] && [ -n "$has_server_flag" ] && [ -z "$ORCH_TOKEN" ] && [ -z "$ORCH_TOKEN_FILE" ] && [ -z "$has_token_flag" ]; then
		fatal "this server joins a cluster (--server), which needs the join token: set ORCH_TOKEN (or ORCH_TOKEN_FILE), the content of /var/lib/orch/server/token on the first server"
	fi
	if [ "$CMD" = agent ]; then
		if [ -z "$ORCH_URL" ] && [ -z "$has_server_flag" ]; then
			fatal "an agent needs its server: set ORCH_URL (e.g. ORCH_URL=https://10.0.0.1:6443)"
		fi
		case "$ORCH_URL" in
		"" | https://*) ;;
		*) fatal "ORCH_URL=$ORCH_URL is not an https:// URL (e.g. https://10.0.0.1:6443)" ;;
		esac
		if [ -z "$ORCH_TOKEN" ] && [ -z "$ORCH_TOKEN_FILE" ] && [ -z "$has_token_flag" ]; then
			fatal "ORCH_URL is set, so this installs an agent, which needs the join token: set ORCH_TOKEN (or ORCH_TOKEN_FILE), the content of /var/lib/orch/server/token on the server"
		fi
	fi

	if [ -n "$INSTALL_ORCH_NAME" ]; then
		case "$INSTALL_ORCH_NAME" in
		*[!A-Za-z0-9_.-]*) fatal "INSTALL_ORCH_NAME=$INSTALL_ORCH_NAME may hold only letters, digits, '.', '_' and '-'" ;;
		esac
		SYSTEM_NAME=orch-$INSTALL_ORCH_NAME
	elif [ "$CMD" = agent ]; then
		SYSTEM_NAME=orch-agent
	else
		SYSTEM_NAME=orch
	fi
	UNIT_FILE=$SYSTEMD_DIR/$SYSTEM_NAME.service
	ENV_FILE=$SYSTEMD_DIR/$SYSTEM_NAME.service.env
	INITD_FILE=$INITD_DIR/$SYSTEM_NAME
	UNINSTALL=$BIN_DIR/$SYSTEM_NAME-uninstall.sh
	KILLALL=$BIN_DIR/orch-killall.sh

	if [ -d /run/systemd/system ]; then
		SUPERVISOR=systemd
	elif command -v openrc-run >/dev/null 2>&1; then
		SUPERVISOR=openrc
	else
		SUPERVISOR=
	fi
	TMP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/orch-install.XXXXXX")
	CHANGED= # what changed that the service must restart for
}

# --- the binary -------------------------------------------------------------

detect_arch() {
	case "$(uname -m)" in
	x86_64 | amd64) ARCH=amd64 ;;
	aarch64 | arm64) ARCH=arm64 ;;
	arm*) ARCH=arm ;;
	*) fatal "unsupported architecture $(uname -m) (orch is built for amd64, arm64 and arm)" ;;
	esac
}

sha256_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | awk '{print $1}'
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | awk '{print $1}'
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 "$1" | awk '{print $NF}'
	else
		fatal "no sha256sum, shasum or openssl here to verify the binary with"
	fi
}

# expected_sum FILE NAME... prints the checksum FILE lists for the first NAME it has.
expected_sum() {
	sums=$1
	shift
	for n in "$@"; do
		[ -n "$n" ] || continue
		s=$(awk -v n="$n" '{f=$2; sub(/^\*/, "", f); sub(/^\.\//, "", f); if (f == n) {print $1; exit}}' "$sums")
		if [ -n "$s" ]; then
			echo "$s"
			return
		fi
	done
}

# verify BINARY SUMS NAME...
verify() {
	want=$(expected_sum "$2" "$3" "$4" "$5")
	[ -n "$want" ] || fatal "$2 lists no checksum for $3"
	got=$(sha256_of "$1")
	[ "$got" = "$want" ] || fatal "checksum mismatch for $1: $2 says $want, the file has $got"
	info "verified $1 against $2"
}

download() { # URL FILE
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		fatal "neither curl nor wget is installed to download $1; install one, or use INSTALL_ORCH_SKIP_DOWNLOAD=true with a local binary"
	fi
}

# get_binary sets NEW_BINARY to the orch to install, verified.
get_binary() {
	detect_arch
	if is_true "$INSTALL_ORCH_SKIP_DOWNLOAD"; then
		if [ -n "$INSTALL_ORCH_BINARY" ]; then
			[ -f "$INSTALL_ORCH_BINARY" ] || fatal "INSTALL_ORCH_BINARY=$INSTALL_ORCH_BINARY does not exist"
			NEW_BINARY=$INSTALL_ORCH_BINARY
		else
			NEW_BINARY=
			case "$0" in
			*/install.sh | install.sh)
				here=$(cd "$(dirname "$0")" && pwd)
				for f in "$here/orch" "$here/orch-$ARCH"; do
					if [ -f "$f" ]; then
						NEW_BINARY=$f
						break
					fi
				done
				;;
			esac
			if [ -z "$NEW_BINARY" ]; then
				[ -x "$BIN_DIR/orch" ] || fatal "INSTALL_ORCH_SKIP_DOWNLOAD=true but there is no orch beside install.sh nor in $BIN_DIR; set INSTALL_ORCH_BINARY=/path/to/orch"
				info "using the orch already in $BIN_DIR"
				return
			fi
		fi
		# The air-gap layout: orch, install.sh and sha256sum-<arch>.txt side by side.
		sums=$(dirname "$NEW_BINARY")/sha256sum-$ARCH.txt
		if [ -f "$sums" ]; then
			verify "$NEW_BINARY" "$sums" "$(basename "$NEW_BINARY")" orch "orch-$ARCH"
		fi
		return
	fi
	if [ -z "$ORCH_DOWNLOAD_URL" ]; then
		fatal "set ORCH_DOWNLOAD_URL to where orch-$ARCH and sha256sum-$ARCH.txt can be downloaded, or use INSTALL_ORCH_SKIP_DOWNLOAD=true with a local binary (INSTALL_ORCH_BINARY=/path/to/orch)"
	fi
	url=${ORCH_DOWNLOAD_URL%/}
	download "$url/sha256sum-$ARCH.txt" "$TMP_DIR/sums" || fatal "could not download $url/sha256sum-$ARCH.txt"
	NEW_BINARY=$TMP_DIR/orch
	# make release names it orch-linux-<arch>; orch-<arch> or orch also do.
	name=
	for n in "orch-linux-$ARCH" "orch-$ARCH" orch; do
		if download "$url/$n" "$NEW_BINARY" 2>/dev/null; then
			name=$n
			break
		fi
	done
	[ -n "$name" ] || fatal "could not download $url/orch-linux-$ARCH, $url/orch-$ARCH nor $url/orch"
	info "downloaded $url/$name"
	mv "$TMP_DIR/sums" "$TMP_DIR/sha256sum-$ARCH.txt"
	verify "$NEW_BINARY" "$TMP_DIR/sha256sum-$ARCH.txt" "$name"
}

install_binary() {
	mkdir -p "$BIN_DIR"
	if [ -z "$NEW_BINARY" ]; then
		return
	fi
	if [ -f "$BIN_DIR/orch" ] && [ "$(sha256_of "$NEW_BINARY")" = "$(sha256_of "$BIN_DIR/orch")" ]; then
		info "no change to $BIN_DIR/orch"
		return
	fi
	# Copy beside it and rename: a running orch keeps its old file.
	cp "$NEW_BINARY" "$BIN_DIR/.orch.new"
	chmod 755 "$BIN_DIR/.orch.new"
	mv -f "$BIN_DIR/.orch.new" "$BIN_DIR/orch"
	info "installed $BIN_DIR/orch"
	CHANGED="$CHANGED binary"
}

link_kubectl() {
	if [ -L "$BIN_DIR/kubectl" ] && [ "$(readlink "$BIN_DIR/kubectl")" = orch ]; then
		return
	fi
	if command -v kubectl >/dev/null 2>&1 || [ -e "$BIN_DIR/kubectl" ]; then
		info "kubectl is already installed ($(command -v kubectl || echo "$BIN_DIR/kubectl")); use orch kubectl for the built-in one"
		return
	fi
	ln -s orch "$BIN_DIR/kubectl"
	info "linked $BIN_DIR/kubectl to orch"
}

# --- service files ---------------------------------------------------------

# put FILE MODE WHAT: install $TMP_DIR/new as FILE if its content differs;
# returns 0 when it changed.
put() {
	mkdir -p "$(dirname "$1")"
	if [ -f "$1" ] && cmp -s "$TMP_DIR/new" "$1"; then
		chmod "$2" "$1"
		info "no change to $1"
		return 1
	fi
	chmod "$2" "$TMP_DIR/new"
	mv -f "$TMP_DIR/new" "$1"
	info "wrote $1"
	return 0
}

quote_env() { # 'value' with ' escaped, as sh and systemd both read it
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

write_env_file() {
	: >"$TMP_DIR/new"
	chmod 600 "$TMP_DIR/new"
	{
		echo "# Written by install.sh: the environment of $SYSTEM_NAME (orch $CMD)."
		for v in ORCH_URL ORCH_TOKEN ORCH_TOKEN_FILE HTTP_PROXY HTTPS_PROXY NO_PROXY; do
			eval "val=\${$v}"
			# shellcheck disable=SC2154
			[ -z "$val" ] || echo "$v=$(quote_env "$val")"
		done
	} >>"$TMP_DIR/new"
	if put "$ENV_FILE" 600; then CHANGED="$CHANGED env"; fi
}

write_systemd_unit() {
	cat >"$TMP_DIR/new" <<EOF
# Written by install.sh; re-run it to change. orch $CMD as a service.
[Unit]
Description=orch $CMD (a Kubernetes-compatible cluster in one binary)
Wants=network-online.target
After=network-online.target

[Service]
Type=notify
EnvironmentFile=-$ENV_FILE
KillMode=process
Delegate=yes
# The kernel counts these per user: a node runs many containers.
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=$BIN_DIR/orch $CMD$FLAGS

[Install]
WantedBy=multi-user.target
EOF
	if put "$UNIT_FILE" 644; then CHANGED="$CHANGED unit"; fi
}

write_openrc_script() {
	cat >"$TMP_DIR/new" <<EOF
#!/sbin/openrc-run
# Written by install.sh; re-run it to change. orch $CMD as a service.
description="orch $CMD (a Kubernetes-compatible cluster in one binary)"
depend() {
	need net
	after firewall
}
start_pre() {
	modprobe br_netfilter 2>/dev/null || true
	modprobe overlay 2>/dev/null || true
}
supervisor=supervise-daemon
name=$SYSTEM_NAME
command="$BIN_DIR/orch"
command_args="$CMD$FLAGS"
output_log=/var/log/$SYSTEM_NAME.log
error_log=/var/log/$SYSTEM_NAME.log
rc_ulimit="-n 1048576 -u unlimited -c unlimited"
respawn_delay=5
respawn_max=0
set -o allexport
if [ -f $ENV_FILE ]; then . $ENV_FILE; fi
set +o allexport
EOF
	if put "$INITD_FILE" 755; then CHANGED="$CHANGED init-script"; fi
}

# --- killall and uninstall -------------------------------------------------

write_killall() {
	cat >"$TMP_DIR/new" <<EOF
#!/bin/sh
# orch-killall.sh — written by install.sh. Stops this install's orch (the
# services that run $BIN_DIR/orch, and any orch whose data dir is theirs), the
# containerd it started and every container of its pods; removes its pods'
# network namespaces, the pod network's interfaces, orch's iptables rules and
# routes, and its containerd's runtime state. Another orch on this host with
# another data dir (e.g. in a network namespace of its own) is left alone.
# The data (data dir, /etc/orch) stays: start orch again to resume.
BIN_DIR='$BIN_DIR'
SYSTEMD_DIR='$SYSTEMD_DIR'
DATA_DIR='$DATA_DIR'
EOF
	cat >>"$TMP_DIR/new" <<'EOF'
[ "$(id -u)" = 0 ] || exec sudo "$0" "$@"

say() { echo "[orch killall] $*"; }

# The services of this install: those that run $BIN_DIR/orch.
own_services() {
	for f in "$SYSTEMD_DIR"/orch*.service /etc/init.d/orch*; do
		[ -f "$f" ] || continue
		grep -q -F -e "ExecStart=$BIN_DIR/orch " -e "command=\"$BIN_DIR/orch\"" "$f" && echo "$f"
	done
}
# Stop them so that the supervisor does not restart what we kill.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	for unit in $(own_services); do
		case "$unit" in *.service) ;; *) continue ;; esac
		systemctl stop "$(basename "$unit")" 2>/dev/null && say "stopped $(basename "$unit")"
	done
elif command -v rc-service >/dev/null 2>&1; then
	for s in $(own_services); do
		case "$s" in /etc/init.d/*) ;; *) continue ;; esac
		rc-service "$(basename "$s")" stop >/dev/null 2>&1 && say "stopped $(basename "$s")"
	done
fi

# config_data_dir FILE prints the data-dir a config file sets, if any.
config_data_dir() {
	[ -f "$1" ] && sed -n 's/^data-dir:[[:space:]]*//p' "$1" | tr -d "\"'" | tail -n 1
}
# The data dirs of this install: the installer's, and each service's
# (its --data-dir, else the config's, else the default).
data_dirs() {
	echo "$DATA_DIR"
	for f in $(own_services); do
		d=$(tr " \"'" '\n\n\n' <"$f" | sed -n -e 's/^--data-dir=//p' -e '/^--data-dir$/{n;p;}' | tail -n 1)
		[ -n "$d" ] || d=$(config_data_dir /etc/orch/config.yaml)
		echo "${d:-/var/lib/orch}"
	done
}
# (never a system directory: everything under a data dir is unmounted)
not_system_dir() {
	sed 's:/*$::' | grep '^/.' |
		grep -v -x -E '/(etc|usr|usr/local|var|var/lib|home|root|opt|srv|run|var/run|tmp|boot|bin|sbin|lib[^/]*)' | sort -u
}
DATA_DIRS=$(data_dirs | not_system_dir)
# in_list WORD LIST: whether WORD is one of the words (or lines) of LIST.
in_list() {
	[ -n "$1" ] || return 1
	case " $(printf '%s' "$2" | tr '\n' ' ') " in *" $1 "*) return 0 ;; esac
	return 1
}

# The runtime state dir and socket of each data dir's containerd, as orch
# wrote them into its config.
STATES= SOCKETS=
for d in $DATA_DIRS; do
	conf=$d/agent/etc/containerd/config.toml
	[ -f "$conf" ] || continue
	STATES="$STATES $(sed -n 's/^state = "\(.*\)"$/\1/p' "$conf" | head -n 1)"
	# [plugins."io.containerd.server.v1.grpc"] (config version 4, orch's
	# containerd 2.x), or [grpc] (version 2, older orch).
	SOCKETS="$SOCKETS $(sed -n -e '/^\[grpc\]/,/^\[/s/^[[:space:]]*address = "\(.*\)"$/\1/p' \
		-e '/"io.containerd.server.v1.grpc"\]/,/\[/s/^[[:space:]]*address = "\(.*\)"$/\1/p' "$conf" | head -n 1)"
done
STATES=$(for s in $STATES; do echo "$s"; done | not_system_dir)

# pids_where TEST prints the pids of processes for which TEST PID succeeds.
pids_where() {
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" != $$ ] || continue
		"$1" "$p" 2>/dev/null && echo "$p"
	done
}
args() { tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null; }
# flag_value PID NAME... prints the value of the process's flag -NAME or
# --NAME (as "--NAME V" or "--NAME=V"), the last one given.
flag_value() {
	p=$1
	shift
	for n in "$@"; do
		args "$p" | sed -n -e "s/^--*$n=//p" -e "/^--*$n\$/{n;p;}"
	done | tail -n 1
}
# proc_data_dir PID prints the data dir of an orch process: its
# --data-dir, else its config's, else the default.
proc_data_dir() {
	d=$(flag_value "$1" data-dir)
	[ -n "$d" ] || d=$(config_data_dir "$(flag_value "$1" config c)")
	[ -n "$d" ] || d=$(config_data_dir /etc/orch/config.yaml)
	d=${d:-/var/lib/orch}
	case "$d" in /*) ;; *) d=$(readlink "/proc/$1/cwd")/$d ;; esac
	echo "$d" | sed 's:/*$::'
}
is_orch() {
	# orch's containerd is orch too (its exe), but is_orch_containerd's.
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" != containerd ] || return 1
	exe=$(readlink "/proc/$1/exe") || return 1
	[ "$exe" = "$BIN_DIR/orch" ] || [ "$exe" = "$BIN_DIR/orch (deleted)" ] || return 1
	in_list "$(proc_data_dir "$1")" "$DATA_DIRS"
}
is_orch_containerd() {
	[ "$(cat "/proc/$1/comm")" = containerd ] || return 1
	in_list "$(flag_value "$1" config c)" "$(for d in $DATA_DIRS; do echo "$d/agent/etc/containerd/config.toml"; done)"
}
is_orch_shim() {
	case "$(cat "/proc/$1/comm")" in
	containerd-shim*) ;;
	*) return 1 ;;
	esac
	in_list "$(flag_value "$1" address)" "$SOCKETS"
}
# descendants PID... prints the PIDs and all their descendants.
descendants() {
	roots="$*"
	[ -n "$roots" ] || return 0
	for d in /proc/[0-9]*/stat; do
		# pid (comm) state ppid ...: the comm may hold spaces, cut after the last ')'
		s=$(cat "$d" 2>/dev/null) || continue
		p=${s%% *}
		rest=${s##*) }
		set -- $rest
		echo "$p $2"
	done >/tmp/.orch-killall.$$
	awk -v roots="$roots" 'BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) want[r[i]] = 1 }
		{ parent[$1] = $2 }
		END { do { more = 0; for (p in parent) if (!(p in want) && (parent[p] in want)) { want[p] = 1; more = 1 } } while (more)
		      for (p in want) print p }' /tmp/.orch-killall.$$
	rm -f /tmp/.orch-killall.$$
}
kill_and_wait() { # SIGNAL PIDS: wait up to 10s for them to go, then SIGKILL
	sig=$1
	shift
	[ $# -gt 0 ] || return 0
	kill "-$sig" "$@" 2>/dev/null
	i=0
	while [ $i -lt 50 ]; do
		alive=
		for p in "$@"; do
			if [ -d "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ]; then alive="$alive $p"; fi
		done
		[ -n "$alive" ] || return 0
		sleep 0.2
		i=$((i + 1))
	done
	kill -9 $alive 2>/dev/null
}

# The network namespaces of the pods, to delete once their containers are
# gone: not the shims' own (the runtime's, which host-network pods share).
POD_NETNS=
SHIMS=$(pids_where is_orch_shim)
RUNTIME_NETNS=$(for p in $SHIMS; do readlink "/proc/$p/ns/net" 2>/dev/null; done)
for p in $(descendants $SHIMS); do
	ns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
	in_list "$ns" "$RUNTIME_NETNS $POD_NETNS" || POD_NETNS="$POD_NETNS $ns"
done

ORCH=$(pids_where is_orch)
[ -z "$ORCH" ] || say "stopping orch (pids $(echo $ORCH))"
kill_and_wait TERM $ORCH
CONTAINERD=$(pids_where is_orch_containerd)
[ -z "$CONTAINERD" ] || say "stopping orch's containerd (pids $(echo $CONTAINERD))"
kill_and_wait TERM $CONTAINERD
SHIMS=$(pids_where is_orch_shim)
if [ -n "$SHIMS" ]; then
	PODS=$(descendants $SHIMS)
	# Their cgroups (cgroupfs driver: kubepods/.../pod<uid>/<container>), to remove once empty.
	CGROUPS=$(for p in $PODS; do
		case " $SHIMS " in *" $p "*) continue ;; esac
		while IFS=: read -r _ ctrl path; do
			case "$path" in /kubepods*) ;; *) continue ;; esac
			dir=${ctrl#name=}
			[ -n "$dir" ] || dir=unified
			[ -d "/sys/fs/cgroup/$dir" ] || dir=${dir%%,*}
			[ "$dir" != unified ] || [ -d /sys/fs/cgroup/unified ] || dir=.
			echo "/sys/fs/cgroup/$dir$path"
		done <"/proc/$p/cgroup" 2>/dev/null
	done | sort -u)
	say "killing the containers of orch's pods and their shims ($(echo $PODS | wc -w) processes)"
	kill -9 $PODS 2>/dev/null
	kill_and_wait KILL $PODS
	for cg in $CGROUPS; do
		rmdir "$cg" 2>/dev/null
		case "$(basename "$(dirname "$cg")")" in pod*) rmdir "$(dirname "$cg")" 2>/dev/null ;; esac
	done
fi

# Unmount what lives under the data dirs and the runtime state (deepest first).
unmount_under() {
	awk '{print $2}' /proc/self/mounts | sed 's/\\040/ /g' | while read -r m; do
		for prefix in "$@"; do
			case "$m" in "$prefix"/*) echo "$m" ;; esac
		done
	done | sort -r -u | while read -r m; do
		umount -l "$m" 2>/dev/null || umount -f "$m" 2>/dev/null
	done
}
# shellcheck disable=SC2086
unmount_under $DATA_DIRS $STATES

# The pods' network namespaces, their veths and the pod bridge.
for f in /run/netns/* /var/run/netns/*; do
	[ -e "$f" ] || continue
	# A bind-mounted namespace has the inode /proc/PID/ns/net names.
	ns="net:[$(stat -c %i "$f" 2>/dev/null)]"
	case " $POD_NETNS " in
	*" $ns "*)
		umount -l "$f" 2>/dev/null
		rm -f "$f" 2>/dev/null
		;;
	esac
done
if command -v ip >/dev/null 2>&1; then
	for br in orch0; do
		ip link show "$br" >/dev/null 2>&1 || continue
		# The namespaces at the other end of the bridge's veths are pods' too.
		for name in $(ip -o link show master "$br" | sed -n 's/.* link-netns \([^ ]*\).*/\1/p'); do
			case "$name" in */*) continue ;; esac
			if [ -e "/run/netns/$name" ]; then
				umount -l "/run/netns/$name" 2>/dev/null
				rm -f "/run/netns/$name" 2>/dev/null
			fi
		done
		for veth in $(ip -o link show master "$br" | awk -F': ' '{print $2}' | cut -d@ -f1); do
			ip link delete "$veth" 2>/dev/null
		done
		ip link delete "$br" 2>/dev/null && say "removed the pod bridge $br"
	done
fi

# Service rules, routes, the VXLAN device and masquerade rules.
if [ -x "$BIN_DIR/orch" ]; then
	"$BIN_DIR/orch" agent cleanup >/dev/null 2>&1 || say "orch agent cleanup failed; run $BIN_DIR/orch agent cleanup to see why"
fi
command -v ip >/dev/null 2>&1 && ip link delete orch.vxlan 2>/dev/null
# What is left of the rules that name KUBE-, ORCH- chains, and the CNI
# chains and rules of orch's pod network (named "orch"): remove them too.
for t in iptables ip6tables; do
	command -v "$t-save" >/dev/null 2>&1 && command -v "$t-restore" >/dev/null 2>&1 || continue
	"$t-save" >/tmp/.orch-rules.$$ 2>/dev/null || { rm -f /tmp/.orch-rules.$$; continue; }
	awk '
		function owned(c) { return c ~ /^(KUBE|ORCH)-/ || (c in cni) }
		NR == FNR {
			if ($1 == "-A" && $0 ~ /name: \\"orch\\"/) {
				if ($2 ~ /^CNI-/ && $2 !~ /^CNI-HOSTPORT-/) cni[$2] = 1
				for (i = 3; i < NF; i++) if ($i == "-j" && $(i+1) ~ /^CNI-/ && $(i+1) !~ /^CNI-HOSTPORT-/) cni[$(i+1)] = 1
			}
			next
		}
		/^:/ { c = substr($1, 2); if (owned(c)) { dropped++; next } }
		$1 == "-A" {
			if (owned($2) || $0 ~ /name: \\"orch\\"/) { dropped++; next }
			for (i = 3; i < NF; i++) if (($i == "-j" || $i == "-g") && owned($(i+1))) { dropped++; next }
		}
		{ print }
		END { if (!dropped) exit 3 }
	' /tmp/.orch-rules.$$ /tmp/.orch-rules.$$ >/tmp/.orch-rules.$$.new
	if [ $? = 0 ]; then
		"$t-restore" </tmp/.orch-rules.$$.new && say "removed orch's remaining $t rules"
	fi
	rm -f /tmp/.orch-rules.$$ /tmp/.orch-rules.$$.new
done

# The runtime state (containerd's, the shims'), gone at reboot anyway.
for d in $STATES; do
	rm -rf "$d" 2>/dev/null
done
say "orch is stopped; the data stays (start it again to resume, or run an uninstall script to remove it)"
EOF
	put "$KILLALL" 755 || true
}

write_uninstall() {
	cat >"$TMP_DIR/new" <<EOF
#!/bin/sh
# $SYSTEM_NAME-uninstall.sh — written by install.sh. Stops orch and its pods
# (orch-killall.sh), then removes the $SYSTEM_NAME service, and when no other
# orch service is left: the binary, the kubectl link, /etc/orch and the data
# dir (another orch's data dir and runtime state stay). It removes itself last.
BIN_DIR='$BIN_DIR'
SYSTEMD_DIR='$SYSTEMD_DIR'
SYSTEM_NAME='$SYSTEM_NAME'
DATA_DIR='$DATA_DIR'
EOF
	cat >>"$TMP_DIR/new" <<'EOF'
[ "$(id -u)" = 0 ] || exec sudo "$0" "$@"
say() { echo "[orch uninstall] $*"; }

"$BIN_DIR/orch-killall.sh"

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl disable "$SYSTEM_NAME" >/dev/null 2>&1
	systemctl reset-failed "$SYSTEM_NAME" >/dev/null 2>&1
fi
if command -v rc-update >/dev/null 2>&1; then
	rc-update delete "$SYSTEM_NAME" default >/dev/null 2>&1
fi
rm -f "$SYSTEMD_DIR/$SYSTEM_NAME.service" "$SYSTEMD_DIR/$SYSTEM_NAME.service.env" "/etc/init.d/$SYSTEM_NAME"
say "removed the $SYSTEM_NAME service"
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload >/dev/null 2>&1
fi

# Another orch service (e.g. a server beside an agent) keeps the rest.
for other in "$BIN_DIR"/orch*-uninstall.sh; do
	[ -f "$other" ] && [ "$other" != "$BIN_DIR/$SYSTEM_NAME-uninstall.sh" ] || continue
	say "$(basename "$other") is still installed: keeping the binary and the data (run it to remove them)"
	rm -f "$0" "$BIN_DIR/$SYSTEM_NAME-uninstall.sh"
	exit 0
done

if [ -L "$BIN_DIR/kubectl" ] && [ "$(readlink "$BIN_DIR/kubectl")" = orch ]; then
	rm -f "$BIN_DIR/kubectl"
fi
# The data dir this install used and /etc/orch (another orch's data dir stays).
for d in "$DATA_DIR" /etc/orch; do
	[ -e "$d" ] || continue
	case "${d%/}" in
	"" | /etc | /usr | /usr/local | /var | /var/lib | /home | /root | /opt | /srv | /run | /tmp | /boot | /bin | /sbin | /lib*)
		say "not removing $d, a system directory"
		continue
		;;
	esac
	rm -rf "$d" && say "removed $d"
done
# (the killall removed its runtime state; another orch's stays)
rmdir /run/orch /var/run/orch 2>/dev/null
rm -f "$BIN_DIR/orch" "$BIN_DIR/orch-killall.sh"
say "removed $BIN_DIR/orch and the scripts; orch is uninstalled"
rm -f "$0" "$BIN_DIR/$SYSTEM_NAME-uninstall.sh"
EOF
	put "$UNINSTALL" 755 || true
}

# --- start -----------------------------------------------------------------

start_service() {
	if [ -z "$SUPERVISOR" ]; then
		info "no systemd nor OpenRC here: $SYSTEM_NAME is installed but not started. Start it by hand with:"
		info "  set -a; . $ENV_FILE; set +a; $BIN_DIR/orch $CMD$FLAGS"
		return
	fi
	if [ "$SUPERVISOR" = systemd ]; then
		case "$CHANGED" in *unit*) systemctl daemon-reload ;; esac
		if ! is_true "$INSTALL_ORCH_SKIP_ENABLE"; then
			systemctl enable "$SYSTEM_NAME" >/dev/null 2>&1 || systemctl enable "$SYSTEM_NAME"
		fi
		active() { systemctl is-active --quiet "$SYSTEM_NAME"; }
		start() { systemctl restart "$SYSTEM_NAME"; }
	else
		if ! is_true "$INSTALL_ORCH_SKIP_ENABLE"; then
			rc-update add "$SYSTEM_NAME" default >/dev/null
		fi
		active() { rc-service "$SYSTEM_NAME" status >/dev/null 2>&1; }
		start() { rc-service "$SYSTEM_NAME" restart; }
	fi
	if is_true "$INSTALL_ORCH_SKIP_START"; then
		info "INSTALL_ORCH_SKIP_START: not starting $SYSTEM_NAME"
		return
	fi
	if [ -n "$CHANGED" ]; then
		info "(re)starting $SYSTEM_NAME (changed:$CHANGED)"
		start
	elif ! active; then
		info "starting $SYSTEM_NAME"
		start
	else
		info "$SYSTEM_NAME is running and nothing changed: not restarting it"
	fi
}

main() {
	setup_env
	get_binary
	install_binary
	link_kubectl
	write_env_file
	# The systemd unit is written even where systemd does not run (a
	# container, a chroot): it documents how orch is meant to start.
	write_systemd_unit
	if [ "$SUPERVISOR" = openrc ]; then write_openrc_script; fi
	write_killall
	write_uninstall
	if [ -z "$CHANGED" ]; then
		info "no change: $SYSTEM_NAME (orch $CMD) is up to date"
	else
		info "installed $SYSTEM_NAME (orch $CMD); changed:$CHANGED"
	fi
	start_service
}

main "$@"
