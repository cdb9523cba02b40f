#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# File-backed regions on a disk file system (ext4 on a loop device in the
# guest), where a writable long-term pin of a shared file mapping is
# refused: the region is loaded from the file and written back on SIGTERM.

load helpers

setup() {
	need_guest
	PORT=$(next_port)
	MNT=
	LOOPDEV=
}

teardown() {
	stop_server KILL
	[ -z "$MNT" ] || umount "$MNT" || true
	[ -z "$LOOPDEV" ] || losetup -d "$LOOPDEV" || true
	common_teardown
}

# mount_ext4 SIZE: a fresh ext4 file system of SIZE bytes, mounted at $MNT.
mount_ext4() {
	modprobe loop 2>/dev/null || true
	truncate -s "$1" "$BATS_TEST_TMPDIR/fs.img"
	mkfs.ext4 -q -F "$BATS_TEST_TMPDIR/fs.img"
	LOOPDEV=$(losetup --find --show "$BATS_TEST_TMPDIR/fs.img")
	mkdir -p "$BATS_TEST_TMPDIR/mnt"
	mount -t ext4 "$LOOPDEV" "$BATS_TEST_TMPDIR/mnt"
	MNT=$BATS_TEST_TMPDIR/mnt
	[ "$(stat -f -c %T "$MNT")" = ext2/ext3 ]
}

