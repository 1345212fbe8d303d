# Shared by the scripts in lessons/tools, demo/ and the lesson checkpoints. Source it; do not run it.
# It defines: ROOT, BUILD, say, die, need_build.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# BUILD may be overridden (e.g. BUILD=/tmp/b lessons/tools/setup) to keep several builds side by side.
BUILD=${BUILD:-$ROOT/build}

say() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# need_build: install what is missing and build everything (quietly when nothing changed).
need_build() { "$ROOT/lessons/tools/setup" >&2 || die "setup failed (see the messages above)"; }
