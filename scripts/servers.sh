# Sourced by the scripts that start servers of their own (redis-tcl-suite.sh,
# serve-vs-redis.sh): one way to pick a free port, wait for a server and stop it, so that
# each script stops every server it started.

server_pid=

# Stops the server started last, if it still runs.
stop_server() {
    [[ -n $server_pid ]] || return 0
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

# A free port: the kernel picks one for a socket closed at once.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until port $1 accepts connections; otherwise says so, with the log $2 of the
# server named $3, and exits.
wait_until_listening() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$3 did not listen on port $1:" >&2
    cat "$2" >&2
    exit 1
}
