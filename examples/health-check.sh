#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# health-check.sh: is this node's RDMA fabric fit to take work?
#
# For the operator (or the cron job, the node-problem detector, the
# scheduler's pre-flight hook) who wants one yes or no per node, with the
# reasons. It runs `rdmactl -j probe-topology` and judges its JSON with jq:
#   healthy (exit 0)   no finding of severity error or warning, at least one
#                      ACTIVE port, and every ACTIVE port OK (with --verify:
#                      it carried the loopback RDMA WRITE);
#   unhealthy (exit 1) otherwise, or when the probe itself failed; the
#                      failing findings are printed on stderr.
#   usage (exit 2)     a bad option.
# Info findings never fail the check. stdout gets one JSON summary.
#
# Run:
#   examples/health-check.sh                      # this host's /sys
#   examples/health-check.sh --verify             # and move data on each ACTIVE port
#   examples/health-check.sh --sysfs node17.tar.gz  # a tree captured elsewhere:
#       rdmactl probe-topology --capture node17.tar.gz   (on node17)
#   examples/health-check.sh --ignore gpudirect --ignore pcie_link
#
# Options:
#   --sysfs DIR|FILE.tar.gz  judge a captured tree instead of /sys (no --verify)
#   --verify                 loopback RDMA WRITE on each ACTIVE port (live only)
#   --verify-size SIZE       bytes each --verify writes (rdmactl's default: 8M)
#   -d, --device NAME        only this RDMA device
#   --hugepages              the workload needs hugepages (adds that check)
#   --ignore CHECK           do not fail on findings of this check (repeatable)
#   --timeout SECONDS        bound on the whole probe (default 60)
# The binary: $RDMACTL, else ../build/cli/rdmactl next to this script, else
# rdmactl on PATH.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

usage() {
	sed -n '/^# Run:/,/^# rdmactl on PATH/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

# A usage error: say why on stderr, keep stdout JSON, exit 2.
usage_err() {
	printf 'health-check.sh: %s (see --help)\n' "$1" >&2
	jq -n --arg e "$1" '{check: "health-check", healthy: false, error: $e, exit_status: 2}'
	exit 2
}

sysfs='' verify=0 verify_size='' device='' hugepages=0 limit=60
ignore=()
while (($#)); do
	case "$1" in
	--sysfs) (($# > 1)) || usage_err "--sysfs needs a folder or tarball"; sysfs=$2; shift ;;
	--verify) verify=1 ;;
	--verify-size) (($# > 1)) || usage_err "--verify-size needs a size"; verify_size=$2; shift ;;
	-d | --device) (($# > 1)) || usage_err "$1 needs a device name"; device=$2; shift ;;
	--hugepages) hugepages=1 ;;
	--ignore) (($# > 1)) || usage_err "--ignore needs a check name"; ignore+=("$2"); shift ;;
	--timeout) (($# > 1)) || usage_err "--timeout needs seconds"; limit=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
	shift
done
[[ "$limit" =~ ^[1-9][0-9]*$ ]] || usage_err "--timeout wants whole seconds, not '$limit'"
((verify == 0)) || [[ -z "$sysfs" ]] ||
	usage_err "--verify moves data on live ports: it cannot judge a --sysfs tree"
[[ -z "$verify_size" ]] || ((verify)) || usage_err "--verify-size needs --verify"

# rdmactl, j() and stop_pid() (examples/lib/common.bash).
# shellcheck source=examples/lib/common.bash
source "$here/lib/common.bash"

# Global options first, then the command's. rdmactl's own -t bounds each
# port's --verify; timeout(1) bounds the whole run.
cmd=("$rdmactl" -j)
[[ -z "$device" ]] || cmd+=(-d "$device")
cmd+=(probe-topology)
[[ -z "$sysfs" ]] || cmd+=(--sysfs "$sysfs")
((verify == 0)) || cmd+=(--verify)
[[ -z "$verify_size" ]] || cmd+=(--verify-size "$verify_size")
((hugepages == 0)) || cmd+=(--hugepages)

rc=0
doc=$(timeout --kill-after=5 "$limit" "${cmd[@]}" 2>/dev/null) || rc=$?
ignore_json=$(jq -cn '$ARGS.positional' --args "${ignore[@]}")

# rdmactl exits 1 when a port failed --verify yet still prints the whole
# topology: judge any document that has one; only a missing topology means
# the probe failed.
if ! jq -e 'has("devices")' <<<"$doc" >/dev/null 2>&1; then
	if ((rc == 124 || rc == 137)); then
		msg="probe-topology did not finish within $limit s"
	else
		msg=$(jq -r '.error.message // empty' <<<"$doc" 2>/dev/null) || msg=
		[[ -n "$msg" ]] || msg="probe-topology failed (exit $rc) without a JSON document"
	fi
	((rc != 2)) || usage_err "rdmactl refused the options: $msg"
	printf 'health-check.sh: UNHEALTHY: %s\n' "$msg" >&2
	jq -n --arg e "$msg" --argjson rc "$rc" --arg sysfs "$sysfs" \
		'{check: "health-check", healthy: false, source: (if $sysfs == "" then "live" else $sysfs end),
		  error: $e, rdmactl_exit_status: $rc, exit_status: 1}'
	exit 1
fi

summary=$(jq -c --argjson ignore "$ignore_json" --argjson verify "$verify" --argjson rc "$rc" '
	def failing: .severity == "error" or .severity == "warning";
	[.devices[] as $d | $d.ports[] | {device: $d.name, port, state, netdev, verify}] as $ports
	# An ACTIVE port is OK unless a --verify that should have run on it
	# did not, or failed.
	| [$ports[] | select(.state == "ACTIVE")
	   | select(if $verify == 1 then .verify.ok != true else .verify != null and .verify.ok != true end)
	   | . + {problem: (if .verify == null then "not verified" else "verify failed: \(.verify.error)" end)}]
	  as $bad_ports
	| [.findings[] | select(failing) | select(.check as $c | $ignore | index($c) | not)] as $failing
	| {check: "health-check",
	   healthy: (($failing | length) == 0 and ($bad_ports | length) == 0 and .summary.ports_active > 0),
	   source: .source,
	   verify: ($verify == 1),
	   summary: .summary,
	   failing_findings: $failing,
	   ignored_findings: [.findings[] | select(failing) | select(.check as $c | $ignore | index($c))],
	   info_findings: [.findings[] | select(failing | not)],
	   ports: $ports,
	   ports_not_ok: $bad_ports,
	   rdmactl_exit_status: $rc}
	| .exit_status = (if .healthy then 0 else 1 end)' <<<"$doc")

if jq -e .healthy <<<"$summary" >/dev/null; then
	jq -r '"health-check.sh: healthy: \(.summary.ports_active) of \(.summary.ports) ports ACTIVE on \(.summary.devices) devices"
		+ (if .verify then ", each verified" else "" end)' <<<"$summary" >&2
	jq . <<<"$summary"
	exit 0
fi
{
	echo "health-check.sh: UNHEALTHY"
	jq -r '(.failing_findings[] | "  \(.severity) [\(.check)] \(.message)\n    fix: \(.fix)"),
		(.ports_not_ok[] | "  port \(.device)/\(.port): \(.problem)"),
		(if .summary.ports_active == 0 then "  no ACTIVE port" else empty end)' <<<"$summary"
} >&2
jq . <<<"$summary"
exit 1
