#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (Playwright's own browser download cannot work here).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ]; then
  SUDO=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "Chromium is missing and this user cannot install it." >&2
  echo "Install Debian's package once as root:  apt-get install -y chromium" >&2
  exit 1
fi
echo "Installing Debian's Chromium for the browser tests (apt-get install -y chromium)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium fonts-liberation >/dev/null
/usr/bin/chromium --version
