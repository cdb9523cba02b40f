# SPDX-License-Identifier: MIT
# A throwaway etcd on loopback for the rendezvous tests: start_etcd sets
# ETCD_EP (HOST:PORT) and ETCD_PID; stop_etcd ends it. Tests that need it
# skip when Debian's etcd-server is not installed (tests/deps.sh installs it).

need_etcd() {
	command -v etcd >/dev/null || skip "needs etcd (Debian's etcd-server; tests/deps.sh)"
}

start_etcd() {
	local try i client peer dir
	for try in 1 2 3; do
		client=$((30000 + RANDOM % 15000))
		peer=$((client + 15000))
		dir=$BATS_TEST_TMPDIR/etcd.$try
		etcd --name t --data-dir "$dir" --log-level error \
			--listen-client-urls "http://127.0.0.1:$client" \
			--advertise-client-urls "http://127.0.0.1:$client" \
			--listen-peer-urls "http://127.0.0.1:$peer" \
			--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
			--initial-cluster "t=http://127.0.0.1:$peer" >"$dir.log" 2>&1 3>&- &
		ETCD_PID=$!
		for ((i = 0; i < 100; i++)); do
			if curl -s --noproxy '*' -m 1 "http://127.0.0.1:$client/health" 2>/dev/null |
				grep -q '"health":"true"'; then
				ETCD_EP=127.0.0.1:$client
				return 0
			fi
			kill -0 "$ETCD_PID" 2>/dev/null || break
			sleep 0.2
		done
		stop_etcd
	done
	echo "etcd did not come up; its log:" >&2
	cat "$dir.log" >&2
	return 1
}

stop_etcd() {
	[ -n "${ETCD_PID:-}" ] || return 0
	kill "$ETCD_PID" 2>/dev/null || true
	wait "$ETCD_PID" 2>/dev/null || true
	ETCD_PID=
}

# The keys of a job, one a line, through the v3 JSON gateway (curl starts
# faster than etcdctl in the emulated guest).
etcd_keys() {
	local key end
	key=$(printf 'rdmactl/%s/' "$1" | base64 -w0)
	end=$(printf 'rdmactl/%s0' "$1" | base64 -w0) # the prefix's range end
	curl -s --noproxy '*' -m 5 -X POST "http://$ETCD_EP/v3/kv/range" \
		-d "{\"key\":\"$key\",\"range_end\":\"$end\",\"keys_only\":true}" |
		jq -r '.kvs[]?.key | @base64d'
}
