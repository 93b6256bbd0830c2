# Sourced by the scripts that use LLVM's tools on the release build (pgo-profile.sh,
# pgo-check.sh, bolt.sh): one way to find each.

# Prints the path of rustc's own llvm-profdata, adding the rustup component llvm-tools
# when it is missing. The profile is in the format of rustc's LLVM, which another
# llvm-profdata cannot read (Debian's is LLVM 14; rustc 1.95's is LLVM 22).
llvm_profdata() {
    local host path
    host=$(rustc -vV | sed -n 's/^host: //p')
    path="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
    if [[ ! -x $path ]]; then
        rustup component add llvm-tools >&2 || return 1
    fi
    echo "$path"
}

# Prints the directory of an llvm-bolt and its merge-fdata (LLVM's post-link optimizer,
# scripts/bolt.sh), the newest LLVM's first, adding Debian's package for rustc's LLVM
# (bolt-22 for rustc 1.95) with apt-get when none is there and this is root.
llvm_bolt_dir() {
    local dir llvm
    for dir in "$(dirname "$(command -v llvm-bolt 2>/dev/null || echo /none/x)")" \
        $(ls -d /usr/lib/llvm-*/bin 2>/dev/null | sort -t- -k2 -n -r); do
        if [[ -x $dir/llvm-bolt && -x $dir/merge-fdata ]]; then
            echo "$dir"
            return 0
        fi
    done
    llvm=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
    [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null || return 1
    echo "installing bolt-$llvm (llvm-bolt)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "bolt-$llvm"; } >&2 || return 1
    [[ -x /usr/lib/llvm-$llvm/bin/llvm-bolt ]] || return 1
    echo "/usr/lib/llvm-$llvm/bin"
}
