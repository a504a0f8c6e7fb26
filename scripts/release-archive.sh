#!/usr/bin/env bash
# Packs a release archive: dfx-perf-<version>-<target>.tar.gz holding bin/ (dfx-perf,
# dfx-perf-sim, dfx-perf-guard), perf-configs/, deploy/, baselines/ and README.md, plus
# its checksum file <archive>.sha256 (`sha256sum -c` format). Unpacked, it runs as
# `bin/dfx-perf run ARGS` from its folder, or `dfx-perf run --root <folder> ARGS`.
#
# Usage: scripts/release-archive.sh TARGET [BIN_DIR] [OUT_DIR]
#   TARGET   x86_64-unknown-linux-gnu or aarch64-unknown-linux-gnu
#   BIN_DIR  the built executables (default: target/TARGET/release when it exists, else
#            target/release; $CARGO_TARGET_DIR replaces target/)
#   OUT_DIR  where the archive and checksum go (default: target/dist)
# The executables must be ELF files for TARGET's machine; the archive is reproducible
# (sorted names, owner 0, mtime SOURCE_DATE_EPOCH, else the last commit's time).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bins=(dfx-perf dfx-perf-sim dfx-perf-guard)
data=(perf-configs deploy baselines README.md)

die() { echo "release-archive.sh: $*" >&2; exit 2; }

[ $# -ge 1 ] && [ $# -le 3 ] || die "usage: scripts/release-archive.sh TARGET [BIN_DIR] [OUT_DIR]"
target="$1"
case "${target}" in
    x86_64-unknown-linux-gnu) machine=62 ;;   # ELF e_machine EM_X86_64
    aarch64-unknown-linux-gnu) machine=183 ;; # EM_AARCH64
    *) die "unknown TARGET '${target}' (accepted: x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu)" ;;
esac

target_dir="${CARGO_TARGET_DIR:-${repo}/target}"
if [ $# -ge 2 ]; then
    bin_dir="$2"
elif [ -d "${target_dir}/${target}/release" ]; then
    bin_dir="${target_dir}/${target}/release"
else
    bin_dir="${target_dir}/release"
fi
out_dir="${3:-${target_dir}/dist}"

version="$(awk -F'"' '/^\[workspace\.package\]/ { p = 1; next } /^\[/ { p = 0 }
                     p && /^version *=/ { print $2; exit }' "${repo}/Cargo.toml")"
[ -n "${version}" ] || die "no version in [workspace.package] of ${repo}/Cargo.toml"

# The ELF header's e_machine (bytes 18-19, little endian) names the architecture.
elf_machine() {
    [ "$(head -c 4 "$1" | od -An -c | tr -d ' \n')" = '177ELF' ] || { echo none; return; }
    od -An -tu2 -j18 -N2 "$1" | tr -d ' \n'
}
for b in "${bins[@]}"; do
    exe="${bin_dir}/${b}"
    [ -f "${exe}" ] && [ -x "${exe}" ] || die "missing executable ${exe} (build it: cargo build --release --target ${target})"
    got="$(elf_machine "${exe}")"
    [ "${got}" = "${machine}" ] || die "${exe} is not an ELF executable for ${target} (e_machine ${got}, expected ${machine})"
done
for d in "${data[@]}"; do
    [ -e "${repo}/${d}" ] || die "missing ${repo}/${d}"
done

name="dfx-perf-${version}-${target}"
stage="$(mktemp -d)"
trap 'rm -rf "${stage}"' EXIT
mkdir -p "${stage}/${name}/bin" "${out_dir}"
for b in "${bins[@]}"; do
    install -m 0755 "${bin_dir}/${b}" "${stage}/${name}/bin/${b}"
done
for d in "${data[@]}"; do
    cp -R "${repo}/${d}" "${stage}/${name}/"
done

epoch="${SOURCE_DATE_EPOCH:-$(git -C "${repo}" log -1 --format=%ct 2>/dev/null || echo 0)}"
archive="${name}.tar.gz"
# Written beside its final name, then renamed: a reader never sees half an archive.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${epoch}" \
    -C "${stage}" -cf - "${name}" | gzip -n >"${out_dir}/.${archive}.part"
mv -f "${out_dir}/.${archive}.part" "${out_dir}/${archive}"
(cd "${out_dir}" && sha256sum "${archive}" >".${archive}.sha256.part" \
    && mv -f ".${archive}.sha256.part" "${archive}.sha256")
echo "${out_dir}/${archive}"
