# Sourced by the scripts that tune the release build to what users run (pgo-profile.sh,
# the compiler's profile; bolt.sh, BOLT's layout): one list of those runs for both.

# what_users_run RUN REPORT_DIR [REPORT_OPTION...]: calls the function RUN with the
# arguments of each run: Redlock-5 and single node as `bench` runs them, the ping-pong on
# both benches, and the report of every scenario into REPORT_DIR, with REPORT_OPTIONs
# (fewer seeds where the counts are made at every build).
what_users_run() {
    local run=$1 report_dir=$2
    shift 2
    "$run" run scenarios/bench/redlock-5.json --seeds 20 --jobs 1
    "$run" run scenarios/bench/single-node.json --seeds 60 --jobs 1
    "$run" bench --pingpong 200000 scenarios/bench/redlock-5.json scenarios/bench/single-node.json --seeds 2
    "$run" report scenarios/ --out "$report_dir" --no-cache "$@"
}
