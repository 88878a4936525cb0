#!/usr/bin/env sh
# Installs what building strata's embedded model (llama.cpp, through the
# llama-cpp-sys-2 crate) needs beyond a Rust toolchain and a C/C++ compiler:
# cmake, and libclang + clang for bindgen.
#
# Idempotent: tools already present are left alone. As root (or with
# passwordless sudo) on Debian/Ubuntu it uses apt-get; otherwise it installs
# cmake with `pip install --user` and says what is still missing.
# Exit status: 0 when everything needed is present afterwards, 1 otherwise.
set -u

say() { printf '%s\n' "install-build-deps: $*"; }

have_cmake() { command -v cmake >/dev/null 2>&1; }
have_cxx() { command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || command -v clang++ >/dev/null 2>&1; }

# bindgen loads libclang at build time; LIBCLANG_PATH overrides the search.
have_libclang() {
    if [ -n "${LIBCLANG_PATH:-}" ] && ls "$LIBCLANG_PATH"/libclang*.so* >/dev/null 2>&1; then
        return 0
    fi
    if command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so'; then
        return 0
    fi
    for dir in /usr/lib/llvm-*/lib /usr/lib64 /usr/lib /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu \
        /opt/homebrew/opt/llvm/lib /usr/local/opt/llvm/lib /Library/Developer/CommandLineTools/usr/lib; do
        if ls "$dir"/libclang.so* "$dir"/libclang-*.so* "$dir"/libclang.dylib >/dev/null 2>&1; then
            return 0
        fi
    done
    return 1
}

missing_packages() {
    pkgs=""
    have_cmake || pkgs="$pkgs cmake"
    have_libclang || pkgs="$pkgs libclang-dev"
    command -v clang >/dev/null 2>&1 || pkgs="$pkgs clang"
    have_cxx || pkgs="$pkgs g++"
    printf '%s' "$pkgs"
}

pkgs=$(missing_packages)
if [ -z "$pkgs" ]; then
    say "cmake, libclang and a C++ compiler are present"
else
    say "missing:$pkgs"
    if command -v apt-get >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ]; then
            SUDO=""
        elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO="sudo -n"
        else
            SUDO="none"
        fi
        if [ "$SUDO" != none ]; then
            say "installing$pkgs with apt-get"
            # shellcheck disable=SC2086
            $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null \
                || say "apt-get failed; see its messages above"
        fi
    elif command -v brew >/dev/null 2>&1; then
        have_cmake || brew install cmake
        have_libclang || brew install llvm
    fi

    if ! have_cmake && command -v python3 >/dev/null 2>&1; then
        say "installing cmake with pip (user site)"
        python3 -m pip install --user --quiet cmake || say "pip could not install cmake"
        user_bin=$(python3 -c 'import site, os; print(os.path.join(site.USER_BASE, "bin"))' 2>/dev/null)
        if [ -n "$user_bin" ] && [ -x "$user_bin/cmake" ] && ! have_cmake; then
            say "cmake is in $user_bin; add it to PATH: export PATH=\"$user_bin:\$PATH\""
            PATH="$user_bin:$PATH"
        fi
    fi
fi

status=0
if ! have_cmake; then
    say "cmake is still missing: install it with your package manager or \`python3 -m pip install --user cmake\`"
    status=1
fi
if ! have_libclang; then
    say "libclang is still missing: install libclang-dev (Debian/Ubuntu), clang-devel (Fedora) or llvm (Homebrew) as an administrator, or set LIBCLANG_PATH to the directory holding libclang.so"
    status=1
fi
if ! have_cxx; then
    say "no C++ compiler found: install g++ or clang++"
    status=1
fi

# .cargo/config.toml builds for x86-64-v3 (AVX2), which llama.cpp needs to be fast.
if [ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ] && ! grep -qw avx2 /proc/cpuinfo; then
    say "this CPU has no AVX2: build with RUSTFLAGS=\"\" (slower embedded model) or the binary will not start"
fi

exit $status
