#!/usr/bin/env bash
# Idempotent set-up for building and testing parity on a fresh Debian 12 machine.
#
#   . ci/setup.sh        # sets up, then exports PATH and EERIE_PYTHON into this shell
#   bash ci/setup.sh     # sets up, then prints the two export lines (eval "$(bash ci/setup.sh)")
#
# What it does, each step only when needed:
#   1. apt-get installs libclang-dev (bindgen in eerie-sys), chromium (the HTML report's
#      browser test), python3-venv, a C/C++ toolchain, and libvulkan-dev with
#      mesa-vulkan-drivers (IREE's Vulkan driver; lavapipe runs it on the CPU) if any is
#      missing (apt-get update first, then).
#   2. creates <repo>/.venv and pip-installs ci/requirements.txt into it; a stamp file
#      holding the sha256 of the requirements and the interpreter version skips pip
#      when nothing changed.
#   3. ci/cuda-deps.sh unpacks cuda.h and libdevice.10.bc from the NVIDIA wheels into
#      <repo>/.cuda-deps (IREE's CUDA driver is built from them; .cargo/config.toml).
#   4. PATH=<repo>/.venv/bin:$PATH (cmake >= 3.26 for eerie-sys; Debian ships 3.25) and
#      EERIE_PYTHON=<repo>/.venv/bin/python (eerie finds libIREECompiler.so through it).
#
# Written to be sourced (from bash, or POSIX sh/dash when the current directory is in
# the checkout): no `exit`, no `set -e` leaking into the caller's shell, no bashisms;
# all work happens in a function whose failure is reported with `return`.

_parity_setup_main() {
    local repo="$1"
    local venv="$repo/.venv"
    local req="$repo/ci/requirements.txt"
    local stamp="$venv/.parity-requirements.stamp"

    if [ ! -f "$req" ]; then
        echo "ci/setup.sh: $req not found; run from a parity checkout" >&2
        return 1
    fi

    # --- 1. system packages -------------------------------------------------------
    local missing=""
    local pkg
    # chromium: tests/html_report.rs checks the HTML report in a real headless browser.
    for pkg in libclang-dev python3-venv build-essential chromium libvulkan-dev mesa-vulkan-drivers; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
            missing="$missing $pkg"
        fi
    done
    if [ -n "$missing" ]; then
        local sudo=""
        if [ "$(id -u)" -ne 0 ]; then
            if command -v sudo >/dev/null 2>&1; then
                sudo="sudo"
            else
                echo "ci/setup.sh: need root (or sudo) to install:$missing" >&2
                return 1
            fi
        fi
        echo "ci/setup.sh: installing$missing" >&2
        $sudo apt-get update >&2 || return 1
        # $missing is a space-separated list of package names: split on purpose.
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y $missing >&2 || return 1
    fi

    # --- 2. project venv ----------------------------------------------------------
    local python="${PARITY_SETUP_PYTHON:-python3}"
    if [ ! -x "$venv/bin/python" ]; then
        echo "ci/setup.sh: creating $venv" >&2
        "$python" -m venv "$venv" >&2 || return 1
    fi
    local want
    want="$(sha256sum "$req" | cut -d' ' -f1) $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        echo "ci/setup.sh: $venv is up to date with ci/requirements.txt" >&2
    else
        echo "ci/setup.sh: installing ci/requirements.txt into $venv" >&2
        "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2 || return 1
        # Written only after pip succeeded, so a failed install is retried next time.
        printf '%s\n' "$want" >"$stamp" || return 1
    fi

    # --- 3. CUDA headers and libdevice for IREE's CUDA driver ---------------------------
    bash "$repo/ci/cuda-deps.sh" "$venv/bin/python" || return 1

    if ! command -v cargo >/dev/null 2>&1; then
        echo "ci/setup.sh: warning: cargo not found; install Rust (rustup) to build parity" >&2
    fi
    return 0
}

# Prints "sourced" or "executed".
_parity_setup_mode() {
    if [ -n "${BASH_SOURCE:-}" ]; then
        if [ "$BASH_SOURCE" != "$0" ]; then echo sourced; else echo executed; fi
    else
        case "$(basename -- "$0")" in
            setup.sh) echo executed ;;
            *) echo sourced ;;
        esac
    fi
}

_parity_setup_repo() {
    # bash names this file in BASH_SOURCE (sourced or executed); an executed POSIX
    # shell has it in $0; a sourcing POSIX shell cannot know it, so use the git
    # checkout containing the current directory.
    local script=""
    if [ -n "${BASH_SOURCE:-}" ]; then
        script="$BASH_SOURCE"
    elif [ "$(_parity_setup_mode)" = executed ]; then
        script="$0"
    fi
    if [ -n "$script" ]; then
        (cd "$(dirname -- "$script")/.." && pwd)
    else
        git rev-parse --show-toplevel
    fi
}

if _parity_setup_repo_dir="$(_parity_setup_repo)" && _parity_setup_main "$_parity_setup_repo_dir"; then
    if [ "$(_parity_setup_mode)" = sourced ]; then
        case ":$PATH:" in
            *":$_parity_setup_repo_dir/.venv/bin:"*) ;;
            *) export PATH="$_parity_setup_repo_dir/.venv/bin:$PATH" ;;
        esac
        export EERIE_PYTHON="$_parity_setup_repo_dir/.venv/bin/python"
        echo "ci/setup.sh: exported PATH (+.venv/bin) and EERIE_PYTHON=$EERIE_PYTHON" >&2
    else
        echo "export PATH=\"$_parity_setup_repo_dir/.venv/bin:\$PATH\""
        echo "export EERIE_PYTHON=\"$_parity_setup_repo_dir/.venv/bin/python\""
    fi
    _parity_setup_status=0
else
    echo "ci/setup.sh: set-up failed" >&2
    _parity_setup_status=1
fi
unset -f _parity_setup_main _parity_setup_repo _parity_setup_mode
unset _parity_setup_repo_dir
# `return` works when sourced; when executed it fails and we fall through to exit.
return "$_parity_setup_status" 2>/dev/null || exit "$_parity_setup_status"
