#!/usr/bin/env bash
# Fails if the repository names a path outside itself: the project must build, test and
# reproduce its figures from a fresh clone, so every input it reads (traces, designs, data)
# lives in the repository and is named by a repository path (data/..., docs/...).
#
# Scanned: src/ tests/ bench/ docs/ fuzz/ scripts/ tools/ cmake/ data/*.md, every CMakeLists.txt,
# Makefile, CMakePresets.json and README.md (text files only). Not scanned: this script and the
# self-test fixture (tests/repo_paths_fixture/), which spell the patterns out.
#
# Forbidden:
#   /work/...             an absolute path of one machine
#   ../shared, shared/traces, shared/DESIGN   files beside the checkout, which a clone lacks
#   /home/..., /root/...  a user's home directory
#   ~/... and $HOME/...   home-dir paths, except the cache the project's own scripts fill
#                         (${HEARSAY_CACHE:-~/.cache/hearsay}: the llama.cpp build and the npm
#                         client). A cache is written before it is read, never a data source.
# Usage: check-repo-paths.sh ROOT
set -uo pipefail
root=${1:?usage: check-repo-paths.sh ROOT}
cd "$root" || exit 2

targets=()
for d in src tests bench docs fuzz scripts tools cmake; do [ -d "$d" ] && targets+=("$d"); done
for f in Makefile CMakePresets.json README.md data/*.md; do [ -f "$f" ] && targets+=("$f"); done
while IFS= read -r f; do targets+=("$f"); done < <(find . -maxdepth 1 -name CMakeLists.txt)
if [ ${#targets[@]} -eq 0 ]; then
  echo "check-repo-paths: nothing to scan under $root" >&2
  exit 2
fi

forbidden='(^|[^A-Za-z0-9_.:/-])/work/|\.\./shared|shared/traces|shared/DESIGN|(^|[^A-Za-z0-9_.-])/(home|root)/|(~|\$HOME|\$\{HOME\})/'
allowed_home='(~|\$HOME|\$\{HOME\})/\.cache/hearsay'
hits=$(grep -rnIE "$forbidden" "${targets[@]}" \
  --exclude=check-repo-paths.sh --exclude-dir=repo_paths_fixture --exclude=package-lock.json |
  while IFS= read -r hit; do
    # A line whose every home-dir path is the cache is fine; any other hit stays.
    stripped=$(sed -E "s#^[^:]*:[0-9]+:##; s#${allowed_home}##g" <<<"$hit")
    grep -qE "$forbidden" <<<"$stripped" && printf '%s\n' "$hit"
  done)
if [ -n "$hits" ]; then
  echo "check-repo-paths: paths outside the repository (use a repository path, e.g. data/...):"
  echo "$hits"
  exit 1
fi
echo "check-repo-paths: ${#targets[@]} folders and files name no path outside the repository"
