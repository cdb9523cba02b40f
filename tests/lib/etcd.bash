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
		ETCD_ARGS=(--name t --data-dir "$dir" --log-level error
			--listen-client-urls "http://127.0.0.1:$client"
			--advertise-client-urls "http://127.0.0.1:$client"
			--listen-peer-urls "http://127.0.0.1:$peer"
			--initial-advertise-peer-urls "http://127.0.0.1:$peer"
			--initial-cluster "t=http://127.0.0.1:$peer")
		etcd "${ETCD_ARGS[@]}" >"$dir.log" 2>&1 3>&- &
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

# restart_etcd: the same etcd of start_etcd again, on its ports and data
# (its keys and leases kept), once it answers; at most 20 s.
restart_etcd() {
	local i
	stop_etcd
	etcd "${ETCD_ARGS[@]}" >>"$BATS_TEST_TMPDIR/etcd.restart.log" 2>&1 3>&- &
	ETCD_PID=$!
	for ((i = 0; i < 100; i++)); do
		curl -s --noproxy '*' -m 1 "http://$ETCD_EP/health" 2>/dev/null |
			grep -q '"health":"true"' && return 0
		sleep 0.2
	done
	cat "$BATS_TEST_TMPDIR/etcd.restart.log" >&2
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

# etcd_certs DIR: a CA (ca.pem), a server certificate for 127.0.0.1
# (server.pem, server.key), a client one (client.pem, client.key) and a
# second CA that signed nothing of these (other-ca.pem). The client
# certificate has no CommonName: etcd refuses a gateway request with one
# when authentication is on (the name would not be the user).
etcd_certs() {
	local d=$1 n
	mkdir -p "$d"
	for n in ca other-ca; do
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=rdmactl test $n" \
			-keyout "$d/$n.key" -out "$d/$n.pem" 2>/dev/null
	done
	openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$d/server.key" \
		-out "$d/server.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$d/server.ext"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/server.ext" -out "$d/server.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /O=rdmactl-client -keyout "$d/client.key" \
		-out "$d/client.csr" 2>/dev/null
	printf 'extendedKeyUsage=clientAuth\n' >"$d/client.ext"
	openssl x509 -req -in "$d/client.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/client.ext" -out "$d/client.pem" 2>/dev/null
	[ -s "$d/server.pem" ] && [ -s "$d/client.pem" ]
}

# start_etcd_tls_auth PASSWORD: etcd on loopback over TLS only (client
# certificates required, signed by $ETCD_CERTS/ca.pem, which etcd_certs
# makes) with authentication on and user root holding PASSWORD. Sets
# ETCD_EP and ETCD_PID like start_etcd; stop_etcd ends it.
start_etcd_tls_auth() {
	local try i client peer dir c=$ETCD_CERTS
	for try in 1 2 3; do
		client=$((30000 + RANDOM % 15000))
		peer=$((client + 15000))
		dir=$BATS_TEST_TMPDIR/etcd.$try
		etcd --name t --data-dir "$dir" --log-level error \
			--listen-client-urls "https://127.0.0.1:$client" \
			--advertise-client-urls "https://127.0.0.1:$client" \
			--cert-file "$c/server.pem" --key-file "$c/server.key" \
			--trusted-ca-file "$c/ca.pem" --client-cert-auth \
			--listen-peer-urls "http://127.0.0.1:$peer" \
			--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
			--initial-cluster "t=http://127.0.0.1:$peer" >"$dir.log" 2>&1 &
		ETCD_PID=$!
		for ((i = 0; i < 100; i++)); do
			if curl -s --noproxy '*' -m 1 --cacert "$c/ca.pem" --cert "$c/client.pem" \
				--key "$c/client.key" "https://127.0.0.1:$client/health" 2>/dev/null |
				grep -q '"health":"true"'; then
				ETCD_EP=127.0.0.1:$client
				etcdctl_tls user add root --new-user-password="$1" >/dev/null &&
					etcdctl_tls role add root >/dev/null &&
					etcdctl_tls user grant-role root root >/dev/null &&
					etcdctl_tls auth enable >/dev/null && return 0
				break
			fi
			kill -0 "$ETCD_PID" 2>/dev/null || break
			sleep 0.2
		done
		stop_etcd
	done
	echo "etcd with TLS and authentication did not come up; its log:" >&2
	cat "$dir.log" >&2
	return 1
}

# etcdctl_tls ARGS...: etcdctl against that etcd, with the client certificate.
etcdctl_tls() {
	ETCDCTL_API=3 timeout 20 etcdctl --endpoints "https://$ETCD_EP" --cacert "$ETCD_CERTS/ca.pem" \
		--cert "$ETCD_CERTS/client.pem" --key "$ETCD_CERTS/client.key" "$@"
}
