#!/usr/bin/env bash
# Install the code sandbox's system packages where apt is usable; else explain. firejail runs untrusted code
# (as in the paper); setpriv (util-linux) drops root to an unprivileged uid inside it; python3-sortedcontainers
# is imported by some LeetCode reference solutions run by the system Python in the sandbox.
set -u
PKGS="firejail util-linux python3-sortedcontainers"
have() { command -v firejail >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 \
  && /usr/bin/python3 -c "import sortedcontainers" >/dev/null 2>&1; }
if have; then exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "installing $PKGS (apt-get) ..."
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PKGS >/dev/null \
    && exit 0
fi
cat >&2 <<'MSG'
WARNING: firejail is not installed and could not be installed here (needs apt-get as root).
The code reward and the LiveCodeBench-style evaluation run untrusted programs only inside firejail and will
refuse to run without it. Install it with your system's package manager, e.g.: sudo apt-get install firejail
MSG
exit 0
