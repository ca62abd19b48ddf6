#!/usr/bin/env bash
# hack/prereqs.sh SET...: make sure the Debian packages a target needs are
# installed. SET is "test" (postgresql for the history store's PostgreSQL tests,
# chromium for the compliance page's browser test) or "nodes" (containerd runc
# containernetworking-plugins iptables for real nodes, postgresql for the hub
# Pods' shared compliance history). What is missing is
# installed with apt-get when this runs as root on Debian; otherwise it stops and
# says exactly what to install. Nothing is downloaded but Debian's packages.
set -euo pipefail
need=()
have_postgres() { compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; }
have() { command -v "$1" >/dev/null 2>&1; }
for set in "$@"; do
	case "$set" in
	test)
		have_postgres || need+=(postgresql)
		have chromium || have chromium-browser || need+=(chromium)
		;;
	nodes)
		have containerd || need+=(containerd)
		have runc || need+=(runc)
		[ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ] || need+=(containernetworking-plugins)
		have iptables || need+=(iptables)
		have_postgres || need+=(postgresql) # the hub Pods' compliance history (TestComplianceHistoryFailover)
		;;
	*)
		echo "hack/prereqs.sh: unknown set $set (test, nodes)" >&2
		exit 2
		;;
	esac
done
# Every kube-apiserver and controller manager holds inotify instances (its
# certificate watchers); the suites run several control planes at once, and
# Linux's default of 128 per user runs out beside a running demo environment
# ("couldn't initialize inotify: too many open files"). Raise it as root.
inotify=/proc/sys/fs/inotify/max_user_instances
if [ -w "$inotify" ] && [ "$(cat "$inotify")" -lt 1024 ]; then
	echo "raising fs.inotify.max_user_instances from $(cat "$inotify") to 1024 (control planes' certificate watchers)"
	echo 1024 >"$inotify"
elif [ -r "$inotify" ] && [ "$(cat "$inotify")" -lt 1024 ]; then
	echo "note: fs.inotify.max_user_instances is $(cat "$inotify"); with a demo running beside the tests, raise it: sudo sysctl fs.inotify.max_user_instances=1024" >&2
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && have apt-get; then
	echo "installing from Debian: ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q "${need[@]}" >/dev/null
	exit 0
fi
echo "missing Debian packages: ${need[*]}. Install them: sudo apt-get update && sudo apt-get install -y ${need[*]}" >&2
exit 1
