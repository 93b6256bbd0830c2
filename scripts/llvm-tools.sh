# Sourced by the scripts that write or read the release build's profile (pgo-profile.sh,
# pgo-check.sh): one way to find the llvm-profdata that can read it.

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
