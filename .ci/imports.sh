#!/usr/bin/env bash
# Import rules: the arrows that must never exist and that the compiler does
# not already forbid. (The isolation runtime and the executors' helpers live
# under sandbox/local/internal, so only the local backend can import them; the
# examples are a module of their own, so the library cannot import them.)
#   - The library (every public package but the local backend and the test
#     kits) never links the local backend or a test kit.
#   - The test kit and the local server never link the isolation runtime:
#     only programs that ask for isolation (sandbox/local/isolated) do.
#   - Nothing under internal/ imports a public package of this module, but
#     for the exceptions docs/architecture.md names (allowed below).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(GOWORK=off go list -m) # the library, not the examples' module
fail=0

deps() { go list -deps "$1" 2>/dev/null | grep "^$mod" || true; }

for pkg in $(go list ./... | grep -v -e '/sandbox/local' -e '/sandboxtest' -e '/authtest' -e '/internal/'); do
  bad=$(deps "$pkg" | grep -E "^$mod/(sandbox/local|sandbox/sandboxtest|auth/authtest)(/|$)" || true)
  if [ -n "$bad" ]; then
    echo "library package $pkg links what only tests and local programs may:"; echo "$bad" | sed 's/^/    /'
    fail=1
  fi
done

for pkg in $(go list ./sandbox/sandboxtest ./sandbox/local ./sandbox/local/hostexec 2>/dev/null); do
  bad=$(deps "$pkg" | grep -E "^$mod/sandbox/local/internal/isolate(/|$)" || true)
  if [ -n "$bad" ]; then
    echo "$pkg links the isolation runtime; only sandbox/local/isolated may"; fail=1
  fi
done

# internal/httpcore attaches credentials, so it knows auth.Provider;
# internal/apierr makes the error types of sandbox/sandboxerr, a leaf.
allowed=" $mod/internal/httpcore>$mod/auth $mod/internal/apierr>$mod/sandbox/sandboxerr "
while read -r pkg imports; do
  for imp in $imports; do
    case "$allowed" in *" $pkg>$imp "*) continue ;; esac
    case "$imp" in
      "$mod"/internal/*) ;;
      "$mod"/*) echo "internal package $pkg imports public package $imp"; fail=1 ;;
    esac
  done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./internal/...)

if [ "$fail" -ne 0 ]; then exit 1; fi
echo "import rules hold"
