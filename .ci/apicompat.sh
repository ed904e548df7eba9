#!/usr/bin/env bash
# API compatibility against the last release: the exported API of this
# module is compared with that of the newest v* tag in HEAD's history
# (apidiff, module mode, internal packages ignored). An incompatible change
# fails unless CHANGELOG.md announces it: its qualified name, in backticks,
# under a "### Breaking" heading of the Unreleased section (or of a version
# released after that tag). docs/releasing.md states the rule.
#
# Without a tag, the release is the commit that set internal/version.Version
# to its present value. APICOMPAT_BASE=<tag> compares with another tag or
# commit.
set -euo pipefail
cd "$(dirname "$0")/.."

apidiff_version=v0.0.0-20261113113407-e3970619a1a4 # golang.org/x/exp
export GOWORK=off

# A clone made without tags or with a shallow history gets them first.
if [ "$(git rev-parse --is-shallow-repository)" = "true" ]; then
  git fetch --quiet --unshallow --tags 2>/dev/null || echo "could not fetch the full history"
elif [ -z "$(git tag -l 'v*')" ] && git remote get-url origin >/dev/null 2>&1; then
  git fetch --quiet --tags origin 2>/dev/null || true
fi

base="${APICOMPAT_BASE:-}"
if [ -z "$base" ]; then
  base=$(git describe --tags --abbrev=0 --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null || true)
fi
commit=""
if [ -z "$base" ]; then
  # No tag reached this clone: the release is the commit that set
  # internal/version.Version to the value it has now.
  version=$(sed -n 's/^const Version = "\(.*\)"$/\1/p' internal/version/version.go)
  if [ -n "$version" ]; then
    commit=$(git log --format=%H -S"Version = \"$version\"" -- internal/version/version.go | tail -n 1)
  fi
  if [ -z "$commit" ]; then
    echo "no release tag (v*) in this history and no commit that set the version: nothing to compare the API with"
    exit 0
  fi
  base="v$version"
  echo "no release tag (v*) in this history: $base is the commit that set internal/version.Version to $version"
fi
[ -n "$commit" ] || commit=$(git rev-parse --verify --quiet "$base^{commit}") || { echo "apicompat: $base is not a commit"; exit 1; }
echo "comparing the exported API with $base (${commit:0:12})"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install "golang.org/x/exp/cmd/apidiff@$apidiff_version"
# apidiff, less its note for each internal package it leaves out.
apidiff() { "$tmp/apidiff" "$@" 2> >(grep -v '^Ignoring internal package' >&2); }
mod=$(go list -m)

# The API of a release never changes: it is kept per commit between runs.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vercel-sandbox-apicompat"
old="$cache/$commit-$apidiff_version.api"
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || { cache="$tmp"; old="$tmp/$commit.api"; }
if [ ! -s "$old" ]; then
  mkdir -p "$tmp/old"
  git archive "$commit" | tar -x -C "$tmp/old"
  (cd "$tmp/old" && apidiff -m -w "$tmp/old.api" "$mod")
  mv "$tmp/old.api" "$old"
fi
apidiff -m -w "$tmp/new.api" "$mod"
apidiff -m -incompatible "$old" "$tmp/new.api" >"$tmp/changes"

if [ ! -s "$tmp/changes" ]; then
  echo "no incompatible change since $base"
  exit 0
fi

# The announcements: the "### Breaking" parts of the sections above the
# base release's own (Unreleased, and versions released after it).
awk -v stop="## [${base#v}]" '
  index($0, stop) == 1 { exit }
  /^## / { breaking = 0; next }
  /^### / { breaking = ($0 ~ /^### Breaking[[:space:]]*$/); next }
  breaking { print }
' CHANGELOG.md >"$tmp/announced"

# Each change is "- ./pkg/path.Name: what" or "- package <import path>: what".
# Its qualified name is pkg/path.Name or, as Go code spells it,
# <package name>.Name; (*T).M is written T.M; a package is its path.
status=0
while IFS= read -r line; do
  # The version constant changes with every release, by design.
  case "$line" in "- ./sandbox.Version: value changed from "*)
    echo "a release: $line"; continue ;;
  esac
  subject=${line#- }
  subject=${subject%%: *}
  case "$subject" in
    "package "*)
      rel=${subject#package }; rel=${rel#"$mod"/}
      names=("$rel")
      ;;
    *)
      subject=${subject#./}
      dir=${subject%/*}; [ "$dir" = "$subject" ] && dir="" || dir="$dir/"
      last=${subject#"$dir"}
      pkg=${last%%.*}
      name=${last#*.}
      name=$(printf '%s' "$name" | tr -d '()*')
      names=("$dir$pkg.$name" "$pkg.$name")
      ;;
  esac
  found=""
  for n in "${names[@]}"; do
    if grep -qF -- "\`$n\`" "$tmp/announced"; then found=$n; break; fi
  done
  if [ -n "$found" ]; then
    echo "announced: $line"
  else
    echo "NOT ANNOUNCED: $line"
    echo "    (CHANGELOG.md, Unreleased, under ### Breaking: \`${names[-1]}\`)"
    status=1
  fi
done <"$tmp/changes"

if [ "$status" -ne 0 ]; then
  echo "incompatible changes since $base that CHANGELOG.md does not announce (see docs/releasing.md)"
fi
exit "$status"