# bats test_tags=plain-only
@test "ext4: a region is served from its file's content and written back on SIGTERM" {
	mount_ext4 64M
	f=$MNT/region.bin
	head -c 4M /dev/urandom >"$f"
	cp "$f" "$BATS_TEST_TMPDIR/expect"
	start_server 1 --listen "$ADDR:$PORT" --name disk --file "$f"
	# What the file held is what a client reads.
	rdmactl read "$ADDR:$PORT/disk" --size 4M --out "$BATS_TEST_TMPDIR/served" >/dev/null
	cmp "$BATS_TEST_TMPDIR/expect" "$BATS_TEST_TMPDIR/served"
	# 1 MiB of new data at 1.5 MiB: exactly those bytes change in the file.
	head -c 1M /dev/urandom >"$BATS_TEST_TMPDIR/new"
	rdmactl write "$ADDR:$PORT/disk" --file "$BATS_TEST_TMPDIR/new" --offset 1572864 >/dev/null
	dd if="$BATS_TEST_TMPDIR/new" of="$BATS_TEST_TMPDIR/expect" bs=512K seek=3 conv=notrunc status=none
	stop_server TERM
	[ "$SERVER_RC" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/expect" "$f"
}

# bats test_tags=plain-only
@test "ext4: a region that grows its file gets the blocks up front, and the data lands" {
	mount_ext4 64M
	f=$MNT/grown.bin
	start_server 1 --listen "$ADDR:$PORT" --name disk --file "$f" --size 8M
	# Allocated, not sparse: 8 MiB of blocks before any write.
	[ "$(($(stat -c %b "$f") * $(stat -c %B "$f")))" -ge 8388608 ]
	head -c 8M /dev/urandom >"$BATS_TEST_TMPDIR/in"
	rdmactl write "$ADDR:$PORT/disk" --file "$BATS_TEST_TMPDIR/in" >/dev/null
	stop_server TERM
	[ "$SERVER_RC" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/in" "$f"
}

@test "a full disk is a clear error when the region is created, not a failed pin" {
	mount_ext4 8M
	run "$RDMACTL" register --listen "$ADDR:$PORT" --name disk --file "$MNT/big.bin" --size 64M
	[ "$status" -eq 1 ]
	[[ "$output" == *"no space to grow '$MNT/big.bin' to 67108864 bytes: its file system is full"* ]]
}

@test "ext4: a write-back that fails at exit is an error and a non-zero exit, not lost" {
	mount_ext4 64M
	f=$MNT/region.bin
	head -c 1M /dev/urandom >"$f"
	start_server 1 --listen "$ADDR:$PORT" --name disk --file "$f"
	rdmactl write "$ADDR:$PORT/disk" --pattern seq --size 4K >/dev/null
	# An immutable file refuses the write-back (EPERM from ext4).
	chattr +i "$f"
	stop_server TERM
	chattr -i "$f"
	[ "$SERVER_RC" -ne 0 ]
	cat "$SERVER_OUT" "$SERVER_OUT.err"
	grep -q "region 'disk': cannot write the region back to its file" \
		"$SERVER_OUT" "$SERVER_OUT.err"
	! grep -q '"event":"stopped"' "$SERVER_OUT"
}

@test "ext4: --flush-every puts what a client wrote in the file while the server runs" {
	mount_ext4 64M
	f=$MNT/region.bin
	head -c 4M /dev/urandom >"$f"
	cp "$f" "$BATS_TEST_TMPDIR/expect"
	start_server 1 --listen "$ADDR:$PORT" --name disk --file "$f" --flush-every 500ms
	head -c 1M /dev/urandom >"$BATS_TEST_TMPDIR/new"
	rdmactl write "$ADDR:$PORT/disk" --file "$BATS_TEST_TMPDIR/new" --offset 1M >/dev/null
	dd if="$BATS_TEST_TMPDIR/new" of="$BATS_TEST_TMPDIR/expect" bs=1M seek=1 conv=notrunc status=none
	# Within a few intervals the file holds it, the server still serving.
	for ((i = 0; i < 100; i++)); do
		cmp -s "$BATS_TEST_TMPDIR/expect" "$f" && break
		sleep 0.1
	done
	echo "# in the file after $i tenths of a second" >&3
	kill -0 "$SERVER_PID"
	cmp "$BATS_TEST_TMPDIR/expect" "$f"
	# A failed periodic write-back is reported, and the server serves on.
	chattr +i "$f"
	for ((i = 0; i < 50; i++)); do
		grep -q '"event":"flush_failed"' "$SERVER_OUT" && break
		sleep 0.1
	done
	chattr -i "$f"
	jq -s -e 'any(.[]; .event == "flush_failed" and .region == "disk"
		and (.reason | test("cannot write the region back to its file")))' "$SERVER_OUT"
	kill -0 "$SERVER_PID"
	stop_server TERM
	[ "$SERVER_RC" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/expect" "$f"
}

@test "ext4: a serve that fails still writes its region back, and a failed write-back is reported with it" {
	mount_ext4 64M
	f=$MNT/region.bin
	head -c 1M /dev/urandom >"$f"
	# An "etcd" that takes the connection and never answers: --publish
	# fails once -t runs out, after the region is registered. The fifo
	# keeps nc's input open, so nc holds the connection.
	epipe=$BATS_TEST_TMPDIR/etcd.in
	eport=$(next_port)
	mkfifo "$epipe"
	busybox nc -l -p "$eport" <"$epipe" >/dev/null 2>&1 3>&- &
	ncpid=$!
	started "$ncpid"
	exec 4>"$epipe"
	for ((i = 0; i < 100; i++)); do
		ss -ltn | grep -q ":$eport " && break
		sleep 0.1
	done
	SERVER_OUT=$BATS_TEST_TMPDIR/server.out
	"$RDMACTL" -j -t 8000 register --listen "$ADDR:$PORT" --name disk --file "$f" \
		--publish "etcd://127.0.0.1:$eport/files" >"$SERVER_OUT" 2>"$SERVER_OUT.err" &
	SERVER_PID=$!
	wait_events region 1 "$SERVER_OUT" 100
	# While the publication waits: an immutable file refuses the write-back.
	chattr +i "$f"
	rc=0
	timeout 60 tail --pid="$SERVER_PID" -f /dev/null || true
	wait "$SERVER_PID" || rc=$?
	SERVER_PID=
	chattr -i "$f"
	exec 4>&-
	kill "$ncpid" 2>/dev/null || true
	cat "$SERVER_OUT" "$SERVER_OUT.err"
	[ "$rc" -eq 1 ]
	# Both are said, in order: what stopped the serve, then the data that
	# did not reach the file (the error that decides).
	tail -n 1 "$SERVER_OUT" | jq -e '(.errors | length) == 2
		and (.errors[0].message | test("^--publish: "))
		and (.errors[1].message | test("region '"'"'disk'"'"': cannot write the region back to its file"))
		and .error == .errors[1] and .error.code == "EPERM"'
	! grep -q '"event":"stopped"' "$SERVER_OUT"
}
