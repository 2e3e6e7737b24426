#!/usr/bin/env bash
# Install the Debian package firejail (the code sandbox, as in the paper) where apt is usable; else explain.
set -u
if command -v firejail >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "installing firejail (apt-get) ..."
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq firejail >/dev/null \
    && exit 0
fi
cat >&2 <<'MSG'
WARNING: firejail is not installed and could not be installed here (needs apt-get as root).
The code reward and the LiveCodeBench-style evaluation run untrusted programs only inside firejail and will
refuse to run without it. Install it with your system's package manager, e.g.: sudo apt-get install firejail
MSG
exit 0
